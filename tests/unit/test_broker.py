"""A live reader of a run's stream (app/runs/broker.py): events that come close together,
like a reply streamed token by token, reach it in few batches (each batch is one write
to the client), and an event after a pause reaches it at once: within a few turns of the
event loop, with no timer in between. (How long a delivery takes is a benchmark's
question, not a test's.)"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database
from app.db.models import RunEventRow
from app.runs.broker import Event, StreamBroker, folded, recorded_events, unfolded_events
from app.runs.notify import Notifier, events_key, run_key


async def _never_final(run_id: str) -> bool:
    return False


async def test_tokens_close_together_go_out_together_and_a_late_event_at_once(
    tmp_path: Path,
) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'broker.db'}")
    await db.prepare()
    broker = StreamBroker(db, Notifier(), _never_final)
    run_id = str(uuid.uuid4())
    broker.open(run_id)
    batches: list[list[str]] = []
    arrived: set[str] = set()

    async def read() -> None:
        async for batch in broker.follow(run_id):
            batches.append([event.event for event in batch])
            arrived.update(event.event for event in batch)

    reader = asyncio.create_task(read())
    try:
        broker.publish(run_id, "metadata", {})
        await asyncio.sleep(0.05)
        for i in range(10):  # as the scripted model streams words
            broker.publish(run_id, f"token{i}", {"text": i})
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        broker.publish(run_id, "late", {})
        for _ in range(10):  # turns of the loop, not time: the reader waits on no timer
            if "late" in arrived:
                break
            await asyncio.sleep(0)
        assert "late" in arrived
        await broker.close(run_id)
        await asyncio.wait_for(reader, 5)
    finally:
        reader.cancel()
        await db.close()
    tokens = [b for b in batches if b[0].startswith("token")]
    assert batches[0] == ["metadata"]
    assert batches[-1] == ["late"]
    assert [e for b in tokens for e in b] == [f"token{i}" for i in range(10)]
    assert len(tokens) <= 2, batches


class _Recording(Notifier):
    """Keeps what each transaction announced to other processes."""

    def __init__(self) -> None:
        super().__init__()
        self.announced: list[tuple[str, ...]] = []

    async def announce(self, session: Any, *keys: str) -> None:
        self.announced.append(keys)


async def recording(db: Database) -> tuple[StreamBroker, _Recording]:
    """A broker on `db`, made ready, and what it announces."""
    await db.prepare()
    notifier = _Recording()
    return StreamBroker(db, notifier, _never_final), notifier


async def test_events_recorded_wake_followers_and_only_the_end_wakes_waiters(
    tmp_path: Path,
) -> None:
    """Other processes' followers of a run are woken by each batch of its events; a client
    waiting only for its end (`runs/wait`, `join`) is not, but is at its end."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'broker.db'}")
    broker, notifier = await recording(db)
    run_id = str(uuid.uuid4())
    broker.open(run_id)
    try:
        broker.publish(run_id, "metadata", {})
        await broker.flush()
        broker.publish(run_id, "values", {"n": 1})
        _, at_end = await broker.take_rest(run_id, 1, None)
    finally:
        await db.close()
    assert notifier.announced == [(events_key(run_id),)]
    assert sorted(at_end) == sorted([events_key(run_id), run_key(run_id)])


async def test_the_timer_records_only_events_old_enough_and_a_run_ending_sooner_keeps_them(
    tmp_path: Path,
) -> None:
    """The flush timer records a run's events once the first of them is FLUSH_EVERY_S old;
    younger ones wait, so a run that ends before records them with its end, in its row."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'broker.db'}")
    broker, notifier = await recording(db)
    old, young = str(uuid.uuid4()), str(uuid.uuid4())
    try:
        broker.publish(old, "metadata", {"run_id": old, "attempt": 1})
        broker.publish(young, "metadata", {"run_id": young, "attempt": 1})
        # As if its first event came much later than the other run's.
        broker.streams[young].unsaved_since += 60
        for _ in range(500):
            if notifier.announced:
                break
            await asyncio.sleep(0.01)
        assert notifier.announced == [(events_key(old),)]
        assert broker.streams[old].unsaved == 0
        assert broker.streams[young].unsaved == 1
        kept, _ = await broker.take_rest(young, 1, None)
    finally:
        if broker._flushing is not None:
            broker._flushing.cancel()
        await db.close()
    assert kept == "[]"  # its metadata event alone, given back by the run's row


def test_a_run_row_keeps_a_values_event_of_its_end_as_a_reference() -> None:
    """A `values` event of the checkpoint the run ended at is `""` in its row (the row
    keeps that checkpoint), whichever place it takes; read back, every event is as it
    was recorded, and without an end every checkpoint is kept by its id."""
    run_id, first, end = (str(uuid.uuid4()) for _ in range(3))
    metadata = Event(0, "metadata", f'{{"run_id":"{run_id}","attempt":1}}')
    for events in (
        [metadata, Event(1, "values", None, {}, first), Event(2, "values", None, {}, end)],
        [metadata, Event(1, "values", None, {}, end), Event(2, "values", None, {}, first)],
        [Event(3, "values", None, {}, first, ""), Event(4, "values", None, {}, end)],
    ):
        recorded = [
            (e.seq, e.event, e.row(run_id, datetime.now(UTC))["data"], e.checkpoint_id)
            for e in events
        ]
        kept = folded(run_id, events, 1, end)
        assert end not in kept
        assert unfolded_events(run_id, 1, kept, end) == recorded
        whole = folded(run_id, events, 1, None)
        assert len(whole) == len(kept) + 22
        assert unfolded_events(run_id, 1, whole, None) == recorded


class _FlakyDatabase(Database):
    """SQLite whose writes wait for `gate` and fail while `failures` lasts: as SQLite's
    write lock held by another process, then "database is locked"."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.gate = asyncio.Event()
        self.gate.set()
        self.failures = 0
        self.attempts = 0

    @asynccontextmanager
    async def write(self, *, urgent: bool = False) -> AsyncIterator[AsyncSession]:
        self.attempts += 1
        await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise OperationalError("INSERT", {}, Exception("database is locked"))
        async with super().write(urgent=urgent) as session:
            yield session


async def _recorded(db: Database, run_id: str) -> list[str]:
    async with db.read() as session:
        rows = await session.execute(
            select(
                RunEventRow.seq,
                RunEventRow.event,
                RunEventRow.data,
                RunEventRow.checkpoint_id,
                RunEventRow.more,
            )
            .where(RunEventRow.run_id == run_id)
            .order_by(RunEventRow.seq)
        )
        return [e[1] for row in rows for e in recorded_events(run_id, tuple(row))]


async def test_a_run_end_waits_for_its_events_in_flight(tmp_path: Path) -> None:
    """A run that ends while a flush is writing its last events records its end after
    them: a reader that finds the run ended finds all its events in the table."""
    db = _FlakyDatabase(f"sqlite+aiosqlite:///{tmp_path / 'broker.db'}")
    broker, _ = await recording(db)
    run_id = str(uuid.uuid4())
    broker.open(run_id)
    try:
        broker.publish(run_id, "metadata", {})
        db.gate.clear()
        flushing = asyncio.create_task(broker.flush())
        while not db.attempts:
            await asyncio.sleep(0)
        ending = asyncio.create_task(broker.take_rest(run_id, 1, None))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not ending.done()
        db.gate.set()
        await flushing
        assert await ending == (None, [events_key(run_id), run_key(run_id)])
        assert await _recorded(db, run_id) == ["metadata"]
    finally:
        await db.close()


async def test_events_of_a_failed_flush_are_recorded_later(tmp_path: Path) -> None:
    """A flush that fails (SQLite busy) loses nothing: the timer tries again, and a run
    that ends first records them with its end; the keys it would have announced go with
    the next."""
    db = _FlakyDatabase(f"sqlite+aiosqlite:///{tmp_path / 'broker.db'}")
    broker, notifier = await recording(db)
    retried, ended = str(uuid.uuid4()), str(uuid.uuid4())
    try:
        db.failures = 1
        broker.publish(retried, "metadata", {})
        broker.announce_later("waiting")
        for _ in range(500):
            if notifier.announced:
                break
            await asyncio.sleep(0.01)
        assert db.attempts == 2
        assert notifier.announced == [(events_key(retried), "waiting")]
        assert await _recorded(db, retried) == ["metadata"]

        db.failures = 1
        broker.publish(ended, "metadata", {})
        broker.publish(ended, "values", {"n": 1})
        with pytest.raises(OperationalError):
            await broker.flush([ended])
        broker.publish(ended, "updates", {"n": 2})
        kept, _ = await broker.take_rest(ended, 1, None)
    finally:
        if broker._flushing is not None:
            broker._flushing.cancel()
        await db.close()
    assert [e[1] for e in unfolded_events(ended, 1, kept or "", None)] == [
        "metadata",
        "values",
        "updates",
    ]
