"""A live reader of a run's stream (app/runs/broker.py): events that come close together,
like a reply streamed token by token, reach it in few batches (each batch is one write
to the client), and an event after a pause reaches it at once."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from app.db.database import Database
from app.runs.broker import COALESCE_S, StreamBroker
from app.runs.notify import Notifier


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
    clock = asyncio.get_running_loop().time
    arrived: dict[str, float] = {}

    async def read() -> None:
        async for batch in broker.follow(run_id):
            batches.append([event.event for event in batch])
            arrived.update((event.event, clock()) for event in batch)

    reader = asyncio.create_task(read())
    try:
        broker.publish(run_id, "metadata", {})
        await asyncio.sleep(0.05)
        for i in range(10):  # as the scripted model streams words
            broker.publish(run_id, f"token{i}", {"text": i})
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        late = clock()
        broker.publish(run_id, "late", {})
        await asyncio.sleep(COALESCE_S / 5)
        assert "late" in arrived and arrived["late"] - late < COALESCE_S
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
