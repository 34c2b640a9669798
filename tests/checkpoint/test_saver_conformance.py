"""One contract for every saver: InMemorySaver, SQLite and PostgreSQL.

No database is mocked: the SQL savers run on a real SQLite file and a real PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from engine.checkpoint.base import BaseCheckpointSaver, checkpoint_config
from engine.checkpoint.memory import InMemorySaver
from engine.checkpoint.sql.saver import ThreadDeletedError
from tests.checkpoint.history import History, message_list


@contextlib.contextmanager
def known_gap(saver: BaseCheckpointSaver, reason: str) -> Iterator[None]:
    """Expect the block to fail on InMemorySaver (a gap reported upstream), and fail the
    test once it passes there, so the marker goes when the gap is closed."""
    if not isinstance(saver, InMemorySaver):
        yield
        return
    try:
        yield
    except (AssertionError, pytest.fail.Exception):
        pytest.xfail(reason)
    pytest.fail(f"InMemorySaver no longer has this gap, drop known_gap: {reason}")


async def history_of(saver: BaseCheckpointSaver, config: dict[str, Any], **kw: Any) -> list[Any]:
    return [t async for t in saver.alist(config, **kw)]


def ids(tuples: list[Any]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


# Put and get.


async def test_unknown_thread_and_checkpoint_are_none(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    assert await saver.aget_tuple(h.config()) is None
    await h.put({"a": 1})
    assert await saver.aget_tuple(h.config(str(uuid.uuid4()))) is None
    assert (
        await saver.aget_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": "x"}}) is None
    )


async def test_put_then_get_latest_and_by_id(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    first = await h.put({"a": 1, "b": "x"}, source="input", step=-1)
    second = await h.put({"a": 2}, step=0, run_id="run-1", custom={"k": [1, 2]})

    latest = await saver.aget_tuple(h.config())
    assert latest is not None
    assert latest.config == checkpoint_config("t1", "", second)
    assert latest.parent_config == checkpoint_config("t1", "", first)
    assert latest.checkpoint["channel_values"] == {"a": 2, "b": "x"}
    assert latest.checkpoint["updated_channels"] == ["a"]
    assert latest.metadata == {
        "source": "loop",
        "step": 0,
        "parents": {},
        "run_id": "run-1",
        "custom": {"k": [1, 2]},
    }
    assert latest.pending_writes == []

    older = await saver.aget_tuple(h.config(first))
    assert older is not None
    assert older.parent_config is None
    assert older.checkpoint["channel_values"] == {"a": 1, "b": "x"}
    assert older.metadata == {"source": "input", "step": -1, "parents": {}}


async def test_unchanged_channels_are_shared_and_emptied_ones_vanish(
    saver: BaseCheckpointSaver,
) -> None:
    h = History(saver, "t1")
    first = await h.put({"big": "x" * 1000, "small": 1, "items": message_list(4)})
    second = await h.put({"small": 2})
    third = await h.put({}, emptied=("big",))
    for checkpoint_id in (first, second, third):
        await h.assert_readable(checkpoint_id)
    assert "big" not in h.values(third)


async def test_values_of_every_kind_round_trip(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    values = {
        "messages": [
            HumanMessage(content="hi " * 50, id="h1"),
            AIMessage(content="hello " * 50, id="a1"),
        ],
        "tuple": (1, "two", None),
        "when": dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC),
        "nested": {"list": [{"a": 1}], "text": "é" * 300},
        "none": None,
        "empty_list": [],
        "small_list": [1, 2],
    }
    checkpoint_id = await h.put(values)
    loaded = await saver.aget_tuple(h.config(checkpoint_id))
    assert loaded is not None
    # A tuple comes back as a list, as from LangGraph's savers.
    assert loaded.checkpoint["channel_values"] == {**values, "tuple": [1, "two", None]}
    assert isinstance(loaded.checkpoint["channel_values"]["messages"][0], HumanMessage)


async def test_namespaces_are_separate(saver: BaseCheckpointSaver) -> None:
    root = History(saver, "t1")
    child = History(saver, "t1", ns="child:1")
    await root.put({"a": "root"})
    child_id = await child.put({"a": "child"})
    root_id = await root.put({"a": "root 2"})
    assert (await saver.aget_tuple(root.config())).config["configurable"][
        "checkpoint_id"
    ] == root_id
    assert (await saver.aget_tuple(child.config())).config["configurable"][
        "checkpoint_id"
    ] == child_id
    await child.assert_readable(child_id)


# Lists: the item log.


async def test_growing_list_versions_stay_readable(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    messages: list[dict[str, Any]] = []
    written = []
    for turn in range(6):
        messages = [*messages, *message_list(2, start=2 * turn)]
        written.append(await h.put({"messages": messages}, step=turn))
    for checkpoint_id in written:
        await h.assert_readable(checkpoint_id)


async def test_replaced_and_removed_elements(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    messages = message_list(6)
    first = await h.put({"messages": messages})
    edited = [*messages[:2], {**messages[2], "content": "edited " * 30}, *messages[3:]]
    second = await h.put({"messages": edited})
    third = await h.put({"messages": edited[:3] + edited[4:]})
    fourth = await h.put({"messages": []})
    for checkpoint_id in (first, second, third, fourth):
        await h.assert_readable(checkpoint_id)


async def test_many_edits_in_the_middle(saver: BaseCheckpointSaver) -> None:
    """Each version edits a later element: the stored ranges fragment until the version is
    written out whole again, and every version stays readable."""
    h = History(saver, "t1")
    messages = message_list(30)
    written = [await h.put({"messages": messages})]
    for position in range(1, 25):
        messages = [
            *messages[:position],
            {"edited": position, "text": "x" * 50},
            *messages[position + 1 :],
        ]
        written.append(await h.put({"messages": messages}))
    for checkpoint_id in written:
        await h.assert_readable(checkpoint_id)


async def test_fork_keeps_both_branches(saver: BaseCheckpointSaver) -> None:
    """A regenerate from an older checkpoint writes a sibling branch that reuses the same
    channel versions for different values; both branches must stay readable."""
    h = History(saver, "t1")
    turn1 = await h.put({"messages": message_list(2), "input": "x" * 300})
    turn2 = await h.put({"messages": message_list(4), "input": "y" * 300})
    branch_a = await h.put({"messages": message_list(6), "input": "z" * 300})
    regenerated = [*message_list(4), {"type": "ai", "content": "other " * 40, "id": "r"}]
    branch_b = await h.put({"messages": regenerated, "input": "w" * 300}, parent=turn2)
    deeper_b = await h.put({"messages": [*regenerated, *message_list(2, start=10)]})
    with known_gap(saver, "InMemorySaver keys blobs by version, which the fork reuses"):
        for checkpoint_id in (turn1, turn2, branch_a, branch_b, deeper_b):
            await h.assert_readable(checkpoint_id)
    assert ids(await history_of(saver, h.config())) == [deeper_b, branch_b, branch_a, turn2, turn1]


async def test_values_survive_a_new_saver(saver: BaseCheckpointSaver) -> None:
    """What one process wrote, another reads and continues (no cache needed)."""
    if isinstance(saver, InMemorySaver):
        pytest.skip("memory is not shared between savers")
    h = History(saver, "t1")
    await h.put({"messages": message_list(4)})
    other = type(saver)(saver.engine)
    h.saver = other
    await other.aget_tuple(h.config())  # reads the head, as a new run would
    continued = await h.put({"messages": message_list(6)})
    forked = await h.put({"messages": message_list(3)}, parent=continued)
    for checkpoint_id in h.states:
        await h.assert_readable(checkpoint_id)
    assert forked in h.states


# Listing.


async def test_list_newest_first_with_before_limit_and_filter(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    made = [
        await h.put({"a": 0}, source="input", step=-1),
        await h.put({"a": 1}, step=0, run_id="r1"),
        await h.put({"a": 2}, step=1, run_id="r1", flag=True, tags=["x"]),
        await h.put({"a": 3}, source="input", step=-1),
        await h.put({"a": 4}, step=0, run_id="r2", score=1.5, note=None),
    ]
    await History(saver, "t2").put({"a": "other thread"})
    newest_first = list(reversed(made))

    assert ids(await history_of(saver, h.config())) == newest_first
    assert ids(await history_of(saver, h.config(), limit=2)) == newest_first[:2]
    assert ids(await history_of(saver, h.config(), before=h.config(made[3]))) == newest_first[2:]
    assert ids(await history_of(saver, h.config(made[2]))) == [made[2]]
    assert ids(await history_of(saver, h.config(), filter={"source": "input"})) == [
        made[3],
        made[0],
    ]
    assert ids(await history_of(saver, h.config(), filter={"source": "input"}, limit=1)) == [
        made[3]
    ]
    assert ids(await history_of(saver, h.config(), filter={"step": 0, "run_id": "r1"})) == [made[1]]
    assert ids(await history_of(saver, h.config(), filter={"flag": True})) == [made[2]]
    assert ids(await history_of(saver, h.config(), filter={"tags": ["x"]})) == [made[2]]
    assert ids(await history_of(saver, h.config(), filter={"score": 1.5})) == [made[4]]
    assert ids(await history_of(saver, h.config(), filter={"note": None}, limit=10)) == (
        newest_first
    )
    assert await history_of(saver, h.config(), filter={"source": "fork"}) == []
    everything = await history_of(saver, None)
    assert len(everything) == 6
    assert {t.config["configurable"]["thread_id"] for t in everything} == {"t1", "t2"}


async def test_list_pages_through_long_histories(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    made = [await h.put({"a": i}, step=i) for i in range(150)]
    listed = await history_of(saver, h.config())
    assert ids(listed) == list(reversed(made))
    assert [t.checkpoint["channel_values"]["a"] for t in listed] == list(reversed(range(150)))
    odd = await history_of(saver, h.config(), filter={"step": 7}, limit=5)
    assert ids(odd) == [made[7]]


# Pending writes.


async def test_pending_writes(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    checkpoint_id = await h.put({"a": 1})
    config = h.config(checkpoint_id)
    await saver.aput_writes(config, [("a", 10), ("b", "x" * 500)], "task-2", "path")
    await saver.aput_writes(config, [("a", 5)], "task-1")
    await saver.aput_writes(config, [("a", 99), ("b", "retry")], "task-2")  # a retry: ignored
    loaded = await saver.aget_tuple(h.config())
    assert loaded is not None
    assert loaded.pending_writes == [
        ("task-1", "a", 5),
        ("task-2", "a", 10),
        ("task-2", "b", "x" * 500),
    ]
    listed = await history_of(saver, h.config())
    assert listed[0].pending_writes == loaded.pending_writes

    with pytest.raises(ValueError, match="checkpoint_id"):
        await saver.aput_writes(h.config(), [("a", 1)], "task-3")


async def test_interrupt_and_resume_writes_replace_older_ones(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    config = h.config(await h.put({"a": 1}))
    await saver.aput_writes(config, [("__interrupt__", ["first question"])], "task")
    await saver.aput_writes(config, [("__interrupt__", ["second question"])], "task")
    await saver.aput_writes(config, [("__resume__", "answer 1")], "task")
    await saver.aput_writes(config, [("__resume__", "answer 2")], "task")
    loaded = await saver.aget_tuple(config)
    assert loaded is not None
    assert loaded.pending_writes == [
        ("task", "__resume__", "answer 2"),
        ("task", "__interrupt__", ["second question"]),
    ]


# Delete and copy.


async def test_delete_thread(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    await h.put({"messages": message_list(3), "big": "x" * 500})
    await History(saver, "t1", ns="child:1").put({"a": 1})
    other = History(saver, "t2")
    other_id = await other.put({"messages": message_list(2)})
    await saver.aput_writes(h.config(h.head), [("a", 1)], "task")

    await saver.adelete_thread("t1")
    assert await saver.aget_tuple(h.config()) is None
    assert await history_of(saver, h.config()) == []
    await other.assert_readable(other_id)


async def test_deleted_thread_stays_deleted(saver: BaseCheckpointSaver) -> None:
    """A run that was still finishing must not bring a deleted thread back."""
    h = History(saver, "t1")
    checkpoint_id = await h.put({"a": 1})
    await saver.adelete_thread("t1")
    with known_gap(saver, "InMemorySaver has no tombstone: a late write recreates the thread"):
        with pytest.raises(ThreadDeletedError):
            await h.put({"a": 2}, parent=checkpoint_id)
        with pytest.raises(ThreadDeletedError):
            await saver.aput_writes(h.config(checkpoint_id), [("a", 3)], "task")
        with pytest.raises(ThreadDeletedError):
            await History(saver, "t1").put({"a": 1}, parent=None)
        with pytest.raises(ThreadDeletedError):  # an empty copy would look like a thread
            await saver.acopy_thread("t1", "t2")
    assert await saver.aget_tuple(h.config()) is None


async def test_delete_run_rolls_back_what_the_run_wrote(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    first = await h.put({"messages": message_list(2)}, run_id="r1")
    second = await h.put({"messages": message_list(4)}, run_id="r1")
    await saver.aput_writes(h.config(second), [("__resume__", "yes")], "task")  # by run r2
    rolled_back = await h.put({"messages": message_list(6), "big": "x" * 300}, run_id="r2")
    await saver.aput_writes(h.config(rolled_back), [("x", 1)], "task-b")
    await h.put({"messages": message_list(8)}, run_id="r2")

    await saver.adelete_run("t1", "r2")

    assert ids(await history_of(saver, h.config())) == [second, first]
    latest = await saver.aget_tuple(h.config())
    assert latest is not None
    assert latest.pending_writes == [("task", "__resume__", "yes")]
    assert await saver.aget_tuple(h.config(rolled_back)) is None
    await h.assert_readable(first)
    await h.assert_readable(second)
    h.head = second  # the thread goes on from where the run started
    await h.assert_readable(await h.put({"messages": message_list(5)}, run_id="r3"))


async def test_list_versions_gives_the_tree_without_values(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    first = await h.put({"messages": message_list(2)}, run_id="r1")
    second = await h.put({"messages": message_list(4)}, run_id="r1")
    h.head = first
    fork = await h.put({"messages": message_list(3)}, run_id="r2")

    versions = {v.checkpoint_id: v for v in await saver.alist_versions("t1")}

    assert set(versions) == {first, second, fork}
    assert versions[first].parent_id is None
    assert versions[second].parent_id == first and versions[fork].parent_id == first
    assert (versions[second].run_id, versions[fork].run_id) == ("r1", "r2")
    assert await saver.alist_versions("t1", "other-namespace") == []
    assert await saver.alist_versions("unknown") == []


async def test_last_elements(saver: BaseCheckpointSaver) -> None:
    h = History(saver, "t1")
    first = await h.put({"messages": message_list(2)})
    second = await h.put({"messages": message_list(5)})
    cut = await h.put({"messages": message_list(3)})
    h.head = second
    fork = await h.put({"messages": [*message_list(5), *message_list(1, start=9)]})
    short = await h.put({"messages": [{"type": "ai", "content": "hi", "id": "s"}]})  # inline
    empty = await h.put({"messages": [], "note": "n" * 200})
    wanted = [first, second, cut, fork, short, empty, str(uuid.uuid4())]

    assert await saver.alast_elements("t1", "note", [empty]) == {}  # not a list
    assert await saver.alast_elements("t1", "messages", [first], "other-namespace") == {}
    assert await saver.alast_elements("unknown", "messages", [first]) == {}
    last = await saver.alast_elements("t1", "messages", wanted)

    with known_gap(saver, "InMemorySaver keys blobs by version, which the fork reuses"):
        assert last == {
            first: message_list(2)[-1],
            second: message_list(5)[-1],
            cut: message_list(3)[-1],
            fork: message_list(1, start=9)[0],
            short: {"type": "ai", "content": "hi", "id": "s"},
        }


async def test_copy_thread(saver: BaseCheckpointSaver) -> None:
    source = History(saver, "source")
    first = await source.put({"messages": message_list(2), "big": "b" * 400}, thread_id="source")
    second = await source.put({"messages": message_list(4)}, thread_id="source")
    await saver.aput_writes(source.config(second), [("x", 1)], "task")

    await saver.acopy_thread("source", "target")

    target = History(saver, "target", states=dict(source.states), head=second)
    copied = await history_of(saver, target.config())
    assert ids(copied) == [second, first]
    assert copied[0].checkpoint["channel_values"] == source.values(second)
    assert copied[1].checkpoint["channel_values"] == source.values(first)
    assert copied[0].metadata["thread_id"] == "target"
    assert copied[0].parent_config == checkpoint_config("target", "", first)
    assert copied[0].pending_writes == [("task", "x", 1)]

    # The copy lives on its own: writing to it leaves the source as it was.
    continued = await target.put({"messages": message_list(5)})
    await target.assert_readable(continued)
    await source.assert_readable(second)
    assert len(await history_of(saver, source.config())) == 2


async def test_copy_never_merges_into_a_thread_with_history(saver: BaseCheckpointSaver) -> None:
    target = History(saver, "target")
    own = await target.put({"messages": message_list(1, start=50)})
    await History(saver, "source").put({"messages": message_list(2)})
    with known_gap(saver, "InMemorySaver merges, and the source's values overwrite the target's"):
        with pytest.raises(ValueError, match="has checkpoints"):
            await saver.acopy_thread("source", "target")
        await target.assert_readable(own)


# Many writers.


async def test_many_threads_written_at_once(saver: BaseCheckpointSaver) -> None:
    """50 threads x 20 steps from 50 tasks: nothing lost, nothing mixed up."""
    histories = [History(saver, f"thread-{i}") for i in range(50)]

    async def run(h: History) -> None:
        messages: list[dict[str, Any]] = []
        for step in range(20):
            messages = [*messages, *message_list(1, start=step)]
            checkpoint_id = await h.put({"messages": messages, "step": step}, step=step)
            await saver.aput_writes(h.config(checkpoint_id), [("log", step)], f"task-{step}")

    await asyncio.gather(*(run(h) for h in histories))
    for h in histories:
        listed = await history_of(saver, h.config())
        assert len(listed) == 20
        assert ids(listed) == list(reversed(h.states))
        for older, newer in zip(listed[1:], listed, strict=False):
            assert newer.parent_config == older.config
        assert listed[0].checkpoint["channel_values"] == h.values(h.head)
        assert listed[0].pending_writes == [("task-19", "log", 19)]
