"""Each run's stream: events numbered in order, recorded in `run_events`, and handed to
every client that follows the run, live or rejoining from an event id.

While a run executes in this process its events are also kept in memory, so live
clients never wait on the database; the table is written in small batches and is what
a client reads when it rejoins after the run left memory (or from another process).
"""

from __future__ import annotations

import asyncio
import json
import logging
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy import Integer, String, Text, and_, bindparam, case, func, insert, select
from sqlalchemy.dialects.postgresql import ARRAY

from app.db.database import Database
from app.db.models import RunEventRow, RunRow, UUIDText
from app.errors import database_unavailable
from app.jsonable import to_json
from app.outages import Retrying
from app.runs.notify import Notifier, events_key, notifications, run_key, until

FLUSH_EVERY_S = 0.05
# How early the loop's timers may fire, and the least wait between two flushes.
_CLOCK_SLACK_S = 0.001
# A live reader sends at most one write per this long (see `follow`).
COALESCE_S = 0.005
# Readers in other processes are woken by a notification; this is the safety net.
POLL_EVERY_S = 1.0
# A recorded `values` event whose checkpoint is not committed yet (its run saves it in
# the background) is read again this soon.
UNSAVED_RETRY_S = 0.02
# How long a reader waits out an unavailable database (a restart, a failover) before its
# stream fails.
UNAVAILABLE_WAIT_S = 30.0
# Core, not ORM, statements on the hot path: the ORM's bulk machinery costs more than the
# insert.
_ADD_EVENTS = insert(RunEventRow.__table__)
# A row's columns, given as one array each (`event_<name>`) to the PostgreSQL statements
# that record events in one round trip.
EVENT_FIELDS = {
    "seq": Integer(),
    "event": String(),
    "checkpoint_id": UUIDText(),
    "data": Text(),
    "last_seq": Integer(),
    "more": Text(),
}
# Each of `notifications` (notify.payloads: space-separated keys) on its channel of
# `channels`, in order (notify.notifications).
_SENT = (
    func.unnest(
        bindparam("channels", type_=ARRAY(Text())), bindparam("notifications", type_=ARRAY(Text()))
    )
    .table_valued("channel", "payload")
    .render_derived(name="sent")
)
NOTIFIED = select(func.count(func.pg_notify(_SENT.c.channel, _SENT.c.payload))).select_from(_SENT)
# The seq of the last event a row records.
_LAST_SEQ = func.coalesce(RunEventRow.last_seq, RunEventRow.seq)
# A run's recorded events from `from_seq` on: the rows of `run_events` (none: a row of
# nulls) and, on each, the last ones its row keeps (`folded`), as long as the retention
# keeps events recorded when the run ended (`kept_since`).
_RECORDED = (
    select(
        case((RunRow.updated_at >= bindparam("kept_since"), RunRow.events)).label("folded"),
        RunRow.attempt,
        RunRow.checkpoint_id.label("end"),
        RunEventRow.seq,
        RunEventRow.event,
        RunEventRow.data,
        RunEventRow.checkpoint_id,
        RunEventRow.more,
    )
    .select_from(RunRow)
    .outerjoin(
        RunEventRow,
        and_(RunEventRow.run_id == RunRow.run_id, bindparam("from_seq") <= _LAST_SEQ),
    )
    .where(RunRow.run_id == bindparam("run"))
    .order_by(RunEventRow.seq)
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

log = logging.getLogger(__name__)


# The JSON text of the saved values of a run's checkpoints, by id (those found).
SavedValues = Callable[[str, list[str]], Awaitable[dict[str, str]]]


class Event:
    """One event of a run's stream. Its JSON text (`data`) is encoded once, for every
    reader, when first read: a `values` event whose checkpoint holds its values
    (`checkpoint_id`) is recorded as that checkpoint, and encoded only if someone follows
    the run live. `after` is the JSON object of what such an event shows besides the
    values (its interrupts), or empty."""

    __slots__ = ("seq", "event", "_data", "_payload", "checkpoint_id", "after")

    def __init__(
        self,
        seq: int,
        event: str,
        data: str | None,
        payload: Any = None,
        checkpoint_id: str | None = None,
        after: str = "",
    ) -> None:
        self.seq = seq
        self.event = event
        self._data = data
        self._payload = payload
        self.checkpoint_id = checkpoint_id
        self.after = after

    @property
    def data(self) -> str:
        if self._data is None:
            self._data, self._payload = to_json(self._payload), None
        return self._data

    def row(self, run_id: str, now: datetime) -> dict[str, Any]:
        """Its row in `run_events`."""
        data = self.after if self.checkpoint_id else self.data
        return {
            "run_id": run_id,
            "seq": self.seq,
            "event": self.event,
            "checkpoint_id": self.checkpoint_id,
            "data": data,
            "created_at": now,
        }


def _given_events() -> Any:
    """PostgreSQL: an insert of the rows given as arrays (`event_<name>`, and `now` for
    their time), each of its own run."""
    fields = {"run_id": UUIDText(), **EVENT_FIELDS}
    given = func.unnest(
        *[bindparam(f"event_{name}", type_=ARRAY(kind)) for name, kind in fields.items()]
    )
    events = given.table_valued(*fields).render_derived(name="given")
    stamp = bindparam("now", type_=RunEventRow.__table__.c.created_at.type)
    return (
        insert(RunEventRow.__table__)
        .from_select(["run_id", *EVENT_FIELDS, "created_at"], select(*events.c, stamp))
        .returning(RunEventRow.__table__.c.seq)
    )


def _event_arrays(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """`_given_events`' parameters for these rows (their time apart)."""
    return {f"event_{name}": [row[name] for row in rows] for name in ["run_id", *EVENT_FIELDS]}


# PostgreSQL: a flush's events and their notifications, in one statement.
_FLUSH = select(
    select(func.count()).select_from(_given_events().cte("recorded")).scalar_subquery(),
    NOTIFIED.scalar_subquery(),
)


def recorded_row(run_id: str, events: list[Event], now: datetime) -> dict[str, Any]:
    """The one row of `run_events` that records `events` (consecutive, of one run): the
    first in its columns, the others in `more`.

    What every run records is kept short, and read back to the same text: a `metadata`
    event as its attempt (its run id is the row's), and in `more` a `values` event with
    nothing after its values as its checkpoint's id alone, 22 characters of base64."""
    row, more = _short(run_id, events, now)
    row["last_seq"] = events[-1].seq if more else None
    row["more"] = _compact(more) if more else None
    return row


def folded(run_id: str, events: list[Event], attempt: int, end: str | None) -> str:
    """`recorded_row`'s record of `events` of an attempt of their run as the run's row
    keeps it (`runs.events`): one JSON array, the first event's seq, name, data and
    checkpoint, then the items of `more`; the items alone when the first is the
    attempt's `metadata` event, the run's first (its row gives it back: the run's id and
    attempt). A `values` event of the checkpoint the run ended at (`end`, which its row
    keeps too: a chat turn's last) is the item `""`."""
    row, more = _short(run_id, events, _EPOCH)  # the row's time is the run's end
    if end is not None:
        at_end = _more_item("values", end, "")
        more = [_AT_END if item == at_end else item for item in more]
    if (row["seq"], row["event"], row["data"]) == (0, "metadata", str(attempt)):
        return _compact(more)
    return _compact([row["seq"], row["event"], row["data"], row["checkpoint_id"], *more])


def _short(run_id: str, events: list[Event], now: datetime) -> tuple[dict[str, Any], list[Any]]:
    """The row of the first of `events` and the items of `more` for the others, in their
    short forms."""
    row = events[0].row(run_id, now)
    if row["event"] == "metadata":
        row["data"] = _attempt(run_id, row["data"]) or row["data"]
    rest = [e.row(run_id, now) for e in events[1:]]
    return row, [_more_item(r["event"], r["checkpoint_id"], r["data"]) for r in rest]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def recorded_events(run_id: str, row: Any) -> list[tuple[int, str, str, str | None]]:
    """(seq, event, data, checkpoint_id) of each event a row of `run_events` of the run
    `run_id` (as the table returns it) records."""
    seq, event, data, checkpoint_id, more = row
    return _expanded(run_id, seq, event, data, checkpoint_id, json.loads(more) if more else [])


def unfolded_events(
    run_id: str, attempt: int, text: str, end: str | None
) -> list[tuple[int, str, str, str | None]]:
    """`recorded_events` of what the row of a run (its last attempt `attempt`, the
    checkpoint it ended at `end`) keeps (`folded`)."""
    items = json.loads(text)
    if items and type(items[0]) is int:
        seq, event, data, checkpoint_id, *more = items
    else:
        seq, event, data, checkpoint_id, more = 0, "metadata", str(attempt), None, items
    if end is not None:
        at_end = _more_item("values", str(end), "")
        more = [at_end if item == _AT_END else item for item in more]
    return _expanded(run_id, seq, event, data, checkpoint_id, more)


def _expanded(
    run_id: str, seq: int, event: str, data: str, checkpoint_id: str | None, more: list[Any]
) -> list[tuple[int, str, str, str | None]]:
    if event == "metadata" and data.isdigit():
        data = _METADATA.format(run_id, data)
    found = [(seq, event, data, checkpoint_id)]
    for n, item in enumerate(more, start=1):
        if type(item) is str:
            found.append((seq + n, "values", "", str(UUID(bytes=urlsafe_b64decode(item + "==")))))
        else:
            name, checkpoint, text = item
            found.append((seq + n, name, text, checkpoint))
    return found


_METADATA = '{{"run_id":"{}","attempt":{}}}'
# In a run row's `more`: a `values` event of the checkpoint the run ended at (no other
# item is an empty string: a checkpoint's id, or a list).
_AT_END = ""


def _attempt(run_id: str, data: str) -> str | None:
    """The attempt that stands for a `metadata` event's text, if the text is rebuilt from
    it exactly."""
    attempt = data.rsplit(":", 1)[-1][:-1]
    if attempt.isdigit() and _canonical(run_id) and _METADATA.format(run_id, attempt) == data:
        return attempt
    return None


def _more_item(event: str, checkpoint_id: str | None, data: str) -> Any:
    if event == "values" and not data and checkpoint_id and _canonical(checkpoint_id):
        return urlsafe_b64encode(UUID(checkpoint_id).bytes)[:-2].decode()
    return [event, checkpoint_id, data]


def _canonical(text: str) -> bool:
    """Whether the table gives `text` back as it is (its UUID columns return this form)."""
    try:
        return str(UUID(text)) == text
    except ValueError:
        return False


def with_values(values: str, after: str) -> str:
    """The text of a `values` event from its checkpoint's values and what followed them:
    as `to_json` writes `{**values, **after}` (values that are not an object give way)."""
    if not after:
        return values
    if values.startswith("{") and values != "{}":
        return f"{values[:-1]},{after[1:]}"
    return after


@dataclass
class RunStream:
    # Events from seq `base` on; earlier ones (a previous attempt's) are in the table.
    base: int = 0
    events: list[Event] = field(default_factory=list)
    done: bool = False  # no more events here: the run ended (final) or left this process
    final: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    unsaved: int = 0  # events[-unsaved:] are not in the table yet
    unsaved_since: float = 0.0  # the loop's time when the first of them came

    @property
    def end(self) -> int:
        return self.base + len(self.events)


class StreamBroker:
    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        is_final: Callable[[str], Any],
        saved_values: SavedValues | None = None,
        keep_for: timedelta | None = None,
    ) -> None:
        self.db = db
        # The event retention (None: forever), which events kept in run rows follow.
        self.keep_for = keep_for
        self.notifier = notifier
        self._recording = Retrying(log, "recording run events")
        self.streams: dict[str, RunStream] = {}
        # Coroutine function: run_id -> True when the run reached a final status.
        self._is_final = is_final
        self._flushing: asyncio.Task[None] | None = None
        # Each run whose events a flush is writing now: that write's end.
        self._writing: dict[str, asyncio.Future[None]] = {}
        # Keys to announce with the next flush (`announce_later`).
        self._later: set[str] = set()
        # How recorded `values` events get their values back (`RunResults.saved_values`).
        self.saved_values: SavedValues = saved_values or _none_saved

    async def attach(self, run_id: str, *, retry: bool) -> None:
        """Before a run executes here: a retry continues numbering after what an earlier
        attempt (maybe in another process) recorded. Only runs executing here have a
        stream in memory; readers of any other run read the table."""
        last = None
        if retry:
            async with self.db.read() as session:
                last = await session.scalar(
                    select(func.max(_LAST_SEQ)).where(RunEventRow.run_id == run_id)
                )
        stream = self.open(run_id)
        if last is not None and not stream.events:
            stream.base = last + 1

    def open(self, run_id: str) -> RunStream:
        """The stream in memory of a run about to execute here (its first attempt, or
        attached), so readers wait on memory, not on the table."""
        stream = self.streams.get(run_id)
        if stream is None:
            stream = self.streams[run_id] = RunStream()
            # Readers that were waiting on the table switch to memory.
            self._wake(run_id)
        return stream

    def publish(
        self,
        run_id: str,
        event: str,
        data: Any,
        *,
        checkpoint_id: str | None = None,
        after: str = "",
    ) -> None:
        """Add an event to the run's stream. With `checkpoint_id`, `data` is that
        checkpoint's saved values (followed by the object `after`, see `Event`): it is
        recorded as the checkpoint, and encoded only for a live reader."""
        stream = self.streams.setdefault(run_id, RunStream())
        if checkpoint_id is None:
            stream.events.append(Event(stream.end, event, to_json(data)))
        else:
            stream.events.append(Event(stream.end, event, None, data, checkpoint_id, after))
        if not stream.unsaved:
            stream.unsaved_since = asyncio.get_running_loop().time()
        stream.unsaved += 1
        stream.changed.set()
        stream.changed = asyncio.Event()
        self._schedule_flush()

    def announce_later(self, key: str) -> None:
        """Tell other processes about `key` with the next flush of events, within
        FLUSH_EVERY_S, rather than with a statement of its own."""
        self._later.add(key)
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self._flush_soon())

    async def _flush_soon(self) -> None:
        """Record each run's events once the first of them is FLUSH_EVERY_S old (and the
        keys waiting for a flush), until none waits. A run that ends sooner records
        them with its end, in its own row (`take_rest`), not in a row of their own."""
        clock = asyncio.get_running_loop().time
        delay = FLUSH_EVERY_S
        while True:
            await asyncio.sleep(delay)
            # The loop's timers may fire a little early.
            due_since = clock() - FLUSH_EVERY_S + _CLOCK_SLACK_S
            due = [r for r, s in self.streams.items() if s.unsaved and s.unsaved_since <= due_since]
            try:
                await self.flush(due)
            except Exception as exc:  # SQLite busy, a connection lost: they wait for the next
                self._recording.failed(exc)
            else:
                self._recording.succeeded()
            waiting = [s.unsaved_since for s in self.streams.values() if s.unsaved]
            if not waiting and not self._later:
                return
            delay = max(min(waiting, default=clock()) + FLUSH_EVERY_S - clock(), _CLOCK_SLACK_S)

    def _take(self, run_ids: list[str]) -> dict[str, list[Event]]:
        """The events of `run_ids` not in the table yet (they count as saved from now
        on), by run (those that have some)."""
        taken: dict[str, list[Event]] = {}
        for rid in run_ids:
            stream = self.streams.get(rid)
            if stream is None or not stream.unsaved:
                continue
            taken[rid] = stream.events[len(stream.events) - stream.unsaved :]
            stream.unsaved = 0
        return taken

    async def flush(self, run_ids: list[str] | None = None) -> None:
        """Record the events of `run_ids` (None: every run's) not in the table yet, and
        announce them with the keys waiting for a flush. If the write fails they are
        not in the table yet: the next flush, or the run's end, records them."""
        taken = self._take(list(self.streams) if run_ids is None else run_ids)
        now = datetime.now(UTC)
        rows = [recorded_row(rid, pending, now) for rid, pending in taken.items()]
        keys = self._keys(list(taken))
        if not rows and not keys:
            return
        written = asyncio.get_running_loop().create_future()
        for rid in taken:
            self._writing[rid] = written
        try:
            await self._write(rows, keys, now)
        except BaseException:
            self._untake(taken, keys)
            raise
        finally:
            for rid in taken:
                if self._writing.get(rid) is written:
                    del self._writing[rid]
            written.set_result(None)

    async def _write(self, rows: list[dict[str, Any]], keys: list[str], now: datetime) -> None:
        if self.db.dialect == "postgresql":
            # One statement in autocommit mode: BEGIN, the insert, the notification and
            # COMMIT were four round trips, on every flush of a running run.
            params = {
                **_event_arrays(rows),
                "now": now,
                **notifications(keys),
            }
            await self.db.write_one(_FLUSH, params)
            return
        async with self.db.write() as session:
            if rows:
                await session.execute(_ADD_EVENTS, rows)
            await self.notifier.announce(session, *keys)

    def _untake(self, taken: dict[str, list[Event]], keys: list[str]) -> None:
        """A failed write's events and keys wait again (events published since stay
        after them)."""
        now = asyncio.get_running_loop().time()
        for rid, events in taken.items():
            stream = self.streams.get(rid)
            if stream is not None:
                stream.unsaved = stream.end - events[0].seq
                stream.unsaved_since = now
        self._later.update(keys)

    async def settled(self, run_id: str) -> None:
        """Return once no write of the run's events is in flight. What records the run's
        end comes after it: a reader that finds the run ended then finds every event in
        the table."""
        while (writing := self._writing.get(run_id)) is not None:
            await asyncio.wait([writing])

    def _keys(self, run_ids: list[str], *, ended: bool = False) -> list[str]:
        """What a transaction saving `run_ids`' events announces: their events keys (and
        their keys, if they `ended`), and the keys waiting for a flush
        (`announce_later`), which it takes."""
        keys = [*map(events_key, run_ids), *(map(run_key, run_ids) if ended else ()), *self._later]
        self._later.clear()
        return list(dict.fromkeys(keys))

    async def take_rest(
        self, run_id: str, attempt: int, end: str | None
    ) -> tuple[str | None, list[str]]:
        """The events of this attempt of the run not recorded yet, as its row keeps them
        (`folded`, for a run that ended at checkpoint `end`; they count as recorded from
        now on), and the keys that the statement recording its end with them announces:
        the run's, and any waiting for a flush. Taken once no write of its events is in
        flight (`settled`), as the end is recorded after them.
        Recorded with the end, in the row it updates anyway, they cost no row of their
        own."""
        await self.settled(run_id)
        pending = self._take([run_id]).get(run_id)
        events = folded(run_id, pending, attempt, end) if pending else None
        return events, self._keys([run_id], ended=True)

    async def close(self, run_id: str) -> None:
        """The run reached a final status: record the rest and release live readers."""
        await self.settled(run_id)
        await self.flush([run_id])
        stream = self.streams.get(run_id)
        if stream is not None:
            stream.done = stream.final = True
            stream.changed.set()
            # Late readers find everything in the table; keep memory for live runs only.
            self.streams.pop(run_id, None)
        self._wake(run_id)

    def discard(self, run_id: str) -> None:
        stream = self.streams.pop(run_id, None)
        if stream is not None:
            stream.done = True
            stream.changed.set()
        self._wake(run_id)

    def _wake(self, run_id: str) -> None:
        """This process's readers of the run in the table: its followers and waiters."""
        self.notifier.fire(events_key(run_id))
        self.notifier.fire(run_key(run_id))

    async def follow(self, run_id: str, after: int = -1) -> AsyncIterator[list[Event]]:
        """Events with seq > `after`, then live ones until the run ends, in batches of
        those ready at once (a reader sends a batch in one write)."""
        next_seq = after + 1
        clock = asyncio.get_running_loop().time
        while True:
            stream = self.streams.get(run_id)
            if stream is not None and next_seq >= stream.base:
                # Held, not looked up again: a stream that ended leaves the dict.
                sent = -COALESCE_S
                while True:
                    if next_seq < stream.end:
                        yield stream.events[next_seq - stream.base :]
                        next_seq, sent = stream.end, clock()
                    if stream.done:
                        break
                    await stream.changed.wait()
                    # Events closer together than COALESCE_S (a reply streamed token by
                    # token) go out together; one after a pause goes out at once.
                    gap = sent + COALESCE_S - clock()
                    if gap > 0 and not stream.done:
                        await asyncio.sleep(gap)
                if stream.final:
                    return
                continue  # the run left this process: it goes on elsewhere
            # Events of an earlier attempt of a run executing here now: their checkpoints
            # were saved, or never will be.
            read = partial(self._stored, run_id, next_seq, final=stream is not None)
            stored, whole = await _waiting_out(read)
            if stored:
                yield stored
                next_seq = stored[-1].seq + 1
            if stream is not None or run_id in self.streams:
                continue
            woken = self.notifier.listen(events_key(run_id))
            if await _waiting_out(partial(self._is_final, run_id)):
                # Whatever checkpoint is missing now was deleted: its events are gone.
                stored, _ = await _waiting_out(partial(self._stored, run_id, next_seq, final=True))
                if stored:
                    yield stored
                return
            if run_id not in self.streams:  # else it started here during the check
                await until(woken, POLL_EVERY_S if whole else UNSAVED_RETRY_S)

    async def wait_done(self, run_id: str, *, seen_active: bool = False) -> None:
        """Return once the run has ended (or is gone), without reading its events.
        `seen_active`: the caller has just read or created the run pending or running,
        so its status is not read again before the first wait (a queued chat turn's
        waiter made that read on every turn). Its end wakes the wait; an end between the
        caller's look and the wait, which takes a whole run within one round trip, is
        found by the poll."""
        while True:
            stream = self.streams.get(run_id)
            if stream is not None:
                while not stream.done:
                    await stream.changed.wait()
                if stream.final:
                    return
                continue  # the run left this process: it goes on elsewhere
            woken = self.notifier.listen(run_key(run_id))
            if not seen_active and await self._is_final(run_id):
                return
            seen_active = False
            if run_id not in self.streams:  # else it started here during the check
                await until(woken, POLL_EVERY_S)

    async def _stored(
        self, run_id: str, from_seq: int, *, final: bool = False
    ) -> tuple[list[Event], bool]:
        """The recorded events from `from_seq` on, `values` events with their values
        back, and whether that is all of them: it stops before an event whose
        checkpoint is not found (not committed yet), which a `final` run's are not to be
        (they were deleted): those are left out."""
        kept_since = datetime.now(UTC) - self.keep_for if self.keep_for else _EPOCH
        async with self.db.read() as session:
            recorded = list(
                await session.execute(
                    _RECORDED, {"run": run_id, "from_seq": from_seq, "kept_since": kept_since}
                )
            )
        rows = [e for r in recorded if r.seq is not None for e in recorded_events(run_id, r[3:])]
        if recorded and (first := recorded[0]).folded is not None:
            rows += unfolded_events(run_id, first.attempt, first.folded, first.end)
        rows = [e for e in rows if e[0] >= from_seq]
        wanted = list(dict.fromkeys(c for *_, c in rows if c is not None))
        values = await self.saved_values(run_id, wanted) if wanted else {}
        events: list[Event] = []
        for seq, event, data, checkpoint_id in rows:
            if checkpoint_id is None:
                events.append(Event(seq, event, data))
            elif checkpoint_id in values:
                events.append(Event(seq, event, with_values(values[checkpoint_id], data)))
            elif not final:
                return events, False
        return events, True


T = TypeVar("T")


async def _waiting_out(read: Callable[[], Awaitable[T]]) -> T:
    """`read`, tried again while the database is unavailable, for up to UNAVAILABLE_WAIT_S:
    a reader's stream outlives a database restart rather than being cut mid-run."""
    clock = asyncio.get_running_loop().time
    deadline, delay = clock() + UNAVAILABLE_WAIT_S, 0.1
    while True:
        try:
            return await read()
        except Exception as exc:
            if not database_unavailable(exc) or clock() + delay > deadline:
                raise
            log.info("a stream's read waits for the database: %r", exc)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


async def _none_saved(run_id: str, checkpoint_ids: list[str]) -> dict[str, str]:
    return {}
