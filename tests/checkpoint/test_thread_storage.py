"""What a thread takes (`SQLSaver.astorage`): its rows' bytes exactly, shared out between
its checkpoints, values and writes, on SQLite and a real PostgreSQL."""

from __future__ import annotations

from sqlalchemy import func, select

from engine.checkpoint.sql.models import save_table, thread_table
from engine.checkpoint.sql.saver import DIGEST_EVERY, SQLSaver
from engine.checkpoint.sql.storage import _shares
from tests.checkpoint.chat import run_chat


async def rows_bytes(saver: SQLSaver, thread_id: str) -> tuple[int, int]:
    """The bytes of the thread's rows, and how many of its rows are digests."""
    s, t = save_table.c, thread_table.c
    query = (
        select(func.sum(func.length(s.data)), func.count().filter(s.seq < 0))
        .join(thread_table, s.thread == t.id)
        .where(t.thread_id == thread_id)
    )
    async with saver.engine.connect() as conn:
        found = (await conn.execute(query)).one()
    return int(found[0]), int(found[1])


async def test_a_long_chat_reports_its_rows_exactly(sql_saver: SQLSaver) -> None:
    await run_chat(sql_saver, "long", DIGEST_EVERY + 8)
    await run_chat(sql_saver, "other", 3)
    found = await sql_saver.astorage("long")
    stored, digests = await rows_bytes(sql_saver, "long")
    assert digests > 0  # digests are counted too
    assert found.total_bytes == stored
    parts = (found.checkpoints, found.channel_values, found.pending_writes)
    assert sum(part.bytes for part in parts) == stored
    assert found.checkpoints.bytes > 0 and found.channel_values.bytes > 0
    assert found.channel_values.bytes == sum(c.bytes for c in found.by_channel.values())
    assert found.by_channel["messages"].versions == found.checkpoints.count  # one a turn
    assert (await sql_saver.astorage("none")).total_bytes == 0


async def test_a_deleted_thread_takes_nothing(sql_saver: SQLSaver) -> None:
    await run_chat(sql_saver, "gone", 2)
    await sql_saver.adelete_thread("gone")
    assert (await sql_saver.astorage("gone")).total_bytes == 0


def test_shares_add_up_to_the_whole() -> None:
    sizes = {"a": 1, "b": 1, "c": 1}
    assert _shares(100, sizes) == {"a": 34, "b": 33, "c": 33}
    assert sum(_shares(7, {"x": 5, "y": 0, "z": 3}).values()) == 7
    assert _shares(5, {"x": 0}) == {"x": 5}
