"""A thread's state: read it (at the head or any version), update it, its history
over every branch, its conversation tree, and the bytes its versions take."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from app.api.deps import CurrentUser, State
from app.limits import MAX_PAGE_SIZE, Key
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES, pick
from app.schemas.runs import CheckpointRef
from app.schemas.state import (
    CheckpointId,
    HistoryQuery,
    StateQuery,
    StateUpdate,
    StateUpdated,
    ThreadState,
    ThreadStorage,
    ThreadTree,
)

router = APIRouter(tags=["Thread state"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)


def _shown(
    found: ThreadState | list[ThreadState], select: list[str] | None
) -> ThreadState | list[ThreadState] | JSONResponse:
    """The states with only the `select`ed fields, when the client chose some."""
    if not select:
        return found
    if isinstance(found, list):
        return JSONResponse([pick(item.model_dump(mode="json"), select) for item in found])
    return JSONResponse(pick(found.model_dump(mode="json"), select))


@router.get("/threads/{thread_id}/state", response_model=ThreadState)
async def get_state(
    thread_id: str,
    state: State,
    user: CurrentUser,
    subgraphs: bool = False,
    select: Annotated[list[str] | None, Query()] = None,
) -> ThreadState | list[ThreadState] | JSONResponse:
    """The thread's current state (its head)."""
    found = await state.get_state(thread_id, None, subgraphs=subgraphs, owner=user.user_id)
    return _shown(found, select)


@router.post("/threads/{thread_id}/state")
async def update_state(
    thread_id: str, body: StateUpdate, state: State, user: CurrentUser
) -> StateUpdated:
    """Write values as a node would; on an older version this forks the thread; with
    `checkpoint.checkpoint_ns`, in a subgraph's state. 409 while a run is pending or
    running on the thread."""
    written = await state.update_state(thread_id, body, owner=user.user_id)
    return StateUpdated(
        checkpoint=written, checkpoint_id=written.checkpoint_id, configurable=written
    )


@router.post("/threads/{thread_id}/state/checkpoint", response_model=ThreadState)
async def get_state_at(
    thread_id: str, body: StateQuery, state: State, user: CurrentUser
) -> ThreadState | list[ThreadState] | JSONResponse:
    """The state at the version (or in the subgraph namespace) the body names."""
    found = await state.get_state(
        thread_id, body.checkpoint, subgraphs=body.subgraphs, owner=user.user_id
    )
    return _shown(found, body.select)


@router.get("/threads/{thread_id}/state/{checkpoint_id}", response_model=ThreadState)
async def get_state_by_id(
    thread_id: str,
    checkpoint_id: Key,
    state: State,
    user: CurrentUser,
    subgraphs: bool = False,
    select: Annotated[list[str] | None, Query()] = None,
) -> ThreadState | list[ThreadState] | JSONResponse:
    """The state at one version of the thread."""
    ref = CheckpointRef(checkpoint_id=checkpoint_id)
    found = await state.get_state(thread_id, ref, subgraphs=subgraphs, owner=user.user_id)
    return _shown(found, select)


@router.post("/threads/{thread_id}/history", response_model=list[ThreadState])
async def post_history(
    thread_id: str, body: HistoryQuery, state: State, user: CurrentUser
) -> ThreadState | list[ThreadState] | JSONResponse:
    """Versions of every branch, newest first, each with its parent: of the thread's graph,
    or of the subgraph namespace `checkpoint.checkpoint_ns` names."""
    return _shown(await state.history(thread_id, body, owner=user.user_id), body.select)


@router.get("/threads/{thread_id}/history", response_model=list[ThreadState])
async def get_history(
    thread_id: str,
    state: State,
    user: CurrentUser,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 10,
    before: CheckpointId | None = None,
) -> list[ThreadState]:
    """Versions of every branch, newest first; `before` is a checkpoint id."""
    query = HistoryQuery(limit=limit, before=before)
    return await state.history(thread_id, query, owner=user.user_id)


@router.get("/threads/{thread_id}/tree")
async def get_tree(thread_id: str, state: State, user: CurrentUser) -> ThreadTree:
    """The conversation as a tree of turns: each turn's checkpoint range, user message,
    reply, parent, and place among its siblings; and which turn is the head. Edits,
    regenerations and state updates on older versions show as sibling turns. Turns are
    versions of the thread's graph: a subgraph's versions are under its tasks."""
    return await state.tree(thread_id, owner=user.user_id)


@router.get("/threads/{thread_id}/storage")
async def get_storage(thread_id: str, state: State, user: CurrentUser) -> ThreadStorage:
    """Bytes the thread's versions take in the checkpointer's tables, as stored: its
    checkpoints, its channels' values (per channel) and its pending writes."""
    return await state.storage(thread_id, owner=user.user_id)
