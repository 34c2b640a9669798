"""Chats whose reply comes from a subgraph, on SQLite and a real PostgreSQL: a subgraph run
per call saves in a new namespace every turn, and gets and hands back the whole history.
It shares the enclosing graph's item log instead of storing the history again, so a turn
stores its new messages, and every read, digest, prune, rollback, copy and delete follows
those references."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import func, insert, select

from engine import END, START, MessagesState, StateGraph
from engine.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from engine.checkpoint.ids import new_checkpoint_id
from engine.checkpoint.sql.models import save_table, thread_table
from engine.checkpoint.sql.records import (
    CHAINED,
    FORMAT,
    FORMAT_SHARING,
    NAMED_TASKS,
    Record,
    Shared,
)
from engine.checkpoint.sql.saver import SQLSaver
from tests.checkpoint.chat import turn_texts
from tests.checkpoint.history import stored_rows
from tests.message_samples import assert_same_messages


def one_node(node: Any, saver: BaseCheckpointSaver | None = None) -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("chat", node)
        .add_edge(START, "chat")
        .add_edge("chat", END)
        .compile(checkpointer=saver)
    )


def nested_chat(saver: BaseCheckpointSaver, answers: list[str], levels: int = 2) -> Any:
    """A chat graph whose reply comes from `levels - 1` subgraphs, one inside the other,
    each a node run per call (a new namespace every turn), as bench/storage.py's."""

    def chat(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(answers.pop(0))]}

    node: Any = chat
    for _ in range(levels - 1):
        node = one_node(node)
    return one_node(node, saver)


async def stored_bytes(saver: SQLSaver) -> int:
    """What the thread's records and digests take, compressed."""
    async with saver.engine.connect() as conn:
        total = await conn.scalar(
            select(func.coalesce(func.sum(func.length(save_table.c.data)), 0))
        )
        return int(total)


async def listed(saver: SQLSaver, thread_id: str) -> dict[str, CheckpointTuple]:
    """Every checkpoint of the thread, in every namespace, by id."""
    config = {"configurable": {"thread_id": thread_id}}
    return {t.config["configurable"]["checkpoint_id"]: t async for t in saver.alist(config)}


async def assert_reads_alike(saver: SQLSaver, thread_id: str) -> dict[str, CheckpointTuple]:
    """Every checkpoint of the thread reads the same from `saver` as from new savers (one
    that keeps what it read, one that keeps nothing), and each namespace's head as a new
    saver's first read (from the digests) too."""
    expected = await listed(saver, thread_id)
    heads: dict[str, CheckpointTuple] = {}
    for found in expected.values():  # newest first
        heads.setdefault(found.config["configurable"]["checkpoint_ns"], found)
    for ns, head in heads.items():
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        assert await SQLSaver(saver.engine).aget_tuple(config) == head, ns
    for reader in (SQLSaver(saver.engine), SQLSaver(saver.engine, cache_text=0)):
        assert await listed(reader, thread_id) == expected
    return expected


def contents(messages: list[Any]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


async def test_a_two_level_chat_s_turns_do_not_grow_with_the_thread(sql_saver: SQLSaver) -> None:
    """Each turn of a graph whose reply comes from a subgraph stores its new messages,
    not the history: the last 20 of 80 turns store at most 1.5 times what the first 20
    did (storing the history again made them 10 times as big), and the whole chat,
    digests included, less than 4 times its message text."""
    answers: list[str] = []
    graph = nested_chat(sql_saver, answers)
    config = {"configurable": {"thread_id": "chat"}}
    sizes, text = [await stored_bytes(sql_saver)], 0
    for human, ai in turn_texts(80):
        answers.append(ai)
        await graph.ainvoke({"messages": [{"role": "user", "content": human}]}, config)
        sizes.append(await stored_bytes(sql_saver))
        text += len(human.encode()) + len(ai.encode())
    first, last = sizes[20] - sizes[0], sizes[80] - sizes[60]
    assert last <= 1.5 * first, f"the first 20 turns stored {first} bytes, the last 20 {last}"
    assert sizes[80] < 4 * text, f"{sizes[80]} bytes stored for {text} of text"
    state = await graph.aget_state(config)
    assert [m.content for m in state.values["messages"]] == [
        t for pair in turn_texts(80) for t in pair
    ]


@pytest.mark.parametrize("levels", [2, 3])
async def test_subgraph_namespaces_read_prune_copy_and_delete_whole(
    sql_saver: SQLSaver, levels: int
) -> None:
    """A thread whose lists, pending writes and inputs refer to other namespaces' rows
    reads the same from every saver, with the values the graph saved: the history a
    subgraph started from and the one it handed back are its graph's. Pruning, rolling a
    run back and copying keep what the kept checkpoints refer to; deleting leaves none."""
    writer = SQLSaver(sql_saver.engine, digest_every=5)  # digests of mixed namespaces
    answers: list[str] = []
    graph = nested_chat(writer, answers, levels)
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    texts = turn_texts(6)
    for turn, (human, ai) in enumerate(texts):
        answers.append(ai)
        await graph.ainvoke(
            {"messages": [{"role": "user", "content": human}]},
            {**config, "metadata": {"run_id": f"run-{turn}", "thread_id": "t"}},
        )
    expected = [("human" if i % 2 == 0 else "ai", t) for i, t in enumerate(sum(texts, ()))]
    state = await graph.aget_state(config)
    assert contents(state.values["messages"]) == expected
    history = [s async for s in graph.aget_state_history(config)]
    assert contents(history[0].values["messages"]) == expected
    turns = history[::3]  # an input and two steps a turn
    assert [len(s.values.get("messages", [])) for s in turns] == list(range(12, 0, -2))

    saved = await assert_reads_alike(writer, "t")
    async with writer.engine.connect() as conn:
        formats = {data[0] for data in (await conn.execute(select(save_table.c.data))).scalars()}
    # The subgraphs' refer to other namespaces (and a turn's saves often share a record);
    # the graphs' tasks are pull tasks, named by their nodes.
    named = {f for f in formats if f > FORMAT_SHARING + CHAINED}
    formats = {f - NAMED_TASKS if f in named else f for f in formats}
    sharing = {FORMAT_SHARING, FORMAT_SHARING + CHAINED}
    assert named and formats & sharing and formats <= {FORMAT, FORMAT + CHAINED} | sharing
    by_id = {c.config["configurable"]["checkpoint_id"]: c for c in saved.values()}
    subgraph_inputs = [
        c
        for c in saved.values()
        if c.config["configurable"]["checkpoint_ns"] and c.metadata["step"] == 0
    ]
    assert len(subgraph_inputs) == 6 * (levels - 1)
    for first in subgraph_inputs:  # a subgraph starts from the history its graph passed in
        ns = first.config["configurable"]["checkpoint_ns"]
        enclosing = by_id[first.metadata["parents"][ns.rpartition("|")[0]]]
        assert_same_messages(
            first.checkpoint["channel_values"]["messages"],
            enclosing.checkpoint["channel_values"]["messages"],
        )
        assert first.parent_config is not None
        [(_, _, passed_in)] = [
            w
            for w in by_id[first.parent_config["configurable"]["checkpoint_id"]].pending_writes
            if w[1] == "messages"
        ]
        assert_same_messages(passed_in, enclosing.checkpoint["channel_values"]["messages"])
    handed_back = [
        value
        for c in saved.values()
        if not c.config["configurable"]["checkpoint_ns"]
        for _, channel, value in c.pending_writes
        if channel == "messages" and len(value) > 1
    ]
    assert sorted(len(v) for v in handed_back) == list(range(2, 13, 2))
    assert contents(max(handed_back, key=len)) == expected

    await writer.adelete_run("t", "run-5")
    rolled_back = await assert_reads_alike(writer, "t")
    assert {k: v for k, v in saved.items() if v.metadata.get("run_id") != "run-5"} == rolled_back
    assert contents((await graph.aget_state(config)).values["messages"]) == expected[:10]

    assert await writer.aprune(["t"], keep_last_turns=1) > 0
    pruned = await assert_reads_alike(writer, "t")
    for checkpoint_id, kept in pruned.items():
        before = rolled_back[checkpoint_id]
        assert kept.checkpoint == before.checkpoint and kept.pending_writes == before.pending_writes

    await writer.acopy_thread("t", "copy")  # records re-encoded: their metadata names "t"
    copied = await assert_reads_alike(writer, "copy")
    assert [c.checkpoint for c in copied.values()] == [c.checkpoint for c in pruned.values()]
    # The graph's own checkpoints name the thread (its caller's metadata); a subgraph's
    # keep none of what they inherit from their node's task, as LangGraph's.
    assert {c.metadata.get("thread_id") for c in copied.values()} == {"copy", None}
    assert {
        c.metadata["thread_id"]
        for c in copied.values()
        if not c.config["configurable"]["checkpoint_ns"]
    } == {"copy"}

    await writer.adelete_thread("t")
    assert await listed(SQLSaver(writer.engine), "t") == {}
    for ns in {c.config["configurable"]["checkpoint_ns"] for c in pruned.values()}:
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ns}}
        assert await SQLSaver(writer.engine).aget_tuple(config) is None
    assert await assert_reads_alike(writer, "copy") == copied
    answers.append("Still here.")
    copy_config = {"configurable": {"thread_id": "copy"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": "And now?"}]}, copy_config)
    assert contents((await graph.aget_state(copy_config)).values["messages"]) == [
        *expected[:10],
        ("human", "And now?"),
        ("ai", "Still here."),
    ]


async def last_record(saver: SQLSaver) -> Record:
    return max(await stored_rows(saver), key=lambda row: row[0])[1]


async def test_rows_only_another_namespace_refers_to_are_found_and_kept(
    sql_saver: SQLSaver,
) -> None:
    """A subgraph's first checkpoint whose history another saver put (no objects to
    compare by identity) still shares it, found by the metadata's parent checkpoint and
    compared as text: the record appends only the new message, to the log the shared
    prefix ends in (where the enclosing graph's next version would find it). When the
    enclosing graph goes another way, that row is the subgraph's alone, and a rewrite
    keeps it, with what the subgraph's pending write refers to."""
    history = [{"type": "human", "content": f"message {i} " * 20, "id": f"m{i}"} for i in range(6)]
    top = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    parent = await sql_saver.aput(top, checkpoint(history), metadata(), {"messages": 1})
    other = SQLSaver(sql_saver.engine)
    fresh = [dict(m) for m in history] + [{"type": "ai", "content": "new " * 40, "id": "m6"}]
    sub = {"configurable": {"thread_id": "t", "checkpoint_ns": "chat:1"}}
    parents = {"": parent["configurable"]["checkpoint_id"]}
    saved = await other.aput(sub, checkpoint(fresh), metadata(parents), {"messages": 1})
    [entry] = (await last_record(sql_saver)).checkpoints
    assert entry.stored["messages"] == [[0, 7, ""]]
    assert [(ns, at, n) for ns, _, at, n, _ in (await last_record(sql_saver)).items] == [("", 6, 1)]
    await other.aput_writes(saved, [("messages", fresh)], "task")
    [write] = (await last_record(sql_saver)).writes
    assert write[-1] == ("[", Shared("messages", [[0, 7, ""]]), "]")

    elsewhere = [*history, {"type": "ai", "content": "other " * 40, "id": "m7"}]
    await sql_saver.aput(parent, checkpoint(elsewhere), metadata(run="gone"), {"messages": 2})
    await sql_saver.adelete_run("t", "gone")  # one record of what is kept
    kept = await last_record(sql_saver)
    assert [(ns, at, n) for ns, _, at, n, _ in kept.items] == [("", 0, 6), ("", 6, 1)]
    for reader in (sql_saver, SQLSaver(sql_saver.engine)):
        loaded = await reader.aget_tuple(saved)
        assert loaded is not None and loaded.checkpoint["channel_values"]["messages"] == fresh
        assert loaded.pending_writes == [("task", "messages", fresh)]


def metadata(parents: dict[str, str] | None = None, run: str = "kept") -> Any:
    return {"source": "loop", "step": 1, "parents": parents or {}, "run_id": run}


def checkpoint(messages: list[Any]) -> Any:
    return {
        "v": 4,
        "id": new_checkpoint_id(),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {"messages": messages},
        "channel_versions": {"messages": 1},
        "versions_seen": {},
        "updated_channels": ["messages"],
    }


# One turn of `nested_chat` as the code before lists were shared across namespaces wrote
# it on SQLite (its records, byte for byte, all of format 1: the subgraph's namespace holds
# a copy of the history). The human message's id is "human-0", the answer's "ai-1".
OLD_THREAD = "old-nested"
OLD_RECORDS = [
    base64.b64decode(
        "Aa2Uv3LDIAyH9z5G5tCTkJFQlj5GpgwYw2XuZfW7F5JLE0P++HqdET9L1vdxGQkwWKIpmcw5GeGYjPqUjZ+AbR"
        "ySG5k21yWsRrCJFvAluuT7DK5ED24cE0+OQoP2gld4xyvayqulHeiO9FOZncpjXkUZy7FoLSIoiFbmbhWHrS+N"
        "1M6fhQsT8ftwRbtwozu7ERmP4dRXvLSnHWMpzjlwIQ8C16nuzVi38E3UAUBRzBRTMJMiGhuCGMhBgQTFjtgr5K"
        "jb/T98Bbf9kNXlw/zR/KtVQu5TOB3T99dVhrNJBsrDPM9NxHOr7kIeCfmbWZDqVl5tmv/UYL35Aw=="
    ),
    base64.b64decode(
        "AbWUPW7DMAyF9x4jc1iQon4oLz1GpwyiLCFzkdV3r5QUTW3XbZGkgBdb9ANJve+1kfIxnQanlaK06yfGEczIGQ"
        "SNA63WpUy5inPtP6RkmMcCNZBCCNTKchDIasWSD5K53cvHbf3Jq80IX1VRIPhaQCo6kNE61eJHx2l3AeHWZjME"
        "KgiiTJAwsSLZkkNcUDVDBW/tc8UUmc6U4QHjwPE5RifWf89UiJ68dyH2IjQNo87FteKwj9K+tV1sinuM9ldxjx"
        "xn/K7OrtT0pa8rfiR8OcYc7rPgDHBC36f6pPfxptypso2SFLiIBfSigGoQStWc24PizDoPAt1ju7vbof16bT3B"
        "DtPTYvuzGNoOgteSTsfy9rKRIecXwO7iafoH0bWtelhMD1LvWu8="
    ),
    base64.b64decode(
        "AaWTu3ICMQxFez6DGjGStZYsmnxEitR+DjQUGVIw+fl4SbNkl82r9Fi+I0vn9C/lY7wcfGpkoa+fGAu4whkCOg"
        "+pDT5myi14398hRcdcKjSlAkoDgTlV0IziWhQV+1qWe1lFCIkJIkZOSEPNatufIdpBmcZhAJVWITT0EMrgU6pS"
        "PMftEsvkRpYdH9AObHszRZZlltWERLyamSDbHdrTO1OdAjUOb16xCv+k1vcZdxc+Q97XY3tTN0XmVtxb4O4s+O"
        "tyH29t2+rQXAwOYsoFggsCotFAh+DJUuNa09wr4bGp06+bmlrodsTj9zarJj2/nc/X/RLw8QT0nVsvNV6O9fXp"
        "gWO3A2BP2W3+1cQH"
    ),
    base64.b64decode(
        "AaXSsU4DMQwG4L2P0RkjOz47cRcegoE5uSQqSwdUhoqXJ2lB6nG9o4IxcvTbcb7Lk5CiY84FqmcE3xlE8wmoup"
        "IrFiwRp9cwgNdaIFQUCHmQlIpm4bj9uzxyXZ7jHdpuaPJIxRbkeVNSFW+mauQmEL9qAVvAYHr9/eM+Huc3Vqle"
        "dxLGJvcS8rEY+z3UGfTc8NSs+2n2vh1vJVWy0JfGmMFlHiGgE0h1kDjSWIPIHDcx92Y3ibtW7dNsVpm+lHjcl7"
        "enBYLnA2AD/LCW8vx+OJweb5mMr0C/8b9/hs2/hvgE"
    ),
]


async def test_a_subgraph_thread_written_before_sharing_reads_and_grows(
    sql_saver: SQLSaver,
) -> None:
    async with sql_saver.engine.begin() as conn:
        thread = await conn.scalar(
            insert(thread_table)
            .values(thread_id=OLD_THREAD, put_count=4, epoch=0, last_write_at=datetime.now(UTC))
            .returning(thread_table.c.id)
        )
        await conn.execute(
            insert(save_table),
            [
                {"thread": thread, "seq": seq, "data": data}
                for seq, data in enumerate(OLD_RECORDS, 1)
            ],
        )
    old = [HumanMessage("Weather?", id="human-0"), AIMessage("Sunny.", id="ai-1")]
    answers = ["Rainy."]
    graph = nested_chat(sql_saver, answers)
    config = {"configurable": {"thread_id": OLD_THREAD}}
    assert_same_messages((await graph.aget_state(config)).values["messages"], old)
    before = await assert_reads_alike(sql_saver, OLD_THREAD)
    await graph.ainvoke({"messages": [{"role": "user", "content": "Tomorrow?"}]}, config)
    state = await graph.aget_state(config)
    assert contents(state.values["messages"]) == [
        *contents(old),
        ("human", "Tomorrow?"),
        ("ai", "Rainy."),
    ]
    after = await assert_reads_alike(sql_saver, OLD_THREAD)
    assert {k: after[k] for k in before} == before
