"""A run's recorded events as a Server-Sent Events response."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from app.db.models import RunRow
from app.errors import Invalid
from app.limits import MAX_EVENT_ID
from app.runs.broker import Event
from app.services.runs.service import RunService

HEARTBEAT_S = 5.0
# ASCII digits only; the value is checked against MAX_EVENT_ID once it is short enough.
_EVENT_ID = re.compile(r"-?[0-9]{1,18}")


def parse_last_event_id(value: str | None) -> int:
    """`Last-Event-ID`: the id of the last event the client has; -1 means none."""
    if value is None or value.strip() == "":
        return -1
    text = value.strip()
    if not _EVENT_ID.fullmatch(text) or not -1 <= int(text) <= MAX_EVENT_ID:
        raise Invalid(
            f"Last-Event-ID must be -1 or an event id (an integer from 0 to {MAX_EVENT_ID}), "
            f"got {value[:40]!r}."
        )
    return int(text)


def run_stream(
    runs: RunService,
    run: RunRow,
    release: Callable[[], None],
    *,
    after: int = -1,
    cancel_on_disconnect: bool = False,
    headers: dict[str, str] | None = None,
    modes: list[str] | None = None,
) -> EventSourceResponse:
    """A run's events after `after`; ids only for runs created resumable."""

    async def events() -> AsyncIterator[list[Event]]:
        finished = False
        try:
            async for batch in runs.broker.follow(run.run_id, after):
                yield batch
            finished = True
        finally:
            if cancel_on_disconnect and not finished:
                # Detached: this generator is being cancelled with the connection.
                asyncio.ensure_future(
                    runs.cancel(run.thread_id, run.run_id, "interrupt", owner=run.owner)
                )

    return event_stream(
        events(),
        release,
        of_modes(modes),
        with_ids=bool(run.kwargs.get("stream_resumable")),
        headers=headers,
    )


def of_modes(modes: list[str] | None) -> Callable[[Event], bool] | None:
    """Keeps the events of those run stream modes (and `ALWAYS`); None keeps all."""
    if not modes:
        return None
    return lambda event: event.event in ALWAYS or mode_of(event.event) in modes


def of_thread_modes(modes: list[str] | None) -> Callable[[Event], bool] | None:
    """For a thread's stream: `run_modes` (the default) keeps every event, `lifecycle`
    each run's `metadata` events (its start and its `run_done`); run stream modes keep
    theirs, as on a run's stream."""
    if not modes or "run_modes" in modes:
        return None
    lifecycle = "lifecycle" in modes
    by_mode = of_modes([mode for mode in modes if mode != "lifecycle"])
    return lambda event: (
        (lifecycle and event.event == "metadata") or bool(by_mode and by_mode(event))
    )


def event_stream(
    batches: AsyncIterator[list[Event]],
    release: Callable[[], None],
    keep: Callable[[Event], bool] | None = None,
    *,
    with_ids: bool = False,
    headers: dict[str, str] | None = None,
) -> EventSourceResponse:
    """Recorded events as SSE, those `keep` keeps (all by default). The events ready at
    once go out in one write: a reply streamed token by token would otherwise cost a send
    through every middleware per token. `release` gives the caller's stream slot back
    once the last event is out, before the response ends: a client that opens its next
    stream as soon as this one ends finds the slot free."""

    async def frames() -> AsyncIterator[bytes]:
        try:
            async for batch in batches:
                chunk = b"".join(
                    ServerSentEvent(
                        data=event.data, event=event.event, id=str(event.seq) if with_ids else None
                    ).encode()
                    for event in batch
                    if keep is None or keep(event)
                )
                if chunk:
                    yield chunk
        finally:
            release()

    return EventSourceResponse(
        frames(),
        headers=headers,
        ping=HEARTBEAT_S,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
    )


# Sent whatever modes a reader asked for: what the run is, and how it failed.
ALWAYS = frozenset({"metadata", "error"})


def mode_of(event: str) -> str:
    """The stream mode an event's name comes from: `messages` events are the tuples of
    `messages-tuple`, `messages/partial` and the like those of `messages`."""
    name = event.split("|")[0]
    if name == "messages":
        return "messages-tuple"
    return name.split("/")[0]


def run_headers(run: RunRow) -> dict[str, str]:
    base = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return {"Location": f"{base}/stream", "Content-Location": base}
