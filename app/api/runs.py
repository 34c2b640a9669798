"""Runs on a thread and stateless runs: create, stream, wait, join, cancel, list."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from sse_starlette.sse import EventSourceResponse

from app.api.deps import CurrentUser, Runs, StreamSlot
from app.api.sse import (
    event_stream,
    of_thread_modes,
    parse_last_event_id,
    parse_thread_event_id,
    run_headers,
    run_stream,
    thread_event_id,
    thread_modes,
)
from app.db.models import RunRow
from app.errors import Invalid, NotFound
from app.limits import MAX_BATCH_RUNS, MAX_OFFSET, MAX_PAGE_SIZE
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES, page
from app.schemas.runs import (
    BatchRunCreate,
    CancelMany,
    QueryStreamModes,
    QueryThreadStreamModes,
    Run,
    RunCreate,
    RunField,
)
from app.services.runs.kwargs import shown_kwargs

router = APIRouter(tags=["Runs"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "The run's events (SSE)."}
}


class JSONText(JSONResponse):
    """A JSON response whose body the service has already encoded."""

    def render(self, content: str) -> bytes:
        return content.encode()


async def client_gone(request: Request) -> None:
    """Return once the client has closed the connection. The body has been read: what
    the server hands the app next is the disconnect (or, once the response is sent, the
    end of the request)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def out(run: RunRow) -> Run:
    return Run(
        run_id=run.run_id,
        thread_id=run.thread_id,
        assistant_id=run.assistant_id,
        created_at=run.created_at,
        updated_at=run.updated_at,
        status=run.status,  # type: ignore[arg-type]
        metadata=run.metadata_ or {},
        multitask_strategy=run.multitask_strategy,  # type: ignore[arg-type]
        kwargs=shown_kwargs(run.kwargs),
    )


@router.post("/threads/{thread_id}/runs")
async def create_run(
    thread_id: str, body: RunCreate, runs: Runs, user: CurrentUser, response: Response
) -> Run:
    """Start a run in the background."""
    run = await runs.create(thread_id, body, owner=user.user_id)
    response.headers.update(run_headers(run.thread_id, run.run_id))
    return out(run)


@router.post(
    "/threads/{thread_id}/runs/stream",
    response_class=EventSourceResponse,
    responses=STREAM_RESPONSES,
)
async def stream_run(
    thread_id: str, body: RunCreate, runs: Runs, user: CurrentUser, slot: StreamSlot
) -> EventSourceResponse:
    """Start a run and stream its events."""
    run = await runs.create(thread_id, body, owner=user.user_id)
    return run_stream(
        runs,
        run,
        slot,
        cancel_on_disconnect=body.on_disconnect == "cancel",
        headers=run_headers(run.thread_id, run.run_id, "stream"),
    )


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: str, body: RunCreate, runs: Runs, user: CurrentUser, request: Request
) -> JSONResponse:
    """Start a run and answer with its final values."""
    gone = partial(client_gone, request)
    run, result = await runs.wait(thread_id, body, owner=user.user_id, client_gone=gone)
    return JSONText(result, headers=run_headers(run.thread_id, run.run_id, "join"))


@router.get("/threads/{thread_id}/runs", response_model=list[Run])
async def list_runs(
    thread_id: str,
    runs: Runs,
    user: CurrentUser,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 10,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    status: Literal["pending", "running", "success", "error", "timeout", "interrupted"]
    | None = None,
    select: Annotated[
        list[RunField] | None, Query(description="Only these fields of each run.")
    ] = None,
) -> JSONResponse:
    """The thread's runs, newest first."""
    found = await runs.list(
        thread_id, limit=limit, offset=offset, status=status, owner=user.user_id
    )
    return page([out(r) for r in found], total=None, offset=offset, select=select)


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(thread_id: str, run_id: str, runs: Runs, user: CurrentUser) -> Run:
    return out(await runs.get(thread_id, run_id, owner=user.user_id))


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
async def delete_run(thread_id: str, run_id: str, runs: Runs, user: CurrentUser) -> Response:
    await runs.delete(thread_id, run_id, owner=user.user_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(thread_id: str, run_id: str, runs: Runs, user: CurrentUser) -> Any:
    """Wait for the run to end; its final values."""
    result = await runs.join(thread_id, run_id, owner=user.user_id)
    return JSONText(result, headers=run_headers(thread_id, run_id, "join"))


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    response_class=EventSourceResponse,
    responses=STREAM_RESPONSES,
)
async def join_stream(
    thread_id: str,
    run_id: str,
    runs: Runs,
    user: CurrentUser,
    slot: StreamSlot,
    last_event_id: Annotated[str | None, Header()] = None,
    cancel_on_disconnect: bool = False,
    stream_mode: Annotated[QueryStreamModes, Query()] = None,
) -> EventSourceResponse:
    """Follow a run's stream; with Last-Event-ID, from the event after that one."""
    after = parse_last_event_id(last_event_id)
    run = await runs.get(thread_id, run_id, owner=user.user_id)
    return run_stream(
        runs,
        run,
        slot,
        after=after,
        cancel_on_disconnect=cancel_on_disconnect,
        headers=run_headers(run.thread_id, run.run_id, "stream"),
        modes=stream_mode,
    )


@router.get(
    "/threads/{thread_id}/stream",
    response_class=EventSourceResponse,
    responses=STREAM_RESPONSES,
)
async def thread_stream(
    thread_id: str,
    runs: Runs,
    user: CurrentUser,
    slot: StreamSlot,
    last_event_id: Annotated[str | None, Header()] = None,
    stream_mode: Annotated[
        QueryThreadStreamModes,
        Query(
            description="`run_modes` (the default): every event of the runs; `lifecycle`: "
            "each run's start and `run_done` (`metadata` events); a run stream mode: its "
            "events, as on a run's stream."
        ),
    ] = None,
    stream_modes: Annotated[
        str | None,
        Query(
            description="The same modes, comma-separated, as LangGraph's server reads them; "
            "over `stream_mode` when both are given."
        ),
    ] = None,
) -> EventSourceResponse:
    """Follow every run of a thread as it comes, for as long as the client listens; after
    each run, a `metadata` event `{"status": "run_done", "run_id"}`. With Last-Event-ID
    (an id this stream sent), from the event after that one: the rest of its run, then
    every later run of the thread, ended or not."""
    if stream_modes:  # LangGraph's server's name, over the SDK's (which sends a default)
        stream_mode = thread_modes(stream_modes)
    if stream_mode and "state_update" in stream_mode:
        raise Invalid(
            "stream_mode state_update: state changes outside runs are not streamed here; "
            "read the thread's state (GET /threads/{thread_id}/state) after changing it."
        )
    after = parse_thread_event_id(last_event_id)
    tid = await runs.thread_key(thread_id, owner=user.user_id)
    return event_stream(
        runs.follow_thread(tid, after),
        slot,
        of_thread_modes(stream_mode),
        event_id=thread_event_id,
    )


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: str,
    run_id: str,
    runs: Runs,
    user: CurrentUser,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Stop a run: keep what it saved (interrupt) or undo it (rollback). With `wait`, once
    it has ended, its final values as `join` answers them (`{}` for a run rolled back)."""
    run = await runs.cancel(thread_id, run_id, action, owner=user.user_id)
    if not wait:
        return Response(status_code=202)
    if run is not None:
        await runs.wait_done(run.run_id)
    try:
        result = await runs.join(thread_id, run_id, owner=user.user_id)
    except NotFound:  # rolled back: the run is gone with what it saved
        result = "{}"
    return JSONText(result, headers=run_headers(thread_id, run_id, "join"))


@router.post("/runs/cancel", status_code=204)
async def cancel_runs(
    body: CancelMany,
    runs: Runs,
    user: CurrentUser,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Cancel the caller's runs that match; unknown ids are skipped."""
    await runs.cancel_many(body.thread_id, body.run_ids, body.status, action, owner=user.user_id)
    return Response(status_code=204)


@router.post("/runs")
async def create_stateless(
    body: RunCreate, runs: Runs, user: CurrentUser, response: Response
) -> Run:
    run = await runs.create(None, body, owner=user.user_id)
    response.headers.update(run_headers(run.thread_id, run.run_id))
    return out(run)


@router.post(
    "/runs/stream",
    response_class=EventSourceResponse,
    responses=STREAM_RESPONSES,
)
async def stream_stateless(
    body: RunCreate, runs: Runs, user: CurrentUser, slot: StreamSlot
) -> EventSourceResponse:
    run = await runs.create(None, body, owner=user.user_id)
    return run_stream(
        runs,
        run,
        slot,
        cancel_on_disconnect=body.on_disconnect == "cancel",
        headers=run_headers(run.thread_id, run.run_id, "stream"),
    )


@router.post("/runs/wait")
async def wait_stateless(
    body: RunCreate, runs: Runs, user: CurrentUser, request: Request
) -> JSONResponse:
    gone = partial(client_gone, request)
    run, result = await runs.wait(None, body, owner=user.user_id, client_gone=gone)
    return JSONText(result, headers=run_headers(run.thread_id, run.run_id, "join"))


@router.post("/runs/batch")
async def batch(
    body: Annotated[list[BatchRunCreate], Body(max_length=MAX_BATCH_RUNS)],
    runs: Runs,
    user: CurrentUser,
) -> list[Run]:
    """Create runs, each on its `thread_id` if it names one, else stateless."""
    return [out(await runs.create(item.thread_id, item, owner=user.user_id)) for item in body]
