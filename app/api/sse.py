"""A run's recorded events as a Server-Sent Events response."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from typing import get_args

from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from app.db.models import RunRow
from app.errors import Invalid
from app.limits import MAX_EVENT_ID
from app.runs.broker import Event
from app.schemas.runs import StreamModeName, ThreadStreamMode
from app.services.runs.service import RUN_DONE, RunService

HEARTBEAT_S = 5.0
# ASCII digits only; the value is checked against MAX_EVENT_ID once it is short enough.
_EVENT_ID = re.compile(r"-?[0-9]{1,18}")
# A thread's stream: `<run id>:<event id>`, `<run id>:done` for the run's `run_done`.
_THREAD_EVENT_ID = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(.+)"
)


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


def parse_thread_event_id(value: str | None) -> tuple[str, int] | None:
    """`Last-Event-ID` on a thread's stream: the run and the seq of the last event the
    client has of it (`RUN_DONE`: all of them); None, none."""
    if value is None or value.strip() == "":
        return None
    found = _THREAD_EVENT_ID.fullmatch(value.strip().lower())
    seq = found and (RUN_DONE if found[2] == "done" else _seq_or_none(found[2]))
    if not found or seq is None:
        raise Invalid(
            "Last-Event-ID on a thread's stream must be an id it sent (a run's id, a colon, "
            f"and an event id or `done`), got {value[:60]!r}."
        )
    return found[1], seq


def _seq_or_none(text: str) -> int | None:
    if not _EVENT_ID.fullmatch(text) or not 0 <= int(text) <= MAX_EVENT_ID:
        return None
    return int(text)


def thread_event_id(run_id: str, event: Event) -> str:
    """An event's id on a thread's stream: which run, and where in it."""
    return f"{run_id}:{'done' if event.seq == RUN_DONE else event.seq}"


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
    """A run's events after `after`, with their ids: every run's are recorded, so a
    client that loses the stream gets the rest by the last id it read (LangGraph's
    server gives ids only to a run created resumable)."""

    async def events() -> AsyncIterator[tuple[str, list[Event]]]:
        finished = False
        try:
            async for batch in runs.broker.follow(run.run_id, after):
                yield run.run_id, batch
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
        event_id=_seq_id,
        headers=headers,
    )


def of_modes(modes: list[str] | None) -> Callable[[Event], bool] | None:
    """Keeps the events of those run stream modes (and `ALWAYS`); None keeps all."""
    if not modes:
        return None
    return lambda event: event.event in ALWAYS or mode_of(event.event) in modes


def thread_modes(text: str) -> list[str]:
    """A thread stream's `stream_modes` as LangGraph's server reads it: modes joined by
    commas; 422 naming any it does not know."""
    modes = [mode.strip() for mode in text.split(",") if mode.strip()]
    known = {*get_args(ThreadStreamMode), *get_args(StreamModeName)}
    unknown = [mode for mode in modes if mode not in known]
    if unknown:
        raise Invalid(f"stream_modes: unknown modes {unknown}; modes: {sorted(known)}.")
    return modes


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


def _seq_id(run_id: str, event: Event) -> str:
    return str(event.seq)


def event_stream(
    batches: AsyncIterator[tuple[str, list[Event]]],
    release: Callable[[], None],
    keep: Callable[[Event], bool] | None = None,
    *,
    event_id: Callable[[str, Event], str] | None = None,
    headers: dict[str, str] | None = None,
) -> EventSourceResponse:
    """Recorded events as SSE, in batches of one run's (its id, its events): those
    `keep` keeps (all by default), with the ids `event_id` gives (none by default). The
    events ready at once go out in one write: a reply streamed token by token would
    otherwise cost a send through every middleware per token. `release` gives the
    caller's stream slot back once the last event is out, before the response ends: a
    client that opens its next stream as soon as this one ends finds the slot free."""

    async def frames() -> AsyncIterator[bytes]:
        try:
            async for run_id, batch in batches:
                chunk = b"".join(
                    ServerSentEvent(
                        data=event.data,
                        event=event.event,
                        id=event_id(run_id, event) if event_id else None,
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


def run_headers(thread_id: str, run_id: str, follow: str | None = None) -> dict[str, str]:
    """Where a run is (Content-Location) and, with `follow` (`stream` or `join`), where to
    follow it (Location), as LangGraph's server answers each route."""
    base = f"/threads/{thread_id}/runs/{run_id}"
    return {"Content-Location": base, **({"Location": f"{base}/{follow}"} if follow else {})}
