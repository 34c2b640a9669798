"""The in-memory saver against the saver protocol: what the loop and the server rely on."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest

from engine.checkpoint.base import Checkpoint, CheckpointMetadata, Config, checkpoint_config
from engine.checkpoint.ids import new_checkpoint_id
from engine.checkpoint.memory import InMemorySaver
from engine.checkpoint.serde.jsonplus import JsonSerializer
from engine.constants import ERROR, INTERRUPT, RESUME
from engine.types import Interrupt


def make_checkpoint(values: dict[str, Any], versions: dict[str, int]) -> Checkpoint:
    return {
        "v": 1,
        "id": new_checkpoint_id(),
        "ts": "2024-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {"node": {"a": 1}},
        "updated_channels": list(values),
    }


def thread(thread_id: str = "t", ns: str = "", checkpoint_id: str | None = None) -> Config:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


async def put_chain(
    saver: InMemorySaver, steps: int, thread_id: str = "t", ns: str = ""
) -> list[Config]:
    """Save `steps` checkpoints, each the child of the one before, changing channel a."""
    configs: list[Config] = []
    config = thread(thread_id, ns)
    for step in range(steps):
        checkpoint = make_checkpoint({"a": step, "b": "same"}, {"a": step + 1, "b": 1})
        new_versions = {"a": step + 1, "b": 1} if step == 0 else {"a": step + 1}
        metadata = {
            "source": "loop",
            "step": step,
        }
        config = await saver.aput(config, checkpoint, metadata, new_versions)
        configs.append(config)
    return configs


def ids_of(configs: list[Config]) -> list[str]:
    return [c["configurable"]["checkpoint_id"] for c in configs]


async def listed(saver: InMemorySaver, config: Config | None, **kwargs: Any) -> list[str]:
    return ids_of([t.config async for t in saver.alist(config, **kwargs)])


@pytest.fixture
def saver() -> InMemorySaver:
    return InMemorySaver(check_immutable=True)


async def test_put_returns_the_new_checkpoints_config(saver: InMemorySaver) -> None:
    checkpoint = make_checkpoint({"a": 1}, {"a": 1})
    config = await saver.aput({"configurable": {"thread_id": 7}}, checkpoint, {}, {"a": 1})
    assert config == checkpoint_config("7", "", checkpoint["id"])


async def test_get_latest_by_id_and_parent_links(saver: InMemorySaver) -> None:
    first, second = await put_chain(saver, 2)
    latest = await saver.aget_tuple(thread())
    assert latest is not None
    assert latest.config == second and latest.parent_config == first
    assert latest.checkpoint["channel_values"] == {"a": 1, "b": "same"}
    assert latest.metadata == {"source": "loop", "step": 1}
    assert latest.pending_writes == []
    older = await saver.aget_tuple(first)
    assert older is not None and older.parent_config is None
    assert older.checkpoint["channel_values"] == {"a": 0, "b": "same"}
    assert list(older.checkpoint) == list(make_checkpoint({}, {}))


async def test_everything_in_the_checkpoint_comes_back(saver: InMemorySaver) -> None:
    checkpoint = make_checkpoint({"a": (1, {2}), "i": Interrupt("?", "x")}, {"a": 3, "i": 1})
    checkpoint["versions_seen"] = {"n": {"a": 2}, "__input__": {}}
    await saver.aput(thread(), checkpoint, {"source": "input", "step": -1}, {"a": 3, "i": 1})
    got = await saver.aget_tuple(thread())
    # A tuple comes back as a list, as from LangGraph's savers.
    checkpoint["channel_values"]["a"] = [1, {2}]
    assert got is not None and got.checkpoint == checkpoint


async def test_missing_thread_or_checkpoint_is_none(saver: InMemorySaver) -> None:
    assert await saver.aget_tuple(thread("nobody")) is None
    await put_chain(saver, 1)
    assert await saver.aget_tuple(thread(checkpoint_id="no-such-id")) is None
    assert await saver.aget_tuple(thread(ns="other")) is None


async def test_unchanged_channels_are_stored_once(saver: InMemorySaver) -> None:
    await put_chain(saver, 5)
    # One blob for b, one per version of a: the storage grows with what changed.
    assert len(saver._threads["t"].blobs) == 6
    history = [t async for t in saver.alist(thread())]
    assert [t.checkpoint["channel_values"] for t in history] == [
        {"a": step, "b": "same"} for step in reversed(range(5))
    ]


async def test_a_channel_emptied_by_a_step_is_absent(saver: InMemorySaver) -> None:
    (first,) = await put_chain(saver, 1)
    checkpoint = make_checkpoint({"a": 9}, {"a": 2, "b": 2})
    await saver.aput(first, checkpoint, {}, {"a": 2, "b": 2})
    got = await saver.aget_tuple(thread())
    assert got is not None and got.checkpoint["channel_values"] == {"a": 9}


async def test_namespaces_are_separate(saver: InMemorySaver) -> None:
    root = await put_chain(saver, 2)
    child = await put_chain(saver, 1, ns="sub:1")
    got = await saver.aget_tuple(thread(ns="sub:1"))
    assert got is not None and got.config == child[0]
    got = await saver.aget_tuple({"configurable": {"thread_id": "t"}})
    assert got is not None and got.config == root[1]
    assert await listed(saver, thread(ns="")) == ids_of(root[::-1])
    # Namespace after namespace, in the order first saved to, each newest first.
    assert await listed(saver, {"configurable": {"thread_id": "t"}}) == ids_of(
        root[::-1] + child[::-1]
    )


async def test_list_newest_first_with_before_limit_and_filter(saver: InMemorySaver) -> None:
    configs = await put_chain(saver, 5)
    newest_first = ids_of(configs[::-1])
    assert await listed(saver, thread()) == newest_first
    assert await listed(saver, thread(), limit=2) == newest_first[:2]
    assert await listed(saver, thread(), before=configs[3]) == newest_first[2:]
    assert await listed(saver, thread(), before=configs[3], limit=1) == newest_first[2:3]
    assert await listed(saver, thread(), filter={"step": 2}) == [newest_first[2]]
    assert await listed(saver, thread(), filter={"step": 2, "source": "update"}) == []
    assert await listed(saver, thread(), filter={"source": "loop"}, limit=4) == newest_first[:4]
    assert await listed(saver, configs[1]) == [newest_first[3]]
    assert await listed(saver, thread(), limit=0) == []


async def test_list_covers_every_branch_and_every_thread(saver: InMemorySaver) -> None:
    first, second = await put_chain(saver, 2)
    # A fork: a new child of the first checkpoint, next to the second.
    fork = await saver.aput(first, make_checkpoint({"a": 5}, {"a": 9}), {}, {"a": 9})
    other = await put_chain(saver, 1, thread_id="u")
    assert await listed(saver, thread()) == ids_of([fork, second, first])
    # Thread after thread, in the order first saved to.
    assert await listed(saver, None) == ids_of([fork, second, first, other[0]])
    assert await listed(saver, None, filter={"step": 0}) == ids_of([first, other[0]])
    forked = await saver.aget_tuple(fork)
    assert forked is not None and forked.parent_config == first


async def test_writes_are_idempotent_and_ordered(saver: InMemorySaver) -> None:
    first, second = await put_chain(saver, 2)
    await saver.aput_writes(second, [("a", 1), ("b", 2)], "task-b", "~path-b")
    await saver.aput_writes(second, [("a", 10)], "task-a")
    # Saving the same task again keeps what was first saved.
    await saver.aput_writes(second, [("a", 99), ("b", 98)], "task-b")
    got = await saver.aget_tuple(thread())
    assert got is not None
    assert got.pending_writes == [("task-a", "a", 10), ("task-b", "a", 1), ("task-b", "b", 2)]
    older = await saver.aget_tuple(first)
    assert older is not None and older.pending_writes == []


async def test_special_writes_replace_the_previous_one(saver: InMemorySaver) -> None:
    (config,) = await put_chain(saver, 1)
    await saver.aput_writes(config, [("a", 1), (INTERRUPT, [Interrupt("first?", "i1")])], "t1")
    await saver.aput_writes(config, [(INTERRUPT, [Interrupt("second?", "i1")])], "t1")
    await saver.aput_writes(config, [(RESUME, ["yes"]), (ERROR, "boom")], "t1")
    got = await saver.aget_tuple(config)
    assert got is not None
    assert got.pending_writes == [
        ("t1", RESUME, ["yes"]),
        ("t1", INTERRUPT, [Interrupt("second?", "i1")]),
        ("t1", ERROR, "boom"),
        ("t1", "a", 1),
    ]


async def test_writes_need_a_checkpoint(saver: InMemorySaver) -> None:
    with pytest.raises(ValueError, match="checkpoint_id"):
        await saver.aput_writes(thread(), [("a", 1)], "task")


async def test_delete_thread_leaves_others(saver: InMemorySaver) -> None:
    (config,) = await put_chain(saver, 1)
    await saver.aput_writes(config, [("a", 1)], "task")
    kept = await put_chain(saver, 1, thread_id="u")
    await saver.adelete_thread("t")
    assert await saver.aget_tuple(thread()) is None
    assert await saver.aget_tuple(config) is None
    assert await listed(saver, None) == ids_of(kept)
    await saver.adelete_thread("never-existed")


async def test_copy_thread_keeps_ids_and_renames_the_thread(saver: InMemorySaver) -> None:
    configs = await put_chain(saver, 3, thread_id="src")
    await put_chain(saver, 1, thread_id="src", ns="sub")
    recorded = {"source": "update", "step": 3, "thread_id": "src"}
    await saver.aput(configs[-1], make_checkpoint({"a": 7}, {"a": 9}), recorded, {"a": 9})
    await saver.aput_writes(configs[1], [("a", "w")], "task", "path")
    others = await put_chain(saver, 1, thread_id="other")
    await saver.acopy_thread("src", "dst")

    source = [t async for t in saver.alist({"configurable": {"thread_id": "src"}})]
    copied = [t async for t in saver.alist({"configurable": {"thread_id": "dst"}})]
    assert len(copied) == 5
    assert [t.checkpoint for t in copied] == [t.checkpoint for t in source]
    assert [t.pending_writes for t in copied] == [t.pending_writes for t in source]
    for src, dst in zip(source, copied, strict=True):
        assert dst.config == {"configurable": {**src.config["configurable"], "thread_id": "dst"}}
        if src.parent_config is None:
            assert dst.parent_config is None
        else:
            parent = {**src.parent_config["configurable"], "thread_id": "dst"}
            assert dst.parent_config == {"configurable": parent}
    assert copied[0].metadata == {**recorded, "thread_id": "dst"}
    assert source[0].metadata == recorded
    assert copied[1].metadata == source[1].metadata  # no thread recorded: unchanged

    # The copy is its own thread from now on.
    await saver.aput(copied[0].config, make_checkpoint({"a": 8}, {"a": 10}), {}, {"a": 10})
    await saver.adelete_thread("src")
    assert len(await listed(saver, thread("dst"))) == 5
    assert await listed(saver, thread("other")) == ids_of(others)
    await saver.acopy_thread("nobody", "dst2")
    assert await listed(saver, thread("dst2")) == []


async def test_returned_values_are_copies() -> None:
    saver = InMemorySaver()
    messages = ["hi"]
    checkpoint = make_checkpoint({"messages": messages}, {"messages": 1})
    metadata: CheckpointMetadata = {"source": "loop", "step": 0, "parents": {}}
    config = await saver.aput(thread(), checkpoint, metadata, {"messages": 1})
    await saver.aput_writes(config, [("messages", ["w"])], "task")
    # Changing what was handed in does not change what was stored...
    messages.append("after")
    metadata["parents"]["x"] = "y"
    got = await saver.aget_tuple(thread())
    assert got is not None
    assert got.checkpoint["channel_values"] == {"messages": ["hi"]}
    assert got.metadata == {"source": "loop", "step": 0, "parents": {}}
    # ...and neither does changing what was handed out.
    got.checkpoint["channel_values"]["messages"].append("mutated")
    got.checkpoint["channel_versions"]["messages"] = 99
    got.metadata["step"] = 5
    got.pending_writes[0][2].append("mutated")
    again = await saver.aget_tuple(thread())
    assert again is not None
    assert again.checkpoint["channel_values"] == {"messages": ["hi"]}
    assert again.checkpoint["channel_versions"] == {"messages": 1}
    assert again.metadata["step"] == 0
    assert again.pending_writes == [("task", "messages", ["w"])]


async def test_check_immutable_catches_a_mutated_checkpoint(saver: InMemorySaver) -> None:
    checkpoint = make_checkpoint({"messages": ["hi"]}, {"messages": 1})
    await saver.aput(thread(), checkpoint, {}, {"messages": 1})
    assert await saver.aget_tuple(thread()) is not None
    checkpoint["channel_values"]["messages"].append("again")
    where = f"checkpoint {checkpoint['id']}, at ['channel_values']['messages'], was mutated"
    with pytest.raises(AssertionError, match=re.escape(where)):
        await saver.aget_tuple(thread())


@dataclasses.dataclass
class Note:
    text: str


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.update(id="other"),
        lambda c: c["channel_versions"].update(a=2),
        lambda c: c["versions_seen"]["node"].pop("a"),
        lambda c: c["channel_values"]["shared"][0].append(4),
        lambda c: c["channel_values"]["notes"].add("z"),
        lambda c: setattr(c["channel_values"]["note"], "text", "changed"),
    ],
)
async def test_check_immutable_catches_any_change(mutate: Callable[[Any], None]) -> None:
    serializer = JsonSerializer()
    serializer.allow(Note)
    saver = InMemorySaver(serde=serializer, check_immutable=True)
    shared = ([1, 2, 3], "x")
    values = {"shared": shared, "notes": {"a"}, "note": Note("n")}
    versions = {"shared": 1, "notes": 1, "note": 1}
    first = make_checkpoint(values, versions)
    config = await saver.aput(thread(), first, {}, versions)
    # The next checkpoint shares the unchanged values, as the loop's checkpoints do.
    second = make_checkpoint({**values, "a": 1}, {**versions, "a": 1})
    await saver.aput(config, second, {}, {"a": 1})
    await saver.aget_tuple(thread())
    mutate(first)
    with pytest.raises(AssertionError, match="was mutated"):
        await saver.aget_tuple(thread())


async def test_check_immutable_allows_rebinding_an_equal_value(saver: InMemorySaver) -> None:
    checkpoint = make_checkpoint({"a": [10**20]}, {"a": 1})
    await saver.aput(thread(), checkpoint, {}, {"a": 1})
    checkpoint["channel_values"]["a"][0] = int("1" + "0" * 20)  # equal, but a new object
    assert await saver.aget_tuple(thread()) is not None


async def test_check_immutable_catches_mutated_metadata(saver: InMemorySaver) -> None:
    metadata: CheckpointMetadata = {"source": "loop", "step": 0}
    config = await saver.aput(thread(), make_checkpoint({}, {}), metadata, {})
    metadata["step"] = 1
    with pytest.raises(AssertionError, match="metadata of checkpoint .* was mutated"):
        await saver.aput_writes(config, [("a", 1)], "task")


async def test_unserializable_values_store_nothing(saver: InMemorySaver) -> None:
    checkpoint = make_checkpoint({"a": object()}, {"a": 1})
    with pytest.raises(TypeError, match="Cannot serialize"):
        await saver.aput(thread(), checkpoint, {}, {"a": 1})
    assert await saver.aget_tuple(thread()) is None
    (config,) = await put_chain(saver, 1)
    with pytest.raises(TypeError, match="Cannot serialize"):
        await saver.aput_writes(config, [("a", 1), ("b", object())], "task")
    got = await saver.aget_tuple(config)
    assert got is not None and got.pending_writes == []


async def test_shared_objects_are_stored_once_and_read_back_as_copies(
    saver: InMemorySaver,
) -> None:
    """A state built by reducers holds one object in many lists, and many times in one
    (the LangGraph benchmark's wide state); state validation copies a list's dicts but
    shares their values. Each comes back whole, as objects of its own."""
    inner = {"k": [1, {2, 3}], "when": dt.date(2024, 1, 2)}
    item = {"a": inner, "b": "x"}
    copies = [{**item} for _ in range(3)]  # distinct dicts, the same values
    values = {"many": [item, item, 5, item], "copies": copies, "mixed": [item, "s", None]}
    checkpoint = make_checkpoint(values, {"many": 1, "copies": 1, "mixed": 1})
    config = await saver.aput(thread(), checkpoint, {}, {"many": 1, "copies": 1, "mixed": 1})
    await saver.aput_writes(config, [("many", [item, item]), ("copies", copies)], "task")
    got = await saver.aget_tuple(thread())
    assert got is not None
    stored = got.checkpoint["channel_values"]
    assert stored == values
    assert got.pending_writes == [("task", "many", [item, item]), ("task", "copies", copies)]
    many = stored["many"]
    assert many[0] is not many[1] and many[0]["a"] is not many[1]["a"]
    assert stored["copies"][0]["a"] is not stored["copies"][1]["a"]
    assert type(many[0]["a"]["k"][1]) is set


async def test_a_refused_element_of_a_shared_list_stores_nothing(saver: InMemorySaver) -> None:
    item = {"a": [1]}
    for bad in ([item, item, object()], [{"a": item["a"]}, {"a": item["a"], "b": object()}]):
        with pytest.raises(TypeError, match="Cannot serialize"):
            await saver.aput(thread(), make_checkpoint({"l": bad}, {"l": 1}), {}, {"l": 1})
    assert await saver.aget_tuple(thread()) is None


async def test_uses_the_given_serializer() -> None:
    serializer = JsonSerializer()
    serializer.allow(Note)
    saver = InMemorySaver(serde=serializer, check_immutable=True)
    await saver.aput(thread(), make_checkpoint({"n": Note("x")}, {"n": 1}), {}, {"n": 1})
    got = await saver.aget_tuple(thread())
    assert got is not None and got.checkpoint["channel_values"] == {"n": Note("x")}
    with pytest.raises(TypeError, match="allow"):
        await InMemorySaver().aput(
            thread(), make_checkpoint({"n": Note("x")}, {"n": 1}), {}, {"n": 1}
        )


async def test_list_survives_a_delete_while_iterating(saver: InMemorySaver) -> None:
    await put_chain(saver, 3)
    seen = []
    async for item in saver.alist(thread()):
        seen.append(item)
        await saver.adelete_thread("t")
    assert len(seen) == 1


def test_sync_twins() -> None:
    saver = InMemorySaver(check_immutable=True)
    checkpoint = make_checkpoint({"a": 1}, {"a": 1})
    config = saver.put(thread(), checkpoint, {"step": -1}, {"a": 1})
    saver.put_writes(config, [("a", 2)], "task")
    got = saver.get_tuple(thread())
    assert got is not None and got.pending_writes == [("task", "a", 2)]
    assert [t.config for t in saver.list(None)] == [config]
    saver.copy_thread("t", "u")
    saver.delete_thread("t")
    assert saver.get_tuple(thread()) is None
    assert saver.get_tuple(thread("u")) is not None


async def test_sync_twins_inside_an_event_loop() -> None:
    """As with LangGraph's in-memory saver, a notebook's or an async test's sync calls
    work: nothing the saver does waits. A subclass whose method waits is told why not."""
    saver = InMemorySaver(check_immutable=True)
    saver.put(thread(), make_checkpoint({"a": 1}, {"a": 1}), {}, {"a": 1})
    got = saver.get_tuple(thread())
    assert got is not None and got.checkpoint["channel_values"] == {"a": 1}
    assert len(list(saver.list(thread()))) == 1

    class Waits(InMemorySaver):
        async def aget_tuple(self, config: Any) -> Any:
            await asyncio.sleep(0)
            return await super().aget_tuple(config)

    with pytest.raises(RuntimeError, match="Waits's async method waited"):
        Waits().get_tuple(thread())


async def test_the_saver_is_a_context_manager_as_langgraphs_is() -> None:
    with InMemorySaver() as saver:
        assert isinstance(saver, InMemorySaver)
    async with InMemorySaver() as saver:
        assert isinstance(saver, InMemorySaver)
