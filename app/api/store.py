"""The store: put, get, delete and search JSON documents by namespace and key; list
namespaces. Each user has their own namespaces."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from app.api.deps import CurrentUser, Store
from app.limits import MAX_KEY_LENGTH
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES
from app.schemas.store import (
    Item,
    ItemKey,
    ItemPut,
    ItemSearch,
    Namespaces,
    NamespaceSearch,
    SearchItem,
    SearchItems,
)
from app.services.store import labels as labels_of

router = APIRouter(tags=["Store"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)


@router.put("/store/items", status_code=204)
async def put_item(body: ItemPut, store: Store, user: CurrentUser) -> Response:
    """Create or replace an item."""
    await store.put(body, owner=user.user_id)
    return Response(status_code=204)


@router.get("/store/items")
async def get_item(
    store: Store,
    user: CurrentUser,
    namespace: Annotated[
        list[str], Query(description="Dotted (`users.u1`) or one label per repeated key.")
    ],
    key: Annotated[str, Query(max_length=MAX_KEY_LENGTH)],
    refresh_ttl: Annotated[
        bool, Query(description="An item with a `ttl` lives that long again from now.")
    ] = True,
) -> Item | None:
    """One item, or `null` when there is none (as LangGraph's server answers, so the
    SDK's `get_item` returns None); the SDK names the namespace dotted, other clients
    may repeat the key."""
    labels = namespace[0].split(".") if len(namespace) == 1 else namespace
    found = await store.find(labels, key, refresh_ttl=refresh_ttl, owner=user.user_id)
    return None if found is None else Item.of(found, labels)


@router.delete("/store/items", status_code=204)
async def delete_item(body: ItemKey, store: Store, user: CurrentUser) -> Response:
    """Delete an item (204 whether or not it existed; 422 for a namespace an item
    cannot have, such as no label)."""
    await store.delete_item(body.namespace, body.key, owner=user.user_id)
    return Response(status_code=204)


@router.post("/store/items/search")
async def search_items(body: ItemSearch, store: Store, user: CurrentUser) -> SearchItems:
    """Items under a namespace prefix whose value passes `filter` (values it contains,
    and `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` on fields), last updated first."""
    found = await store.search(body, owner=user.user_id)
    return SearchItems(items=[SearchItem.of(row, labels_of(row)) for row in found])


@router.post("/store/namespaces")
async def list_namespaces(body: NamespaceSearch, store: Store, user: CurrentUser) -> Namespaces:
    """Distinct namespaces matching `prefix` and `suffix`, cut to `max_depth`, sorted."""
    return Namespaces(namespaces=await store.namespaces(body, owner=user.user_id))
