"""Assistants: create, search, count, read, change and delete them; their graph's
drawing and JSON schemas, and its subgraphs' schemas. `assistant_id` in a path may also
be a graph id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse
from pydantic import Field

from app.api.deps import Assistants, CurrentUser
from app.middleware import JsonOnlyRoute
from app.schemas.assistants import (
    Assistant,
    AssistantCreate,
    AssistantFilter,
    AssistantLatest,
    AssistantPatch,
    AssistantSearch,
    AssistantVersion,
    AssistantVersionSearch,
    GraphDrawing,
    GraphSchemas,
    SubgraphSchemas,
)
from app.schemas.common import ERROR_RESPONSES, page

router = APIRouter(tags=["Assistants"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)


@router.post("/assistants")
async def create_assistant(
    body: AssistantCreate, assistants: Assistants, user: CurrentUser
) -> Assistant:
    """Create an assistant on a graph served here (404 for another graph)."""
    return Assistant.of(await assistants.create(body, owner=user.user_id))


@router.post("/assistants/search", response_model=list[Assistant])
async def search_assistants(
    body: AssistantSearch, assistants: Assistants, user: CurrentUser
) -> JSONResponse:
    """A page of assistants, newest first unless sorted otherwise; X-Pagination-Total
    gives how many match, X-Pagination-Next the offset of the next page."""
    rows, total = await assistants.search(body, owner=user.user_id)
    return page(
        [Assistant.of(row) for row in rows], total=total, offset=body.offset, select=body.select
    )


@router.post("/assistants/count")
async def count_assistants(body: AssistantFilter, assistants: Assistants, user: CurrentUser) -> int:
    """How many assistants match the filter."""
    return await assistants.count(body, owner=user.user_id)


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, assistants: Assistants, user: CurrentUser) -> Assistant:
    """An assistant by id, or a graph's system assistant by the graph id."""
    return Assistant.of(await assistants.resolve(assistant_id, owner=user.user_id))


@router.patch("/assistants/{assistant_id}")
async def patch_assistant(
    assistant_id: str, body: AssistantPatch, assistants: Assistants, user: CurrentUser
) -> Assistant:
    """Change an assistant: its version goes up by one. A graph's system assistant is
    shared by every user and cannot be changed (409)."""
    return Assistant.of(await assistants.update(assistant_id, body, owner=user.user_id))


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete_assistant(
    assistant_id: str, assistants: Assistants, user: CurrentUser, delete_threads: bool = False
) -> Response:
    """Delete an assistant, and with `delete_threads` the caller's threads whose metadata
    names it. A graph's system assistant cannot be deleted (409)."""
    await assistants.delete(assistant_id, delete_threads=delete_threads, owner=user.user_id)
    return Response(status_code=204)


@router.get("/assistants/{assistant_id}/graph", response_model_exclude_none=True)
async def get_assistant_graph(
    assistant_id: str,
    assistants: Assistants,
    user: CurrentUser,
    xray: Annotated[
        bool | Annotated[int, Field(gt=0)],
        Query(description="Draw subgraphs inside their nodes: this many levels, or all."),
    ] = False,
) -> GraphDrawing:
    """The graph's nodes and edges; with `xray`, a subgraph's nodes and edges in place of
    its node."""
    assistant = await assistants.resolve(assistant_id, owner=user.user_id)
    return assistants.drawing(assistant, xray)


@router.get("/assistants/{assistant_id}/subgraphs")
async def get_assistant_subgraphs(
    assistant_id: str, assistants: Assistants, user: CurrentUser, recurse: bool = False
) -> dict[str, SubgraphSchemas]:
    """The schemas of the graphs the assistant's graph runs as nodes, by namespace (node
    names joined by `|`); with `recurse`, those inside them too."""
    assistant = await assistants.resolve(assistant_id, owner=user.user_id)
    return assistants.subgraphs(assistant, None, recurse)


@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
async def get_assistant_subgraph(
    assistant_id: str,
    namespace: str,
    assistants: Assistants,
    user: CurrentUser,
    recurse: bool = False,
) -> dict[str, SubgraphSchemas]:
    """The schemas of the subgraph at `namespace`, and with `recurse` those inside it;
    `{}` when no subgraph is there."""
    assistant = await assistants.resolve(assistant_id, owner=user.user_id)
    return assistants.subgraphs(assistant, namespace, recurse)


@router.get("/assistants/{assistant_id}/schemas")
async def get_assistant_schemas(
    assistant_id: str, assistants: Assistants, user: CurrentUser
) -> GraphSchemas:
    """JSON schemas of the graph's input, output, state and context."""
    assistant = await assistants.resolve(assistant_id, owner=user.user_id)
    return assistants.schemas(assistant)


@router.post("/assistants/{assistant_id}/versions", response_model=list[AssistantVersion])
async def list_assistant_versions(
    assistant_id: str, body: AssistantVersionSearch, assistants: Assistants, user: CurrentUser
) -> JSONResponse:
    """A page of the assistant's versions, highest first (`metadata` keeps those whose
    metadata contains it); X-Pagination-Total gives how many match."""
    rows, total = await assistants.versions(assistant_id, body, owner=user.user_id)
    return page([AssistantVersion.of(row) for row in rows], total=total, offset=body.offset)


@router.post("/assistants/{assistant_id}/latest")
async def set_latest_assistant_version(
    assistant_id: str, body: AssistantLatest, assistants: Assistants, user: CurrentUser
) -> Assistant:
    """Put the assistant at one of its versions, every field as it was then (404 for a
    version it never had). A graph's system assistant stays at its one version (409)."""
    return Assistant.of(await assistants.set_latest(assistant_id, body.version, owner=user.user_id))
