"""Wake-ups across processes (app/runs/notify.py), with two notifiers standing in for two
processes: every key announced reaches the other side, and many keys travel in few
notifications (a flush of many runs' events was one NOTIFY per run)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from sqlalchemy import event, text

from app.db.database import Database
from app.runs.notify import CHANNEL, QUEUE, PostgresNotifier, run_key


async def test_many_keys_reach_the_other_process_in_few_notifications(database_url: str) -> None:
    db = Database(database_url)
    listener = PostgresNotifier(db.libpq_url())
    connected = listener.listen("connected")  # every waiter wakes once the listener is up
    await listener.start()
    sent: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "pg_notify" in statement:
            sent.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", count)
    try:
        await asyncio.wait_for(connected.wait(), 10)
        keys = [run_key(str(uuid.uuid4())) for _ in range(400)]  # about 17 KB of keys
        woken = [listener.listen(key) for key in keys]
        async with db.write() as session:
            await listener.announce(session, *keys)
        await asyncio.wait_for(asyncio.gather(*(w.wait() for w in woken)), 10)
        assert len(sent) == 3  # each payload under PostgreSQL's 8,000 bytes
    finally:
        await listener.close()
        await db.engine.dispose()


async def test_a_listener_whose_connection_drops_listens_again(database_url: str) -> None:
    """When the database drops the listening connection (a restart), the notifier wakes
    every waiter (what was sent meanwhile is lost), connects again, and hears what comes
    next."""
    db = Database(database_url)
    listener = PostgresNotifier(db.libpq_url(), channels=(CHANNEL,))
    connected = listener.listen("connected")
    await listener.start()
    try:
        await asyncio.wait_for(connected.wait(), 10)
        waiting = listener.listen(run_key("waiting"))
        async with db.write() as session:
            dropped = await session.scalar(text(_DROP_LISTENERS))
        assert dropped == 1
        await asyncio.wait_for(waiting.wait(), 10)  # woken: what was sent meanwhile is lost
        for _ in range(100):
            heard = listener.listen(QUEUE)
            async with db.write() as session:
                await listener.announce(session, QUEUE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(heard.wait(), 0.2)
            if heard.is_set():
                break
        assert heard.is_set()
    finally:
        await listener.close()
        await db.engine.dispose()


# Ends the backends listening on the channel, as a database restart would.
_DROP_LISTENERS = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'
"""
