"""What only the SQL saver promises: bounded storage, fast head reads, pruning, and staying
up through dropped connections and a server restart, on SQLite and a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from sqlalchemy import Boolean, bindparam, event, func, literal, select, text, update
from sqlalchemy.dialects import postgresql

from engine import END, START, MessagesState, StateGraph
from engine.checkpoint.base import PutWrites, checkpoint_config
from engine.checkpoint.serde.jsonplus import SerializationError, default_serializer
from engine.checkpoint.sql.models import save_table, thread_table
from engine.checkpoint.sql.records import Record, decode, encode
from engine.checkpoint.sql.saver import _CATCH_UP, DIGEST_EVERY, SQLSaver, ThreadDeletedError
from tests.checkpoint.chat import bytes_on_disk, run_chat, turn_texts
from tests.checkpoint.history import History, message_list, stored_rows
from tests.helpers import asyncpg_commands
from tests.pg import PostgresCluster


async def count_rows(saver: SQLSaver, table: Any) -> int:
    async with saver.engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)))


async def stored_records(saver: SQLSaver) -> list[Record]:
    """Every stored row in the database (records and digests), decoded."""
    return [record for _, record in await stored_rows(saver)]


def rows_after(saves: int) -> int:
    """The rows of a thread after `saves` saves: a record each, and a digest for every
    DIGEST_EVERY records."""
    return saves + saves // DIGEST_EVERY


# Storage grows with what changed.


async def test_chat_storage_stays_within_three_times_the_message_text(sql_saver: SQLSaver) -> None:
    """A 200-turn chat adds at most 3x its message text to the database (measured as the
    growth of tables that already hold a conversation, so the fixed cost of empty tables
    and pages is not counted), and one record per turn (with a digest every 32)."""
    await run_chat(sql_saver, "warm-up", 20, seed=1)
    async with sql_saver.engine.connect() as conn:
        before = await bytes_on_disk(conn)
    records_before = await count_rows(sql_saver, save_table)
    chat = await run_chat(sql_saver, "chat", 200)
    async with sql_saver.engine.connect() as conn:
        grown = await bytes_on_disk(conn) - before
    assert rows_after(200) <= await count_rows(sql_saver, save_table) - records_before
    assert await count_rows(sql_saver, save_table) - records_before < rows_after(300)
    assert grown <= 3 * chat.raw_bytes, f"{grown} bytes on disk for {chat.raw_bytes} of text"
    loaded = await sql_saver.aget_tuple(chat.config)
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == chat.messages


async def test_a_graph_s_chat_stays_within_three_times_the_message_text(
    sql_saver: SQLSaver,
) -> None:
    """What a server stores: a chat graph's turn is an input checkpoint and two step
    checkpoints with their pending writes, yet 200 turns add at most 3x their message
    text, in one record a turn as a rule (the loop gathers a fast run's saves in one batch,
    but a step slower than its wait for more splits them; with a digest every 32
    records)."""
    answers: list[str] = []

    def chat(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(answers.pop())]}

    graph = (
        StateGraph(MessagesState)
        .add_node("chat", chat)
        .add_edge(START, "chat")
        .add_edge("chat", END)
        .compile(checkpointer=sql_saver)
    )
    await run_chat(sql_saver, "warm-up", 20, seed=1)
    async with sql_saver.engine.connect() as conn:
        before = await bytes_on_disk(conn)
    records_before = await count_rows(sql_saver, save_table)
    config = {"configurable": {"thread_id": "graph"}}
    text = 0
    for human, ai in turn_texts(200):
        answers.append(ai)
        await graph.ainvoke({"messages": [{"role": "user", "content": human}]}, config)
        text += len(human.encode()) + len(ai.encode())
    async with sql_saver.engine.connect() as conn:
        grown = await bytes_on_disk(conn) - before
    assert rows_after(200) <= await count_rows(sql_saver, save_table) - records_before
    assert await count_rows(sql_saver, save_table) - records_before < rows_after(300)
    assert grown <= 3 * text, f"{grown} bytes on disk for {text} of text"
    state = await graph.aget_state(config)
    assert [m.content for m in state.values["messages"]] == [
        t for pair in turn_texts(200) for t in pair
    ]


@pytest.mark.slow
async def test_head_of_a_long_thread_is_read_with_one_query(pg_saver: SQLSaver) -> None:
    """The head of a 1,000-turn thread: its thread row, its digests and the records after
    them in one statement; read again after a turn, only the new turn's record travels.
    (bench/storage.py measures how long head reads take, against the 5 ms target.)"""
    chat = await run_chat(pg_saver, "long", 1000)
    reader = SQLSaver(pg_saver.engine)  # another process: nothing cached yet
    rows_read: list[int] = []  # per statement

    def record(conn: Any, cursor: Any, *args: Any) -> None:
        rows_read.append(cursor.rowcount)

    event.listen(pg_saver.engine.sync_engine, "after_cursor_execute", record)
    try:
        loaded = await reader.aget_tuple(chat.config)
        assert loaded is not None
        assert loaded.checkpoint["channel_values"]["messages"] == chat.messages
        assert rows_read == [1000 // DIGEST_EVERY + 1000 % DIGEST_EVERY]
        await chat.turn("one more question", "one more answer")
        rows_read.clear()
        loaded = await reader.aget_tuple(chat.config)
        assert loaded is not None
        assert loaded.checkpoint["channel_values"]["messages"] == chat.messages
        assert rows_read == [1]
    finally:
        event.remove(pg_saver.engine.sync_engine, "after_cursor_execute", record)


async def test_a_read_after_a_turn_reads_a_few_pages_however_long_the_thread(
    pg_saver: SQLSaver,
) -> None:
    """A saver that has read a thread before fetches the records written since by walking
    the primary key from its last one: a few pages, not the thread's history."""
    h = History(pg_saver, "long")
    for _ in range(10):
        ops: list[Any] = []
        for _ in range(100):
            ops.append(h.put_op({"count": len(h.states)}))
            ops.append(PutWrites(h.config(h.head), [("note", "a task's output " * 20)], "task"))
        await pg_saver.abatch(ops)
        await h.put({"count": len(h.states)})  # a record of one checkpoint after each batch
    query = _CATCH_UP.params(thread_id="long", after=15)
    sql = str(query.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    async with pg_saver.engine.connect() as conn:
        await conn.exec_driver_sql("ANALYZE")
        plan = (
            await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
        ).scalar()
    top = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    assert top["Actual Rows"] == 5
    assert top["Shared Hit Blocks"] + top["Shared Read Blocks"] < 20, top


async def test_a_batch_claims_its_thread_row_once(sql_saver: SQLSaver) -> None:
    """A step's writes and the next checkpoints, saved in one batch as the loop does, claim
    the thread's row in one statement and make one record; the saver's journal of the
    thread stays usable for the next save, which reads nothing."""
    h = History(sql_saver, "batched")
    start = await h.put({"__start__": {"messages": ["hi"]}}, source="input", step=-1)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    ops = [
        PutWrites(checkpoint_config("batched", "", start), [("messages", ["hi"])], "start"),
        h.put_op({"messages": ["hi"]}, emptied=("__start__",), step=0),
        PutWrites(checkpoint_config("batched", "", h.head), [("messages", ["hello"])], "chat"),
        h.put_op({"messages": ["hi", "hello"]}, step=1),
    ]
    event.listen(sql_saver.engine.sync_engine, "before_cursor_execute", record)
    try:
        await sql_saver.abatch(ops)
        assert sum("checkpoint_threads" in statement for statement in statements) == 1
        assert sum("checkpoint_saves" in statement for statement in statements) == 1
        statements.clear()
        await h.put({"messages": ["hi", "hello", "bye"]}, step=2)
        # The cache knew the batch's head: the put read nothing before writing.
        assert not [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    finally:
        event.remove(sql_saver.engine.sync_engine, "before_cursor_execute", record)
    async with sql_saver.engine.connect() as conn:
        put_count = await conn.scalar(select(thread_table.c.put_count))
    assert put_count == 3  # a record each: the input, the batch, the last put
    loaded = await sql_saver.aget_tuple(h.config())
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == ["hi", "hello", "bye"]
    assert [(w[0], w[2]) for w in loaded.pending_writes] == []


async def test_a_save_is_one_statement_unless_another_process_wrote(pg_saver: SQLSaver) -> None:
    """On PostgreSQL a save of a thread the saver knows claims the thread and adds its
    record in one statement, with no transaction around it. When another process wrote
    since, that statement changes nothing; the save takes a transaction, catches up
    under the claim's lock and adds its record after all."""
    h = History(pg_saver, "at-once")
    await h.put({"messages": message_list(2)}, step=-1)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(pg_saver.engine.sync_engine, "before_cursor_execute", record)
    try:
        with asyncpg_commands() as commands:
            await h.put({"messages": message_list(4)}, step=0)
        assert commands == []  # no BEGIN, no COMMIT
        [statement] = statements
        assert "UPDATE checkpoint_threads" in statement
        assert "INSERT INTO checkpoint_saves" in statement
        h.saver = SQLSaver(pg_saver.engine)  # another process writes a turn
        await h.put({"messages": message_list(6)}, step=1)
        h.saver = pg_saver
        statements.clear()
        await h.put({"messages": message_list(8)}, step=2)
        # The statement changed nothing: a transaction caught up, then added.
        assert len([s for s in statements if "checkpoint_saves" in s]) > 1
    finally:
        event.remove(pg_saver.engine.sync_engine, "before_cursor_execute", record)
    async with pg_saver.engine.connect() as conn:
        put_count = await conn.scalar(select(thread_table.c.put_count))
        seqs = (await conn.scalars(select(save_table.c.seq).order_by(save_table.c.seq))).all()
    assert put_count == 4 and seqs == [1, 2, 3, 4]
    for saver in (pg_saver, SQLSaver(pg_saver.engine)):
        loaded = await saver.aget_tuple(h.config())
        assert loaded is not None
        assert loaded.checkpoint["channel_values"]["messages"] == message_list(8)


async def test_a_new_thread_s_first_save_is_one_statement(pg_saver: SQLSaver) -> None:
    """On PostgreSQL the first save of a new thread adds its row and its first record in
    one statement, in autocommit mode, and the saver keeps the thread's journal: its next
    save is one statement too. Where the thread has a row already (another saver made it
    first, or it was deleted), or the fence refuses, the statement adds nothing, and the
    save takes a transaction, which catches up, or says why."""
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    h = History(pg_saver, "new")
    event.listen(pg_saver.engine.sync_engine, "before_cursor_execute", record)
    try:
        with asyncpg_commands() as commands:
            await h.put({"messages": message_list(2)}, step=-1)
            await h.put({"messages": message_list(4)}, step=0)
        assert commands == []  # no BEGIN, no COMMIT
        first, second = statements
        assert "INSERT INTO checkpoint_threads" in first and "checkpoint_saves" in first
        assert "UPDATE checkpoint_threads" in second
    finally:
        event.remove(pg_saver.engine.sync_engine, "before_cursor_execute", record)
    await History(SQLSaver(pg_saver.engine), "new", states=h.states).assert_readable(h.head)

    # Two savers new to one thread: one adds the row, the other catches up after it.
    mine, theirs = History(pg_saver, "both"), History(SQLSaver(pg_saver.engine), "both")
    await asyncio.gather(mine.put({"n": 1}), theirs.put({"n": 2}))
    listed = [t async for t in SQLSaver(pg_saver.engine).alist(mine.config())]
    assert {t.checkpoint["id"] for t in listed} == {mine.head, theirs.head}

    await pg_saver.adelete_thread("new")
    with pytest.raises(ThreadDeletedError):
        await History(SQLSaver(pg_saver.engine), "new").put({"n": 1})

    gate = Gate()
    gate.open = False
    with pytest.raises(PermissionError, match="closed"):
        await History(SQLSaver(pg_saver.engine, fence=gate), "fenced").put({"n": 1})
    async with pg_saver.engine.connect() as conn:
        fenced = thread_table.c.thread_id == "fenced"
        rows = await conn.scalar(select(func.count()).select_from(thread_table).where(fenced))
    assert rows == 0


async def head_seen(saver: SQLSaver, thread_id: str) -> str | None:
    """The thread's head as a caller's statement sees it (`SQLSaver.head_of`)."""
    async with saver.engine.connect() as conn:
        return await conn.scalar(select(saver.head_of(literal(thread_id))))


async def test_a_read_trusts_the_head_a_caller_just_saw(
    sql_saver: SQLSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A head that a caller's statement saw, handed over with `expect_head`, spares the
    thread's next read its statement while this saver's journal is at that head, one
    record behind it when the caller handed over that record too, or when the caller saw
    none: once, and for `HEAD_TRUSTED_S`. A head another saver moved further meanwhile
    is read; one moved after the caller saw it counts as a write made during
    the run that follows: that run's put lands after it, and both stay in the history."""
    h = History(sql_saver, "t1")
    await h.put({"messages": message_list(2)})
    await h.assert_readable(h.head)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "checkpoint_" in statement:  # not SQLite's BEGIN
            statements.append(statement)

    async def last_seen(thread_id: str) -> bytes | None:
        async with sql_saver.engine.connect() as conn:
            return await conn.scalar(select(sql_saver.last_record_of(literal(thread_id))))

    async def read() -> list[dict[str, Any]]:
        statements.clear()
        loaded = await sql_saver.aget_tuple(h.config())
        assert loaded is not None
        return loaded.checkpoint["channel_values"]["messages"]

    event.listen(sql_saver.engine.sync_engine, "before_cursor_execute", record)
    try:
        sql_saver.expect_head("t0", await head_seen(sql_saver, "t0"))  # no such thread
        statements.clear()
        assert await sql_saver.aget_tuple(History(sql_saver, "t0").config()) is None
        assert statements == []
        sql_saver.expect_head("t1", await head_seen(sql_saver, "t1"))
        assert await read() == message_list(2) and statements == []
        assert await read() == message_list(2) and len(statements) == 1  # trusted once

        theirs = History(SQLSaver(sql_saver.engine), "t1", states=h.states, head=h.head)
        await theirs.put({"messages": message_list(3)})
        sql_saver.expect_head("t1", await head_seen(sql_saver, "t1"))  # a record ahead
        assert await read() == message_list(3) and len(statements) == 1
        await theirs.put({"messages": message_list(4)})
        sql_saver.expect_head("t1", await head_seen(sql_saver, "t1"), await last_seen("t1"))
        assert await read() == message_list(4) and statements == []  # applied, not read
        await theirs.put({"messages": message_list(3)})
        elsewhere = await theirs.put({"messages": message_list(4)})
        sql_saver.expect_head("t1", await head_seen(sql_saver, "t1"), await last_seen("t1"))
        assert await read() == message_list(4) and len(statements) == 1  # two records ahead

        h.head = elsewhere
        await h.put({"messages": message_list(5)})
        seen = await head_seen(sql_saver, "t1")
        theirs.head = h.head
        moved = await theirs.put({"messages": message_list(6)})
        sql_saver.expect_head("t1", seen)  # saw the head before the other write
        assert await read() == message_list(5) and statements == []
        mine = await h.put({"messages": message_list(7)})

        monkeypatch.setattr("engine.checkpoint.sql.saver.HEAD_TRUSTED_S", 0.0)
        sql_saver.expect_head("t1", await head_seen(sql_saver, "t1"))
        assert await read() == message_list(7) and len(statements) == 1
    finally:
        event.remove(sql_saver.engine.sync_engine, "before_cursor_execute", record)
    fresh = SQLSaver(sql_saver.engine)
    listed = [t.checkpoint["id"] async for t in fresh.alist(h.config())]
    assert listed[0] == mine and moved in listed
    await History(fresh, "t1", states=h.states).assert_readable(mine)
    await sql_saver.adelete_thread("t1")
    assert await head_seen(sql_saver, "t1") is None


class Gate:
    """A fence (engine.checkpoint.sql.saver.Fence) that refuses every save while closed,
    in its transaction and as the condition of the one-statement save."""

    condition_sql = bindparam("gate_open", type_=Boolean)

    def __init__(self) -> None:
        self.open = True
        self.checked = 0

    async def __call__(self, conn: Any, ops: Any) -> None:
        self.checked += 1
        if not self.open:
            raise PermissionError("the gate is closed")

    def condition(self, ops: Any) -> tuple[Any, dict[str, Any]]:
        return self.condition_sql, {"gate_open": self.open}


async def test_a_fence_refuses_saves_in_their_one_statement_too(pg_saver: SQLSaver) -> None:
    """The fence's condition is part of the one-statement save: while it holds, the save
    is that statement; once it fails, the statement changes nothing and the save's
    transaction asks the fence, which raises, and nothing is stored."""
    gate = Gate()
    fenced = SQLSaver(pg_saver.engine, fence=gate)
    h = History(fenced, "fenced")
    await h.put({"messages": message_list(2)}, step=-1)
    checked = gate.checked  # the first save took a transaction: the thread was new
    await h.put({"messages": message_list(4)}, step=0)
    assert gate.checked == checked  # one statement, with the fence's condition
    gate.open = False
    with pytest.raises(PermissionError, match="closed"):
        await h.put({"messages": message_list(6)}, step=1)
    async with pg_saver.engine.connect() as conn:
        put_count = await conn.scalar(select(thread_table.c.put_count))
        records = await conn.scalar(select(func.count()).select_from(save_table))
    assert put_count == 2 and records == 2
    gate.open = True
    loaded = await SQLSaver(pg_saver.engine).aget_tuple(h.config())
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == message_list(4)


async def test_caches_follow_what_other_processes_delete(sql_saver: SQLSaver) -> None:
    """Records another saver rewrites or deletes (rollback, delete) free positions that new
    items reuse; this saver's journal must notice instead of serving what it saw before."""
    h = History(sql_saver, "t1")
    await h.put({"messages": message_list(2)}, run_id="r1")
    await h.put({"messages": message_list(4)}, run_id="r2")
    await h.assert_readable(h.head)  # cached here
    other = SQLSaver(sql_saver.engine)
    await other.adelete_run("t1", "r2")
    elsewhere = History(other, "t1", states=dict(h.states))
    elsewhere.head = next(iter(h.states))
    replaced = await elsewhere.put({"messages": [*message_list(2), *message_list(2, start=9)]})
    h.states.update(elsewhere.states)
    await h.assert_readable(replaced)
    continued = await h.put({"messages": [*h.values(replaced)["messages"], *message_list(1)]})
    await History(other, "t1", states=h.states).assert_readable(continued)

    await other.adelete_thread("t1")
    await other.arevive_thread("t1")
    fresh = History(other, "t1")
    again = await fresh.put({"messages": message_list(3, start=20)})
    mine = History(sql_saver, "t1", states=fresh.states)
    await mine.assert_readable(again)


async def test_savers_that_take_turns_on_a_thread_catch_up_under_its_lock(
    sql_saver: SQLSaver,
) -> None:
    """Two processes writing one thread in turn, and at once: each put catches up with
    the records the other wrote before building its own, so every version reads whole
    from both, and appending a message stores just that message."""
    other = SQLSaver(sql_saver.engine)
    mine, theirs = History(sql_saver, "t1"), History(other, "t1")
    messages: list[dict[str, Any]] = []
    for turn in range(6):
        h = (mine, theirs)[turn % 2]
        h.head = (theirs, mine)[turn % 2].head
        messages = [*messages, *message_list(1, start=turn)]
        await h.put({"messages": messages})
        (theirs, mine)[turn % 2].states.update(h.states)
    for checkpoint_id in mine.states:
        await mine.assert_readable(checkpoint_id)
        await History(other, "t1", states=mine.states).assert_readable(checkpoint_id)
    assert [len(r.items) for r in await stored_records(sql_saver)] == [1] * 6
    assert all(r.items[0][3] == 1 for r in await stored_records(sql_saver))

    branches = [History(s, "t2") for s in (sql_saver, other) for _ in range(5)]
    await asyncio.gather(*(b.put({"n": i}) for i, b in enumerate(branches)))
    listed = [t async for t in sql_saver.alist(branches[0].config())]
    assert len(listed) == 10 and len(await stored_records(sql_saver)) == 16
    for b in branches:
        await b.assert_readable(b.head)


async def test_a_save_that_rolls_back_is_never_read(sql_saver: SQLSaver) -> None:
    """The saver's journal of a thread learns of a record at its commit: a batch that
    fails after inserting the record (its next thread was deleted) leaves no trace for
    readers in the same process, and the next put goes on from the last committed one."""
    h, gone = History(sql_saver, "a-live"), History(sql_saver, "b-deleted")
    first = await h.put({"messages": message_list(2)})
    await gone.put({"n": 1})
    await sql_saver.adelete_thread("b-deleted")
    with pytest.raises(ThreadDeletedError):
        await sql_saver.abatch([h.put_op({"messages": message_list(3)}), gone.put_op({"n": 2})])
    loaded = await sql_saver.aget_tuple(h.config())
    assert loaded is not None and loaded.checkpoint["id"] == first
    h.head = first
    await h.assert_readable(await h.put({"messages": message_list(4)}))
    assert len(await stored_records(sql_saver)) == 2


async def test_every_read_builds_objects_of_its_own(sql_saver: SQLSaver) -> None:
    """A saver prepares each item row once, yet no two reads share a message or a
    container: for the saver that wrote the rows, for one that reads them first and for
    one that keeps nothing, for messages of plain fields and others, and where a version
    ends inside a row or takes rows that are apart."""
    call = {"name": "f", "args": {"x": [1]}, "id": "c1", "type": "tool_call"}
    first = [
        HumanMessage("hi", id="1"),
        AIMessage("", id="2", tool_calls=[call]),
        7,
        "text",
        {"plain": [1]},
        {"role": "user", "n": 1},
    ]
    more = [
        AIMessage("bye", id="3", response_metadata={"n": 1}),
        ToolMessage("ok", tool_call_id="c1", id="4", name=None),
        RemoveMessage(id="1"),
        [1, 2],
        None,
    ]
    h = History(sql_saver, "t1")
    one = await h.put({"messages": first})
    two = await h.put({"messages": [*first, *more]})
    cut = await h.put({"messages": [*first[:3], HumanMessage("again", id="5")]}, parent=one)
    fresh, forgetful = SQLSaver(sql_saver.engine), SQLSaver(sql_saver.engine, cache_text=0)
    for saver in (sql_saver, fresh, forgetful):
        for checkpoint_id in (cut, two, one):
            reads = []
            for _ in range(2):
                loaded = await saver.aget_tuple(h.config(checkpoint_id))
                assert loaded is not None
                reads.append(loaded.checkpoint["channel_values"]["messages"])
            assert reads[0] == reads[1] == h.values(checkpoint_id)["messages"]
            for a, b in zip(*reads, strict=True):
                assert a is not b or isinstance(a, int | str | type(None))
            reads[0][0].additional_kwargs["seen"] = True
            reads[0][1].tool_calls[0]["args"]["x"].append(2)
            for element in reads[0]:
                if isinstance(element, dict):
                    element["seen"] = True
            again = await saver.aget_tuple(h.config(checkpoint_id))
            assert again is not None
            assert again.checkpoint["channel_values"]["messages"] == reads[1]


async def test_a_saver_with_little_room_still_builds_whole_lists(sql_saver: SQLSaver) -> None:
    """A thread that fits the saver's cache, but not once its new rows are prepared, stays
    whole for the read that grows it; another thread's read then evicts it."""
    first, second = HumanMessage("a question " * 10, id="1"), AIMessage("an answer " * 10, id="2")
    first_text, second_text = (len(default_serializer.dumps(m)) for m in (first, second))
    h = History(sql_saver, "t1")
    one = await h.put({"messages": [first]})
    # Room for the first row prepared (three times its text) and the second row's text.
    small = SQLSaver(sql_saver.engine, cache_text=3 * first_text + second_text)
    loaded = await small.aget_tuple(h.config(one))
    assert loaded is not None and loaded.checkpoint["channel_values"]["messages"] == [first]
    two = await h.put({"messages": [first, second]})
    loaded = await small.aget_tuple(h.config(two))
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == [first, second]
    await History(sql_saver, "t2").put({"messages": [second]})
    assert await small.aget_tuple(History(sql_saver, "t2").config()) is not None
    loaded = await small.aget_tuple(h.config(two))  # decoded again
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == [first, second]


async def test_a_stored_message_its_class_refuses_is_reported_as_bad_data(
    sql_saver: SQLSaver,
) -> None:
    h = History(sql_saver, "t1")
    content = "a tool's long output " * 10  # long enough for the item log
    first = await h.put({"messages": [ToolMessage(content, tool_call_id="c1", id="1")]})
    stored = {"$t": "msg", "v": {"content": content, "type": "tool", "tool_call_id": None}}
    async with sql_saver.engine.begin() as conn:
        data, *others = (await conn.execute(select(save_table.c.data))).scalars().all()
        record = decode(data).record
        assert not others and len(record.items) == 1
        ns, channel, seq, count, _ = record.items[0]
        record.items = [(ns, channel, seq, count, json.dumps(stored))]
        await conn.execute(update(save_table).values(data=encode(record).data))
    for saver in (SQLSaver(sql_saver.engine), SQLSaver(sql_saver.engine)):
        for _ in range(2):  # as the rows are prepared, and once they are
            with pytest.raises(SerializationError, match="validation error for ToolMessage"):
                await saver.aget_tuple(h.config(first))


# Pruning.


async def chat_turn(h: History, n: int, *, parent: str | None = "head") -> dict[str, str]:
    """One turn as the loop saves it: input, the human message, the AI answer."""
    human = {"type": "human", "content": f"question {n} " * 20, "id": f"h{n}"}
    answer = {"type": "ai", "content": f"answer {n} " * 30, "id": f"a{n}"}
    start = await h.put(
        {"__start__": {"messages": [human]}}, parent=parent, source="input", step=-1
    )
    before = h.values(start).get("messages", [])
    asked = await h.put({"messages": [*before, human]}, emptied=("__start__",), step=0)
    answered = await h.put({"messages": [*before, human, answer]}, step=1)
    return {"input": start, "asked": asked, "answered": answered}


async def test_prune_keeps_latest_turns_branches_and_interrupts(sql_saver: SQLSaver) -> None:
    h = History(sql_saver, "t1")
    t1 = await chat_turn(h, 1)
    regenerated = {"type": "ai", "content": "another answer " * 20, "id": "a1b"}
    tip = await h.put(
        {"messages": [*h.values(t1["asked"])["messages"], regenerated]}, parent=t1["asked"]
    )
    t2 = await chat_turn(h, 2, parent=t1["answered"])
    await sql_saver.aput_writes(h.config(t2["asked"]), [("__interrupt__", ["sure?"])], "task")
    await chat_turn(h, 3)
    t4 = await chat_turn(h, 4)
    t5 = await chat_turn(h, 5)
    other = History(sql_saver, "t2")
    await chat_turn(other, 1)
    items_before = sum(len(r.items) for r in await stored_records(sql_saver))

    assert await sql_saver.aprune(["t1"], keep_last_turns=2) == 7

    kept = [t1["asked"], tip, t2["asked"], *t4.values(), *t5.values()]
    listed = [t async for t in sql_saver.alist(h.config())]
    assert [t.config["configurable"]["checkpoint_id"] for t in listed] == sorted(kept)[::-1]
    for checkpoint_id in kept:
        await h.assert_readable(checkpoint_id)
    parents = {
        t.config["configurable"]["checkpoint_id"]: (t.parent_config or {}).get("configurable", {})
        for t in listed
    }
    assert parents[t1["asked"]] == {}
    assert parents[tip]["checkpoint_id"] == t1["asked"]
    assert parents[t2["asked"]]["checkpoint_id"] == t1["asked"]
    assert parents[t4["input"]]["checkpoint_id"] == t2["asked"]
    interrupted = await sql_saver.aget_tuple(h.config(t2["asked"]))
    assert interrupted is not None
    assert interrupted.pending_writes == [("task", "__interrupt__", ["sure?"])]
    # Values only deleted checkpoints used are gone: the inputs of turns 1 to 3 (turns 4
    # and 5 and the other thread keep theirs); every message is still in some state.
    kept_records = await stored_records(sql_saver)
    assert sum(len(r.blobs) for r in kept_records) == 3
    assert sum(len(r.items) for r in kept_records) == items_before

    await chat_turn(h, 6)  # the thread goes on
    await h.assert_readable(h.head)
    assert await sql_saver.aprune(keep_last_turns=2) == 3  # turn 4, in every thread over
    assert await sql_saver.aprune(keep_last_turns=2) == 0
    await h.assert_readable(tip)


async def test_prune_takes_langgraphs_strategies(sql_saver: SQLSaver) -> None:
    """`aprune(thread_ids, strategy=...)` as LangGraph's Postgres saver takes it (a
    project's cleanup job): "keep_latest" leaves each namespace's latest checkpoint, as
    a root; "delete" deletes the threads."""
    h = History(sql_saver, "t1")
    for n in range(3):
        last = await chat_turn(h, n + 1)
    other = History(sql_saver, "t2")
    await chat_turn(other, 1)

    assert await sql_saver.aprune(["t1"], strategy="keep_latest") == 8
    listed = [t async for t in sql_saver.alist(h.config())]
    assert [t.config["configurable"]["checkpoint_id"] for t in listed] == [last["answered"]]
    assert listed[0].parent_config is None
    await h.assert_readable(last["answered"])
    await chat_turn(h, 4, parent=last["answered"])  # the thread goes on from it

    assert await sql_saver.aprune(["t2", "nobody"], strategy="delete") == 3
    assert await sql_saver.aget_tuple(other.config()) is None
    assert len([t async for t in sql_saver.alist(h.config())]) == 4
    with pytest.raises(ValueError, match="'keep_some'"):
        await sql_saver.aprune(["t1"], strategy="keep_some")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="thread ids"):
        await sql_saver.aprune(strategy="delete")
    with pytest.raises(TypeError, match="keep_last_turns"):
        await sql_saver.aprune(["t1"])


async def test_idle_threads_are_deleted_for_good(sql_saver: SQLSaver) -> None:
    idle, active = History(sql_saver, "idle"), History(sql_saver, "active")
    idle_id = await idle.put({"a": 1})
    active_id = await active.put({"a": 1})
    async with sql_saver.engine.begin() as conn:
        await conn.execute(
            update(thread_table)
            .where(thread_table.c.thread_id == "idle")
            .values(last_write_at=datetime.now(UTC) - timedelta(days=2))
        )
    assert await sql_saver.adelete_idle_threads(timedelta(days=1)) == ["idle"]
    assert await sql_saver.aget_tuple(idle.config()) is None
    with pytest.raises(ThreadDeletedError):
        await idle.put({"a": 2}, parent=idle_id)
    await active.assert_readable(active_id)
    assert await sql_saver.adelete_idle_threads(timedelta(days=1)) == []


async def test_a_deleted_thread_id_can_be_revived_on_purpose(sql_saver: SQLSaver) -> None:
    h = History(sql_saver, "t1")
    await h.put({"a": 1})
    await sql_saver.adelete_thread("t1")
    with pytest.raises(ThreadDeletedError):
        await History(sql_saver, "t1").put({"a": 1})
    await sql_saver.arevive_thread("t1")
    fresh = History(sql_saver, "t1")
    await fresh.assert_readable(await fresh.put({"a": 2}))
    assert len([t async for t in sql_saver.alist(fresh.config())]) == 1


# Connections and concurrency (PostgreSQL).


async def terminate_other_connections(url: str) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        row = await cursor.fetchone()
        return int(row[0]) if row else 0


async def test_dropped_connections_are_replaced_on_the_next_call(
    pg_saver: SQLSaver, migrated_postgres: str
) -> None:
    h = History(pg_saver, "t1")
    first = await h.put({"messages": [{"content": "x" * 200}]})
    assert await terminate_other_connections(migrated_postgres) >= 1
    await h.assert_readable(first)
    assert await terminate_other_connections(migrated_postgres) >= 1
    second = await h.put({"messages": [{"content": "y" * 200}]})
    await h.assert_readable(second)


async def test_writers_of_other_threads_are_never_blocked(
    pg_saver: SQLSaver, migrated_postgres: str
) -> None:
    """A thread's writers queue on its own row lock; no lock is shared by all threads."""
    busy, free = History(pg_saver, "busy"), History(pg_saver, "free")
    await busy.put({"a": 1})
    await free.put({"a": 1})
    async with await psycopg.AsyncConnection.connect(migrated_postgres) as lock:
        await lock.execute("SELECT 1 FROM checkpoint_threads WHERE thread_id = 'busy' FOR UPDATE")
        queued = asyncio.create_task(busy.put({"a": 2}))
        await asyncio.wait_for(free.put({"a": 2}), timeout=5)
        await asyncio.sleep(0.2)
        assert not queued.done()
        await lock.rollback()
    await asyncio.wait_for(queued, timeout=5)
    await busy.assert_readable(busy.head)


@pytest.mark.slow
async def test_server_restart_under_load_loses_no_committed_checkpoint(
    pg_saver: SQLSaver, postgres_cluster: PostgresCluster | None
) -> None:
    if postgres_cluster is None:
        pytest.skip("restarts only the test session's own cluster")
    histories = [History(pg_saver, f"thread-{i}") for i in range(10)]
    halfway = asyncio.Event()

    async def write(h: History) -> None:
        messages: list[dict[str, Any]] = []
        for step in range(40):
            messages = [*messages, {"type": "human", "content": f"message {step} " * 10}]
            await h.put({"messages": messages}, step=step)
            if step == 10:
                halfway.set()
            await asyncio.sleep(0.01)

    async def server_started() -> Any:
        async with pg_saver.engine.connect() as conn:
            return await conn.scalar(text("SELECT pg_postmaster_start_time()"))

    before = await server_started()
    writers = asyncio.gather(*(write(h) for h in histories))
    await halfway.wait()
    await asyncio.get_running_loop().run_in_executor(None, postgres_cluster.restart)
    await writers
    assert await server_started() != before
    for h in histories:
        listed = [t async for t in pg_saver.alist(h.config())]
        assert [t.config["configurable"]["checkpoint_id"] for t in listed] == list(h.states)[::-1]
        await h.assert_readable(h.head)


async def test_reads_run_while_writes_commit(sql_saver: SQLSaver) -> None:
    """Readers see a consistent head while a writer commits (WAL on SQLite)."""
    h = History(sql_saver, "t1")
    await h.put({"a": 0})

    async def read_many() -> None:
        for _ in range(30):
            loaded = await sql_saver.aget_tuple(h.config())
            assert loaded is not None
            assert loaded.checkpoint["channel_values"] == h.values(loaded.checkpoint["id"])

    async def write_many() -> None:
        for i in range(30):
            await h.put({"a": i})

    await asyncio.gather(read_many(), write_many(), read_many())
    await h.assert_readable(h.head)
