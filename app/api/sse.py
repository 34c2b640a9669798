"""A run's recorded events as a Server-Sent Events response."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from app.db.models import Run
from app.errors import Invalid
from app.runs.broker import Event
from app.runs.service import RunService

HEARTBEAT_S = 5.0


def parse_last_event_id(value: str | None) -> int:
    """`Last-Event-ID`: the id of the last event the client has; -1 means none."""
    if value is None or value.strip() == "":
        return -1
    try:
        seq = int(value.strip())
    except ValueError:
        raise Invalid(f"Last-Event-ID must be an event id (an integer), got {value!r}.") from None
    if seq < -1:
        raise Invalid(f"Last-Event-ID must be -1 or an event id, got {value!r}.")
    return seq


def run_stream(
    runs: RunService,
    run: Run,
    *,
    after: int = -1,
    cancel_on_disconnect: bool = False,
    headers: dict[str, str] | None = None,
    modes: list[str] | None = None,
) -> EventSourceResponse:
    """A run's events after `after`; ids only for runs created resumable."""

    async def events() -> AsyncIterator[Event]:
        finished = False
        try:
            async for event in runs.broker.follow(run.run_id, after):
                yield event
            finished = True
        finally:
            if cancel_on_disconnect and not finished:
                # Detached: this generator is being cancelled with the connection.
                asyncio.ensure_future(runs.cancel(run.thread_id, run.run_id, "interrupt"))

    return event_stream(
        events(), modes, with_ids=bool(run.kwargs.get("stream_resumable")), headers=headers
    )


def event_stream(
    events: AsyncIterator[Event],
    modes: list[str] | None = None,
    *,
    with_ids: bool = False,
    headers: dict[str, str] | None = None,
) -> EventSourceResponse:
    """Recorded events as SSE; `modes` keeps only events of those stream modes."""

    async def frames() -> AsyncIterator[ServerSentEvent]:
        async for event in events:
            if modes and event.event != "metadata" and event.event.split("|")[0] not in modes:
                continue
            yield ServerSentEvent(
                data=event.data, event=event.event, id=str(event.seq) if with_ids else None
            )

    return EventSourceResponse(
        frames(),
        headers=headers,
        ping=HEARTBEAT_S,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
    )


def run_headers(run: Run) -> dict[str, str]:
    base = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return {"Location": f"{base}/stream", "Content-Location": base}
