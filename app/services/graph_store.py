"""The server's store as the graphs see it: `runtime.store`, `get_store()` and
`InjectedStore` in a run are a `BaseStore` over the same rows `/store` serves, scoped to
the run's user, so what a graph remembers shows in `/store` to that user only.

Each operation is one call of the store service, with its checks: a namespace or value
the HTTP API would refuse fails the node with the same reason. There is no semantic
index: a search's `query` does not change its results (as in LangGraph stores without
one). Items put with a `ttl` expire as those put through `/store` do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from app.errors import NotFound
from app.schemas.store import ItemPut, ItemSearch, NamespaceSearch
from app.services.store import labels
from engine.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

if TYPE_CHECKING:
    from app.db.models import StoreItemRow
    from app.services.store import StoreService

ItemT = TypeVar("ItemT", bound=Item)


class ServerStore(BaseStore):
    """`BaseStore` over the server's store for one user; made per run, in its event loop."""

    supports_ttl = True

    def __init__(self, store: StoreService, owner: str) -> None:
        self.store = store
        self.owner = owner
        self.loop = asyncio.get_running_loop()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await self._apply(op) for op in ops]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """For sync nodes, which run in worker threads: the operations run on the loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            raise RuntimeError(
                "The server's store cannot block its own event loop: in async code, call "
                "its async methods (aget, aput, asearch, ...)."
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), self.loop).result()

    async def _apply(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            try:
                row = await self.store.get(
                    list(op.namespace), op.key, refresh_ttl=op.refresh_ttl, owner=self.owner
                )
            except NotFound:
                return None
            return _item(row, Item)
        if isinstance(op, PutOp):
            if op.value is None:
                await self.store.delete_item(list(op.namespace), op.key, owner=self.owner)
            else:
                body = ItemPut(
                    namespace=list(op.namespace), key=op.key, value=dict(op.value), ttl=op.ttl
                )
                await self.store.put(body, owner=self.owner)
            return None
        if isinstance(op, SearchOp):
            search = ItemSearch(
                namespace_prefix=list(op.namespace_prefix),
                filter=op.filter,
                limit=op.limit,
                offset=op.offset,
                query=op.query,
                refresh_ttl=op.refresh_ttl,
            )
            rows = await self.store.search(search, owner=self.owner)
            return [_item(row, SearchItem) for row in rows]
        return await self._namespaces(op)

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        paths = {c.match_type: list(c.path) for c in op.match_conditions or ()}
        body = NamespaceSearch(
            prefix=paths.get("prefix"),
            suffix=paths.get("suffix"),
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )
        found = await self.store.namespaces(body, owner=self.owner)
        return [tuple(namespace) for namespace in found]


def _item(row: StoreItemRow, kind: type[ItemT]) -> ItemT:
    return kind(
        value=row.value,
        key=row.key,
        namespace=tuple(labels(row)),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
