"""A task cancelled in the middle of a write must not leave SQLite's write lock held, and
a run being stopped must not be cancelled a second time while it handles the first."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from app.db.database import Database
from app.runs.pool import WorkerPool
from engine.checkpoint.sql import connect


def write_lock_free(path: Path) -> bool:
    """Whether another connection can take the write lock within a second."""
    other = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()


@pytest.mark.slow
async def test_writes_cancelled_midway_leave_no_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stuck lock fails the next write after a second, not after the usual 30.
    pragmas = ("PRAGMA busy_timeout=1000", *connect._SQLITE_PRAGMAS[1:])
    monkeypatch.setattr(connect, "_SQLITE_PRAGMAS", pragmas)
    path = tmp_path / "t.db"
    db = Database(f"sqlite:///{path}")
    chance = random.Random(7)
    # Kept, as a server keeps failed tasks' exceptions: their tracebacks hold the
    # cancelled statements' cursors, which kept each closed connection (transaction and
    # write lock included) alive.
    ended: list[asyncio.Task[None]] = []
    try:
        await db.write_one(text("CREATE TABLE t (x INTEGER)"), {})

        async def write() -> None:
            async with db.write() as session:
                for _ in range(3):
                    await session.execute(text("INSERT INTO t (x) VALUES (1)"))

        async def write_one() -> None:
            await db.write_one(text("INSERT INTO t (x) VALUES (2)"), {})

        async def save() -> None:  # the checkpointer's transactions
            async with connect.write_transaction(db.engine) as conn:
                await conn.execute(text("INSERT INTO t (x) VALUES (3)"))
                await conn.execute(text("SELECT count(*) FROM t"))

        for _ in range(60):
            tasks = [
                asyncio.create_task(chance.choice((write, write_one, save))()) for _ in range(40)
            ]
            # Cancelled at any point of their transactions, some again while they clean
            # up (a run's cancel, then its heartbeat's).
            for _ in range(chance.randint(1, 3)):
                await asyncio.sleep(chance.random() * 0.01)
                for task in tasks:
                    if chance.random() < 0.5:
                        task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            ended.extend(tasks)
            await asyncio.sleep(0.05)  # cancelled connections are closed meanwhile
            assert await asyncio.to_thread(write_lock_free, path)
        started = time.monotonic()
        await db.write_one(text("INSERT INTO t (x) VALUES (3)"), {})
        assert time.monotonic() - started < 1.0
    finally:
        await db.close()


class _Db:
    dialect = "sqlite"


async def test_a_stopping_run_is_cancelled_once() -> None:
    pool = WorkerPool(_Db(), concurrency=1, lease_s=20.0, heartbeat_s=0.5)  # type: ignore[arg-type]
    handled = asyncio.Event()

    async def run() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            # The run's rollback: the heartbeat asks again meanwhile.
            await asyncio.sleep(0.05)
            handled.set()

    pool.running["r"] = task = asyncio.create_task(run())
    await asyncio.sleep(0)
    pool.stop_local("r", "rollback")
    await asyncio.sleep(0.01)
    pool.stop_local("r", "rollback")  # the next heartbeat reads the row's cancel action
    await asyncio.wait_for(task, 1.0)
    assert handled.is_set()
    assert pool.stop_actions == {"r": "rollback"}
