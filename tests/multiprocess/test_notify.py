"""Wake-ups across processes (app/runs/notify.py), with two notifiers standing in for two
processes: every key announced reaches the other side, and many keys travel in few
notifications (a flush of many runs' events was one NOTIFY per run)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy import event

from app.db.database import Database
from app.runs.notify import PostgresNotifier, run_key


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
