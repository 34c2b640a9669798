"""Wake-ups across processes: PostgreSQL LISTEN/NOTIFY, or nothing on SQLite.

Processes share no memory: a worker records a run's events in `run_events`, and an API
process serving that run's stream must learn that there is more to read. With
PostgreSQL the writer sends a notification in the same transaction (delivered at
commit, so the rows are visible when it arrives); readers wait for it, with a timeout
as a safety net. SQLite serves one process, whose readers are woken in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable

import psycopg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger(__name__)
# Runs becoming pending or starting: every process listens.
CHANNEL = "threadline"
# Runs' keys and answers: only processes that serve clients (who wait for runs and follow
# their streams) listen; `threadline worker` processes are not woken by every run's end.
RUNS_CHANNEL = "threadline_runs"
QUEUE = "queue"  # a run became pending
# A run was created already running: readers wake, workers need not. Sent with the run's
# first events (StreamBroker.announce_later), not in the transaction that created it.
STARTED = "started"
RECONNECT_S = 1.0
# A run's notification that came before anyone listened for it is kept this long for the
# next listener: a client waiting on a run takes its event once the run's creation has
# answered, and on a busy server the run can end in another process meanwhile.
KEEP_UNHEARD_S = 1.0
KEEP_UNHEARD_MAX = 4096
# A run's key is announced when it ends (or leaves a process); its events key whenever
# events of it are recorded, and when it ends: a client waiting for the end only is not
# woken by every batch of a long run's events.
RUN_PREFIX = "run:"
EVENTS_PREFIX = "events:"
# A notification of a run's answer: the prefix, the run's id, a space, the answer's JSON.
# Sent before the run's key, in the same transaction (delivered in that order).
ANSWER_PREFIX = "answer:"
# PostgreSQL takes payloads shorter than 8,000 bytes; keys are ASCII.
MAX_PAYLOAD = 7_900
_NOTIFY = text("SELECT pg_notify(:channel, :key)")


def run_key(run_id: str) -> str:
    return f"{RUN_PREFIX}{run_id}"


def events_key(run_id: str) -> str:
    return f"{EVENTS_PREFIX}{run_id}"


def answer_payload(run_id: str, answer: str) -> str | None:
    """The notification of a run's answer (JSON text, which holds no newline or
    control character), if it fits in one."""
    payload = f"{ANSWER_PREFIX}{run_id} {answer}"
    return payload if len(payload.encode()) <= MAX_PAYLOAD else None


def channel_of(key: str) -> str:
    """The channel a key (or an answer's payload) is sent on."""
    return RUNS_CHANNEL if key.startswith((RUN_PREFIX, EVENTS_PREFIX, ANSWER_PREFIX)) else CHANNEL


def notifications(keys: Iterable[str], answer: str | None = None) -> dict[str, list[str]]:
    """The parameters `channels` and `notifications` (`NOTIFIED`) that send `keys`, led
    by an `answer_payload`: as few payloads a channel as hold them."""
    by_channel: dict[str, list[str]] = {}
    for key in keys:
        by_channel.setdefault(channel_of(key), []).append(key)
    sent = [(RUNS_CHANNEL, answer)] if answer else []
    sent += [(channel, p) for channel, group in by_channel.items() for p in payloads(group)]
    return {"channels": [c for c, _ in sent], "notifications": [p for _, p in sent]}


def payloads(keys: Iterable[str]) -> list[str]:
    """The payloads of notifications of `keys`: as few as hold them, space-separated
    (keys have no spaces)."""
    found: list[str] = []
    payload = ""
    for key in keys:
        if payload and len(payload) + 1 + len(key) > MAX_PAYLOAD:
            found.append(payload)
            payload = ""
        payload = f"{payload} {key}" if payload else key
    return [*found, payload] if payload else found


async def until(event: asyncio.Event, timeout: float) -> None:
    """Wait for `event`, at most `timeout` seconds."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)


class Notifier:
    """The in-process base: `announce` is a no-op; only this process's `fire` wakes."""

    def __init__(self, on_queue: Callable[[], None] | None = None) -> None:
        self._events: dict[str, asyncio.Event] = {}
        # Runs' keys fired while nobody listened, with when (oldest first).
        self._unheard: dict[str, float] = {}
        # Called when a run became pending somewhere: this process's workers may claim it.
        self.on_queue = on_queue

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def announce(self, session: AsyncSession, *keys: str) -> None:
        """Tell other processes about `keys` once `session` commits."""
        return None

    def listen(self, key: str) -> asyncio.Event:
        """An event the next `fire(key)` sets. Take it before checking what `key` would
        announce, so that a notification arriving during the check is not lost. A run's
        key fired with nobody listening, less than `KEEP_UNHEARD_S` ago, gives an event
        already set."""
        event = self._events.get(key)
        if event is not None:
            return event
        event = asyncio.Event()
        fired = self._unheard.pop(key, None)
        if fired is not None and time.monotonic() - fired < KEEP_UNHEARD_S:
            event.set()  # it came just before: the caller checks again at once
        else:
            self._events[key] = event
        return event

    def fire(self, key: str) -> None:
        if key == QUEUE and self.on_queue is not None:
            self.on_queue()
        if key == STARTED:
            key = QUEUE  # readers of a thread wait on QUEUE for any new run
        event = self._events.pop(key, None)
        if event is not None:
            event.set()
        elif key.startswith((RUN_PREFIX, EVENTS_PREFIX)):
            self._keep_unheard(key)

    def _keep_unheard(self, key: str) -> None:
        now = time.monotonic()
        self._unheard.pop(key, None)
        self._unheard[key] = now
        while self._unheard:
            oldest = next(iter(self._unheard))
            fresh = now - self._unheard[oldest] < KEEP_UNHEARD_S
            if fresh and len(self._unheard) <= KEEP_UNHEARD_MAX:
                break
            del self._unheard[oldest]


class PostgresNotifier(Notifier):
    def __init__(
        self,
        conninfo: str,
        on_queue: Callable[[], None] | None = None,
        on_answer: Callable[[str, str], None] | None = None,
        channels: tuple[str, ...] = (CHANNEL, RUNS_CHANNEL),
    ) -> None:
        super().__init__(on_queue)
        self.conninfo = conninfo
        # Called with a run's id and answer, sent by the process that ended it.
        self.on_answer = on_answer
        self.channels = channels
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="threadline: listen")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def announce(self, session: AsyncSession, *keys: str) -> None:
        """As few notifications as hold the keys: a flush of many runs' events is one
        statement, not one per run."""
        sent = notifications(keys)
        for channel, payload in zip(sent["channels"], sent["notifications"], strict=True):
            await session.execute(_NOTIFY, {"channel": channel, "key": payload})

    async def _listen(self) -> None:
        """Keep one listening connection; after a drop (a database restart), reconnect and
        wake every waiter, since notifications sent meanwhile are lost."""
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
                async with conn:
                    for channel in self.channels:
                        await conn.execute(f"LISTEN {channel}")
                    self._fire_all()
                    async for note in conn.notifies():
                        self.receive(note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("listening for notifications failed (%s); reconnecting", exc)
                self._fire_all()
                await asyncio.sleep(RECONNECT_S)

    def receive(self, payload: str) -> None:
        """A notification: a run's answer, or keys to fire."""
        if payload.startswith(ANSWER_PREFIX):
            run_id, _, answer = payload[len(ANSWER_PREFIX) :].partition(" ")
            if answer and self.on_answer is not None:
                self.on_answer(run_id, answer)
            return
        for key in payload.split(" "):
            self.fire(key)

    def _fire_all(self) -> None:
        for key in list(self._events):
            self.fire(key)
