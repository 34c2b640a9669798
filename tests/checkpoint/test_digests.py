"""Digests: what a saver new to a long thread reads instead of every record, on SQLite and
a real PostgreSQL. A digest must never change what any read returns: these tests read
everything from new savers (which start from the digests) and from the savers that wrote
it (which decoded every record), and compare."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import literal, select

from engine.checkpoint.base import CheckpointTuple, checkpoint_config
from engine.checkpoint.sql import journal as journal_module
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.item_log import element_runs, joined
from engine.checkpoint.sql.journal import Journal
from engine.checkpoint.sql.models import save_table, thread_table
from engine.checkpoint.sql.records import (
    CheckpointEntry,
    Record,
    chained,
    decode,
    decode_thread,
    encode,
)
from engine.checkpoint.sql.saver import DIGEST_EVERY, SQLSaver, _Draft
from tests.checkpoint.chat import run_chat
from tests.checkpoint.history import History, message_list, stored_rows


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The stored rows that savers decode, as they decode them."""
    rows: list[bytes] = []

    def counting(data: bytes, before: bytes | None = None) -> Any:
        rows.append(data)
        return decode(data, before)

    monkeypatch.setattr(journal_module, "decode", counting)
    yield rows


def item_positions(record: Record) -> list[tuple[str, str, int]]:
    """(namespace, channel, position) of each list element a stored row appended."""
    return [
        (ns, channel, position)
        for ns, channel, start, count, _ in record.items
        for position in range(start, start + count)
    ]


async def listed(saver: SQLSaver, thread_id: str) -> dict[str, CheckpointTuple]:
    """Every checkpoint of the thread, in every namespace, by id."""
    config = {"configurable": {"thread_id": thread_id}}
    return {t.config["configurable"]["checkpoint_id"]: t async for t in saver.alist(config)}


async def assert_new_savers_read(saver: SQLSaver, *histories: History) -> None:
    """New savers read each history's checkpoints with the values they were saved with,
    and read the thread's heads, checkpoints and list as `saver` (which decoded every
    record) does: a new saver each time, so that every read is its first."""
    thread_id = histories[0].thread_id
    expected = await listed(saver, thread_id)
    for h in histories:
        assert h.head is not None
        assert await SQLSaver(saver.engine).aget_tuple(h.config()) == expected[h.head]
        for checkpoint_id in h.states:
            if checkpoint_id in expected:
                await History(SQLSaver(saver.engine), thread_id, h.ns, h.states).assert_readable(
                    checkpoint_id
                )
    for checkpoint_id, tuple_ in expected.items():
        assert await SQLSaver(saver.engine).aget_tuple(tuple_.config) == tuple_, checkpoint_id
    assert await listed(SQLSaver(saver.engine), thread_id) == expected


async def test_a_new_saver_reads_a_long_thread_s_head_from_its_digests(
    sql_saver: SQLSaver, decoded: list[bytes]
) -> None:
    """It decodes the thread's digests and the records after the last one, not the 300
    records; listing the history then decodes every record once."""
    chat = await run_chat(sql_saver, "long", 300)
    reader = SQLSaver(sql_saver.engine)
    decoded.clear()
    loaded = await reader.aget_tuple(chat.config)
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == chat.messages
    assert len(decoded) == 300 // DIGEST_EVERY + 300 % DIGEST_EVERY
    decoded.clear()
    assert len(await listed(reader, "long")) == 300
    assert len(decoded) == 300
    decoded.clear()
    await chat.turn("and one more", "an answer")  # both savers go on from what they have
    loaded = await reader.aget_tuple(chat.config)
    assert loaded is not None
    assert loaded.checkpoint["channel_values"]["messages"] == chat.messages
    assert len(decoded) == 1


async def test_a_new_saver_reads_each_turn_s_last_message_from_the_digests(
    sql_saver: SQLSaver,
) -> None:
    """From joined rows (the digests') as from a record's own: the last element of every
    checkpoint's list is what reading the checkpoint whole gives."""
    await run_chat(sql_saver, "long", 80)
    every = [v.checkpoint_id for v in await sql_saver.alist_versions("long")]
    whole = {
        checkpoint_id: messages[-1]
        for checkpoint_id, t in (await listed(sql_saver, "long")).items()
        if (messages := t.checkpoint["channel_values"].get("messages"))
    }
    assert len(whole) == 80
    assert await SQLSaver(sql_saver.engine).alast_elements("long", "messages", every) == whole
    assert await sql_saver.alast_elements("long", "messages", every) == whole


async def test_digests_keep_every_checkpoint_write_and_list_readable(
    sql_saver: SQLSaver,
) -> None:
    """A thread with branches that reuse versions, big values, edited lists, a subgraph's
    namespace, and writes kept first or replaced, some saved to older checkpoints: a
    digest every three records. New savers go on writing it from its digests, copy and
    prune it, and every read stays what it was."""
    writer = SQLSaver(sql_saver.engine, digest_every=3)
    h, child = History(writer, "t1"), History(writer, "t1", ns="child:1")
    root = await h.put({"messages": message_list(2), "big": "a" * 300, "flag": 1})
    turn = await h.put({"messages": message_list(4), "big": "b" * 300}, source="input")
    await writer.aput_writes(h.config(turn), [("messages", ["first"])], "task-1")
    await writer.aput_writes(h.config(turn), [("messages", ["again"])], "task-1")  # kept first
    for n in range(3):
        await child.put({"n": n, "notes": message_list(n + 1, start=50)})
    edited = [*message_list(3), {"type": "ai", "content": "edited " * 30, "id": "m3"}]
    branch = await h.put({"messages": [*edited, *message_list(2, start=4)], "flag": 3})
    await writer.aput_writes(h.config(branch), [("__interrupt__", ["sure?"])], "task-2")
    await h.put({"messages": message_list(4), "big": "c" * 300}, parent=turn)  # versions reused
    await writer.aput_writes(h.config(branch), [("__interrupt__", ["really?"])], "task-2")
    for n in range(4):
        await h.put({"messages": message_list(6 + n), "flag": n}, source="input")
    for n in range(4):  # records of writes only, to the head: digests hold them too
        await writer.aput_writes(h.config(h.head), [("answer", n)], f"task-{n}")
        await writer.aput_writes(h.config(h.head), [("__interrupt__", [n])], "task-9")
    assert sum(seq < 0 for seq, _ in await stored_rows(writer)) >= 4
    await assert_new_savers_read(writer, h, child)

    # A head that shares `big` with the root, which never was a head: a saver that read
    # the thread from its digests digests it without that value, and new savers read it
    # from every record.
    digesting = SQLSaver(sql_saver.engine, digest_every=1)
    assert await digesting.aget_tuple(h.config()) is not None
    fork = History(SQLSaver(sql_saver.engine, digest_every=10**9), "t1", states=h.states)
    h.head = await fork.put({"messages": message_list(3)}, parent=root)
    await digesting.aput_writes(h.config(h.head), [("note", "a note")], "task-4")
    await assert_new_savers_read(writer, h, child)

    # A branch made by a saver that never digests takes the version of `big` that the
    # next put from the head makes, and is digested when it is no head: a saver that
    # read the thread from its digests does not know it, and must not take its key.
    parent = h.head
    side = History(fork.saver, "t1", states=h.states, head=parent)
    await side.put({"flag": 7})
    await side.put({"big": "x" * 300})
    h.head = parent
    await h.put({"big": "h" * 300})
    await digesting.aput_writes(h.config(h.head), [("note", "another")], "task-5")

    # A new saver goes on from the head it read, and from an older checkpoint.
    later = SQLSaver(sql_saver.engine, digest_every=3)
    mine = History(later, "t1", states=dict(h.states), head=h.head)
    assert await later.aget_tuple(mine.config()) is not None
    for n in range(4):
        await mine.put({"messages": message_list(4 + n), "big": f"{n}" * 300}, source="input")
        await later.aput_writes(mine.config(mine.head), [("__interrupt__", [n])], "task-3")
    await mine.put({"messages": message_list(1, start=90)}, parent=branch)
    more = History(later, "t1", ns="child:1", states=dict(child.states), head=child.head)
    await more.put({"n": 9})
    await assert_new_savers_read(later, mine, more)

    # What copies or rewrites the thread keeps it readable from new savers.
    await later.acopy_thread("t1", "t2")
    await assert_new_savers_read(later, *(replace(x, thread_id="t2") for x in (mine, more)))
    assert await later.aprune(["t1"], keep_last_turns=1) > 0
    await assert_new_savers_read(later, mine, more)


async def test_savers_that_write_one_thread_at_once_digest_each_record_once(
    sql_saver: SQLSaver,
) -> None:
    """Two savers (two processes) save branches of one thread at once, each digesting
    every three records of the thread under its lock: no item row is digested twice or
    missed, and a new saver reads every branch as its writer does."""
    savers = [SQLSaver(sql_saver.engine, digest_every=3) for _ in range(2)]
    root = History(savers[0], "t1")
    await root.put({"messages": message_list(2)})
    branches = [
        History(saver, "t1", states=dict(root.states), head=root.head)
        for saver in savers
        for _ in range(3)
    ]
    for step in range(5):
        await asyncio.gather(
            *(
                b.put({"messages": message_list(3 + step, start=10 * i)})
                for i, b in enumerate(branches)
            )
        )
    rows = await stored_rows(savers[0])
    last = max(-seq for seq, _ in rows)
    digested = Counter(
        position for seq, data in rows if seq < 0 for position in item_positions(data)
    )
    assert max(digested.values()) == 1
    assert set(digested) == {
        position for seq, data in rows if 0 < seq <= last for position in item_positions(data)
    }
    expected = await listed(savers[1], "t1")
    assert await listed(SQLSaver(sql_saver.engine), "t1") == expected
    for b in branches:
        assert await SQLSaver(sql_saver.engine).aget_tuple(b.config(b.head)) == expected[b.head]


async def test_a_thread_without_digests_is_digested_at_its_next_save(
    sql_saver: SQLSaver, decoded: list[bytes]
) -> None:
    """A thread saved before digests (records only) reads whole; its next save digests
    all its records at once, and new savers then start from that digest."""
    old = SQLSaver(sql_saver.engine, digest_every=10**9)  # as the saver before digests
    chat = await run_chat(old, "old", 40)
    assert all(seq > 0 for seq, _ in await stored_rows(old))
    decoded.clear()
    loaded = await SQLSaver(sql_saver.engine).aget_tuple(chat.config)
    assert loaded is not None and loaded.checkpoint["channel_values"]["messages"] == chat.messages
    assert len(decoded) == 40
    chat.saver = SQLSaver(sql_saver.engine)
    await chat.turn("a question", "an answer")
    assert [seq for seq, _ in await stored_rows(old) if seq < 0] == [-41]
    decoded.clear()
    loaded = await SQLSaver(sql_saver.engine).aget_tuple(chat.config)
    assert loaded is not None and loaded.checkpoint["channel_values"]["messages"] == chat.messages
    assert len(decoded) == 1


async def test_a_fork_by_a_saver_that_read_the_digests_stores_only_what_it_adds(
    sql_saver: SQLSaver,
) -> None:
    """Its parent, an older checkpoint, is not in the digests: the saver decodes the
    thread's records first, so the fork shares the parent's messages instead of storing
    them all again."""
    await run_chat(sql_saver, "t1", 40)
    older = sorted(await listed(sql_saver, "t1"))[20]
    parent = await sql_saver.aget_tuple(checkpoint_config("t1", "", older))
    assert parent is not None
    reader = SQLSaver(sql_saver.engine)
    checkpoint = parent.checkpoint
    h = History(
        reader, "t1", states={older: (checkpoint["channel_versions"], checkpoint["channel_values"])}
    )
    assert await reader.aget_tuple(h.config()) is not None  # from the digests
    forked = await h.put(
        {"messages": [*h.values(older)["messages"], *message_list(1)]}, parent=older
    )
    await h.assert_readable(forked)
    [(_, _, _, count, _)] = max(await stored_rows(reader), key=lambda row: row[0])[1].items
    assert count == 1


def test_rows_that_follow_one_another_are_joined_and_read_from_inside() -> None:
    """A digest holds each run of rows as one row; a version may start inside it."""
    found = joined(
        [
            ("", "m", 0, 2, '"a",\n"b"'),
            ("", "m", 2, 1, '"c"'),
            ("", "m", 3, 2, '"d",\n"e"'),
            ("", "m", 7, 1, '"x"'),
            ("", "n", 8, 1, '"y"'),
        ]
    )
    assert found == [
        ("", "m", 0, 5, '"a",\n"b",\n"c",\n"d",\n"e"'),
        ("", "m", 7, 1, '"x"'),
        ("", "n", 8, 1, '"y"'),
    ]
    chunks = {start: (count, data) for _, _, start, count, data in found[:2]}
    assert element_runs(chunks, [[0, 2], [3, 5], [7, 8]]) == ['"a",\n"b"', '"d",\n"e"', '"x"']
    assert element_runs(chunks, [[2, 4]]) == ['"c",\n"d"']
    with pytest.raises(KeyError):
        element_runs(chunks, [[5, 6]])


async def test_a_head_read_from_the_digests_may_start_inside_a_joined_row(
    sql_saver: SQLSaver,
) -> None:
    """An edited message: the head's list is a prefix and a range that starts where its
    record's row started, inside the row that the digest made of both records' rows."""
    h = History(SQLSaver(sql_saver.engine, digest_every=2), "t1")
    messages = message_list(4)
    await h.put({"messages": messages})
    edited = {**messages[2], "content": "edited " * 30}
    await h.put({"messages": [*messages[:2], edited, messages[3]]})
    [(_, _, start, count, _)] = min(await stored_rows(sql_saver), key=lambda row: row[0])[1].items
    assert (start, count) == (0, 6)
    assert h.head is not None
    await History(SQLSaver(sql_saver.engine), "t1", states=h.states).assert_readable(h.head)


async def stored_formats(saver: SQLSaver, thread_id: str) -> dict[int, bool]:
    """Whether each stored row of the thread is chained to the record before it, by seq."""
    s, t = save_table.c, thread_table.c
    query = select(s.seq, s.data).join(thread_table, s.thread == t.id)
    async with saver.engine.connect() as conn:
        found = await conn.execute(query.where(t.thread_id == thread_id))
        return {seq: chained(data) for seq, data in found}


async def test_a_record_is_chained_to_the_one_before_unless_that_one_is_digested(
    sql_saver: SQLSaver,
) -> None:
    """Two savers (two processes) take turns on a thread, each learning of the other's
    records and digests as it catches up or from a head it was handed: every record but
    the first after a digest is deflated against the record before it, and a new saver,
    which reads the digests and the records after them, reads each head."""
    savers = [SQLSaver(sql_saver.engine, digest_every=3) for _ in range(2)]
    h = History(savers[0], "t1")
    for turn in range(14):
        h.saver = savers[turn % 2]
        if turn % 4 == 3:  # as a worker's claim hands its saver the head and last record
            async with sql_saver.engine.connect() as conn:
                seen = await conn.execute(
                    select(h.saver.head_of(literal("t1")), h.saver.last_record_of(literal("t1")))
                )
            h.saver.expect_head("t1", *seen.one())
            assert await h.saver.aget_tuple(h.config()) is not None
        await h.put({"messages": message_list(2 * turn + 2)})
        assert h.head is not None
        await History(SQLSaver(sql_saver.engine), "t1", states=h.states).assert_readable(h.head)
    formats = await stored_formats(sql_saver, "t1")
    digested = {-seq for seq in formats if seq < 0}
    assert digested == {3, 6, 9, 12}
    assert {seq for seq, chain in formats.items() if chain} == (
        {seq for seq in formats if seq > 1} - {seq + 1 for seq in digested}
    )


async def test_a_head_handed_over_with_a_digest_saved_with_its_record_is_read(
    sql_saver: SQLSaver,
) -> None:
    """`last_record_of` gives no record when a digest was saved with it: the saver one
    record behind reads, and so learns that the next record starts after a digest."""
    writer, other = (SQLSaver(sql_saver.engine, digest_every=2) for _ in range(2))
    h = History(writer, "t1")
    await h.put({"messages": message_list(2)})
    assert await other.aget_tuple(h.config()) is not None
    await h.put({"messages": message_list(4)})  # the second record, and their digest
    async with sql_saver.engine.connect() as conn:
        last = await conn.scalar(select(writer.last_record_of(literal("t1"))))
    assert last is None
    h.saver = other
    await h.put({"messages": message_list(6)})
    assert (await stored_formats(sql_saver, "t1"))[3] is False


def entry(n: int, **metadata: Any) -> Record:
    """A record of one checkpoint, `n`."""
    metadata = {"n": n, **metadata}
    checkpoint = CheckpointEntry("", str(n), None, metadata, 1, "ts", {}, {}, None, None, {})
    return Record([checkpoint])


def test_a_save_committed_after_another_loop_s_saves_leaves_the_chain_to_them() -> None:
    """Writers of one thread in two event loops (a sync `invoke()` in a node runs its
    own): one's statement lands, the other reads that record and saves the next, and
    only then does the first commit to the journal. The journal keeps the newer
    record's stream, so the next record is chained to the one truly before it."""
    journal = Journal(1, 0)
    first = encode(entry(1)).data
    journal.add(1, first)
    late = _Draft(journal, 2, entry(2), undigested=2)
    landed = late.encode()
    journal.add(2, landed)  # the other loop's catch-up
    newer = _Draft(journal, 3, entry(3), undigested=3)
    saved = newer.encode()
    newer.commit()
    late.commit()
    assert journal.seq == 3 and journal.chain == (3, newer.stream)
    last = _Draft(journal, 4, entry(4), undigested=4)
    stored = [first, landed, saved, last.encode()]
    assert all(map(chained, stored[1:]))
    assert [r.checkpoints[0].id for r in decode_thread(stored)] == ["1", "2", "3", "4"]


def test_a_save_encoded_while_another_thread_applies_a_record_can_be_read() -> None:
    """A writer in another thread (a sync `invoke()` in a node runs its own loop) may
    encode the thread's next record while a read applies the one before it, whose seq
    the journal holds before its stream. That record then stands alone rather than be
    deflated against the stream of the record before the one it follows, which no
    reader could inflate: the thread reads whole."""
    # Records of different lengths: one deflated against the wrong record reads wrong.
    records = [entry(n, said=" ".join(f"word{i}" for i in range(n * 9))) for n in (1, 2, 3)]
    journal = Journal(1, 0)
    first = encode(records[0]).data
    journal.add(1, first)
    landed = _Draft(journal, 2, records[1], undigested=2).encode()  # another writer's
    applied, go = threading.Event(), threading.Event()
    apply = journal.apply

    def paused(seq: int, record: Record) -> None:
        apply(seq, record)
        applied.set()
        go.wait(timeout=30)

    journal.apply = paused  # type: ignore[method-assign]
    reader = threading.Thread(target=journal.add, args=(2, landed))
    reader.start()
    try:
        assert applied.wait(timeout=30)
        saved = _Draft(journal, 3, records[2], undigested=3).encode()
    finally:
        go.set()
        reader.join()
    assert list(decode_thread([first, landed, saved])) == records
    assert journal.chain == (2, journal.stream)


async def test_a_save_whose_journal_another_thread_moved_goes_in_after_that_one(
    migrated_postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One statement adds a thread's record only on the seq its draft was made on. A
    writer in another thread (a sync `invoke()` in a node runs its own loop) that adds
    a record, and moves the journal, between another save's draft and its statement
    sends that save to a transaction, which catches up first. Both branches then read
    back as saved, by a new saver too: neither record went in on the other's seq."""
    saver = SQLSaver(create_engine(migrated_postgres, pool_per_call=True), owns_engine=True)
    thread_id = f"moved-{uuid.uuid4()}"
    main = History(saver, thread_id)
    first = await main.put({"messages": message_list(2)})
    other = History(saver, thread_id, states=dict(main.states), head=first)
    mine = message_list(2) + message_list(1, start=10)
    theirs = message_list(2) + message_list(1, start=20)
    encode = _Draft.encode

    def encode_after_another_write(draft: _Draft) -> bytes:
        monkeypatch.setattr(_Draft, "encode", encode)
        writer = threading.Thread(target=asyncio.run, args=(other.put({"messages": theirs}),))
        writer.start()
        writer.join()
        return encode(draft)

    monkeypatch.setattr(_Draft, "encode", encode_after_another_write)
    try:
        ours = await main.put({"messages": mine})
        fresh = SQLSaver.from_url(migrated_postgres)
        try:
            for reader in (saver, fresh):
                for checkpoint_id, expected in ((ours, mine), (other.head, theirs)):
                    config = checkpoint_config(thread_id, "", checkpoint_id)
                    saved = await reader.aget_tuple(config)
                    assert saved is not None
                    ids = [m["id"] for m in saved.checkpoint["channel_values"]["messages"]]
                    assert ids == [m["id"] for m in expected]
        finally:
            await fresh.aclose()
    finally:
        await saver.aclose()
