"""Threads: create, search, count, read, change, delete, copy and prune them."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import JSONResponse

from app.api.deps import CurrentUser, State, Threads
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES, page
from app.schemas.threads import (
    Pruned,
    Thread,
    ThreadCopy,
    ThreadCreate,
    ThreadFilter,
    ThreadPatch,
    ThreadPrune,
    ThreadSearch,
)

router = APIRouter(tags=["Threads"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)


@router.post("/threads")
async def create_thread(
    body: ThreadCreate, threads: Threads, state: State, user: CurrentUser
) -> Thread:
    """Create a thread (409, or your existing one with `if_exists=do_nothing`, if the id
    is taken), with the state its `supersteps` write. Metadata `graph_id` lets its state
    be updated before any run."""
    return await threads.shown(await state.create_thread(body, owner=user.user_id))


@router.post("/threads/search", response_model=list[Thread])
async def search_threads(body: ThreadSearch, threads: Threads, user: CurrentUser) -> JSONResponse:
    """A page of the caller's threads, newest first unless sorted otherwise;
    X-Pagination-Total gives how many match, X-Pagination-Next the offset of the next page."""
    found, total = await threads.search(body, owner=user.user_id)
    select = body.select
    if body.extract:
        found = [thread.with_extracted(body.extract) for thread in found]
        select = select and [*select, "extracted"]
    return page(found, total=total, offset=body.offset, select=select)


@router.post("/threads/count")
async def count_threads(body: ThreadFilter, threads: Threads, user: CurrentUser) -> int:
    """How many of the caller's threads match the filter."""
    return await threads.count(body, owner=user.user_id)


@router.post("/threads/prune")
async def prune_threads(body: ThreadPrune, threads: Threads, user: CurrentUser) -> Pruned:
    """Delete threads, or keep only their latest turn; unknown ids are skipped."""
    return Pruned(pruned_count=await threads.prune(body, owner=user.user_id))


@router.get("/threads/{thread_id}")
async def get_thread(
    thread_id: str,
    threads: Threads,
    user: CurrentUser,
    include: Annotated[
        list[Literal["ttl"]] | None,
        Query(description="`ttl`: the thread's time to live too (null when it has none)."),
    ] = None,
) -> Thread:
    """A thread with its status, current values and open interrupts."""
    row = await threads.get(thread_id, owner=user.user_id)
    thread = await threads.shown(row)
    if include:
        thread.ttl = await threads.ttl_of(row)
    return thread


@router.patch(
    "/threads/{thread_id}",
    response_model=Thread,
    responses={204: {"description": "With `Prefer: return=minimal`."}},
)
async def patch_thread(
    thread_id: str,
    body: ThreadPatch,
    threads: Threads,
    user: CurrentUser,
    prefer: Annotated[str | None, Header()] = None,
) -> Thread | Response:
    """Merge metadata into the thread's."""
    thread = await threads.update(thread_id, body.metadata, ttl=body.ttl, owner=user.user_id)
    if prefer == "return=minimal":
        return Response(status_code=204)
    return await threads.shown(thread)


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, threads: Threads, user: CurrentUser) -> Response:
    """Cancel the thread's runs and delete it with its runs and checkpoints."""
    await threads.delete(thread_id, owner=user.user_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/copy")
async def copy_thread(
    thread_id: str, threads: Threads, user: CurrentUser, body: ThreadCopy | None = None
) -> Thread:
    """A new thread with the same metadata and every checkpoint of this one. The body,
    which the SDK leaves out, may only be `{}`."""
    return await threads.shown(await threads.copy(thread_id, owner=user.user_id))
