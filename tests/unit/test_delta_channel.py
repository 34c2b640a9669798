"""DeltaChannel (LangGraph 1.2's batch-reducer channel) and its messages reducer.

The channel's behaviour in graphs is checked against LangGraph in
tests/conformance/cases_delta.py; these tests pin down the channel's own rules, the
id stamping of messages written to it, and that our savers keep its value.
"""

from __future__ import annotations

import asyncio
import collections.abc
import typing
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage

from engine.channels import DeltaChannel
from engine.checkpoint.memory import InMemorySaver
from engine.checkpoint.sql import SQLSaver, migrate
from engine.errors import InvalidUpdateError
from engine.graph import START, StateGraph
from engine.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer, with_message_ids
from engine.graph.schema import channels_for
from engine.types import Overwrite


def concat(state: list[Any], writes: list[Any]) -> list[Any]:
    return state + [x for w in writes for x in w]


def test_a_step_is_one_reducer_call_with_every_write() -> None:
    calls: list[tuple[Any, list[Any]]] = []

    def reducer(state: list[Any], writes: list[Any]) -> list[Any]:
        calls.append((list(state), list(writes)))
        return concat(state, writes)

    channel = DeltaChannel(reducer)
    assert channel.get() == []
    assert channel.update([["a"], ["b", "c"]]) is True
    assert channel.get() == ["a", "b", "c"]
    assert calls == [([], [["a"], ["b", "c"]])]
    assert channel.update([]) is False
    assert len(calls) == 1


def test_overwrite_replaces_the_value_and_drops_the_steps_other_writes() -> None:
    channel = DeltaChannel(concat)
    channel.update([["a"]])
    replacement = ["z"]
    assert channel.update([["b"], Overwrite(replacement), ["c"]]) is True
    assert channel.get() == ["z"]
    assert channel.get() is not replacement  # a copy: the caller's list stays theirs
    channel.update([Overwrite(None)])
    assert channel.get() == []
    channel.update([{"__overwrite__": ["x"]}])
    assert channel.get() == ["x"]
    channel.update([{"type": "__overwrite__", "value": ["y"]}])
    assert channel.get() == ["y"]


def test_two_overwrites_in_one_step_are_refused() -> None:
    channel = DeltaChannel(concat)
    with pytest.raises(InvalidUpdateError):
        channel.update([Overwrite([1]), Overwrite([2])])


def test_a_reducer_extending_its_state_in_place_leaves_saved_values_alone() -> None:
    def extend(state: list[Any], writes: list[Any]) -> list[Any]:
        for write in writes:
            state.extend(write)
        return state

    channel = DeltaChannel(extend)
    channel.update([["a"]])
    saved = channel.checkpoint()
    channel.update([["b"]])
    assert saved == ["a"]
    assert channel.get() == ["a", "b"]


@pytest.mark.parametrize("frequency", [0, -3])
def test_snapshot_frequency_must_be_a_positive_int(frequency: Any) -> None:
    with pytest.raises(ValueError, match="snapshot_frequency"):
        DeltaChannel(concat, snapshot_frequency=frequency)


def test_restoring_nothing_starts_empty() -> None:
    channel = DeltaChannel(merge_dicts, dict)
    channel.restore(None)
    assert channel.get() == {}
    channel.restore({"a": 1})
    assert channel.get() == {"a": 1}


def merge_dicts(state: dict[str, Any], writes: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: v for d in [state, *writes] for k, v in d.items()}


class Schema(TypedDict):
    listed: Annotated[list[int], DeltaChannel(concat)]
    mapped: Annotated[dict[str, int], DeltaChannel(merge_dicts, snapshot_frequency=3)]
    optional: Annotated[typing.NotRequired[collections.abc.Sequence[int]], DeltaChannel(concat)]
    plain: int


def test_a_schema_key_gets_a_fresh_channel_of_its_annotated_type() -> None:
    factories = channels_for(Schema)
    first, second = factories["mapped"](), factories["mapped"]()
    assert isinstance(first, DeltaChannel) and first is not second
    assert first.key == "mapped" and first.get() == {} and first.snapshot_frequency == 3
    assert first.get() is not second.get()
    assert factories["listed"]().get() == []
    assert factories["optional"]().get() == []
    assert not isinstance(factories["plain"](), DeltaChannel)


def test_a_type_with_no_empty_value_is_refused_at_compile_time() -> None:
    class Bad(TypedDict):
        count: Annotated[int | None, DeltaChannel(concat)]

    with pytest.raises(ValueError, match="start empty"):
        StateGraph(Bad)


# --------------------------------------------------------------------------- messages


def reduce_in_batches(writes: list[Any], cut: int) -> list[Any]:
    return _messages_delta_reducer(_messages_delta_reducer([], writes[:cut]), writes[cut:])


def test_messages_reducer_is_batching_invariant() -> None:
    writes: list[Any] = [
        [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        AIMessage("b2", id="2"),
        [RemoveMessage(id="1"), HumanMessage("c", id="3")],
        [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("d", id="4")],
        [AIMessage("e", id="5"), RemoveMessage(id="nobody")],
    ]
    whole = _messages_delta_reducer([], writes)
    assert [(m.id, m.content) for m in whole] == [("4", "d"), ("5", "e")]
    for cut in range(len(writes) + 1):
        assert reduce_in_batches(writes, cut) == whole


def test_messages_reducer_replaces_by_id_and_gives_no_ids() -> None:
    state = _messages_delta_reducer([], [[HumanMessage("a", id="1"), "plain text"]])
    assert [(m.id, m.content) for m in state] == [("1", "a"), (None, "plain text")]
    state = _messages_delta_reducer(state, [{"role": "ai", "content": "a2", "id": "1"}])
    assert [(type(m).__name__, m.content) for m in state] == [
        ("AIMessage", "a2"),
        ("HumanMessage", "plain text"),
    ]


def delta_channels() -> dict[str, Any]:
    return {
        "messages": DeltaChannel(_messages_delta_reducer),
        "data": DeltaChannel(concat),
        "log": object(),
    }


def test_message_likes_written_to_a_messages_delta_channel_become_messages_with_ids() -> None:
    given = [{"role": "user", "content": "hi"}, "text", ("ai", "pair"), AIMessage("x")]
    writes = [("messages", given), ("messages", "alone"), ("log", "untouched")]
    out = with_message_ids(delta_channels(), writes)
    messages = out[0][1]
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "HumanMessage",
        "AIMessage",
        "AIMessage",
    ]
    assert all(m.id for m in messages) and messages[3] is given[3]
    assert isinstance(given[0], dict)  # the caller's list is not changed
    assert out[1][1].content == "alone" and out[1][1].id
    assert out[2] == ("log", "untouched")


def test_ids_in_other_delta_channels_go_to_messages_only() -> None:
    message = HumanMessage("m")
    given = [{"role": "user", "content": "d"}, {"not": "a message"}, 3, message]
    ((_, out),) = with_message_ids(delta_channels(), [("data", given)])
    assert isinstance(out[0], HumanMessage) and out[0].id
    assert out[1:3] == [{"not": "a message"}, 3]
    assert out[3] is message and message.id
    ((_, loose),) = with_message_ids(delta_channels(), [("data", {"type": "ai", "content": "x"})])
    assert isinstance(loose, dict) and loose["id"]


def test_an_overwrite_of_message_likes_gets_messages_with_ids() -> None:
    writes = [("messages", Overwrite(["one", HumanMessage("two", id="2")]))]
    ((_, out),) = with_message_ids(delta_channels(), writes)
    assert isinstance(out, Overwrite)
    assert [m.content for m in out.value] == ["one", "two"] and all(m.id for m in out.value)


def test_writes_without_delta_channels_are_handed_back_as_they_are() -> None:
    writes = [("log", [HumanMessage("x")])]
    assert with_message_ids(delta_channels(), writes) is writes
    assert writes[0][1][0].id is None


# --------------------------------------------------------------------------- savers


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]


def chat_graph(saver: Any) -> Any:
    def reply(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}

    builder = StateGraph(ChatState).add_node("reply", reply).add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


async def chat_turns(graph: Any, turns: int) -> list[str]:
    config = {"configurable": {"thread_id": "t"}}
    for i in range(turns):
        await graph.ainvoke({"messages": [f"turn {i}"]}, config)
    state = await graph.aget_state(config)
    return [f"{m.type}:{m.content}" for m in state.values["messages"]]


def test_the_in_memory_saver_keeps_the_value() -> None:
    saver = InMemorySaver()
    told = asyncio.run(chat_turns(chat_graph(saver), 3))
    assert told == [
        "human:turn 0",
        "ai:reply 1",
        "human:turn 1",
        "ai:reply 3",
        "human:turn 2",
        "ai:reply 5",
    ]
    again = asyncio.run(chat_graph(saver).aget_state({"configurable": {"thread_id": "t"}}))
    assert [m.content for m in again.values["messages"]][-1] == "reply 5"


def test_the_sql_saver_keeps_the_value_for_a_new_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'delta.db'}"

    async def scenario() -> tuple[list[str], list[str]]:
        await migrate(url)
        writer = SQLSaver.from_url(url)
        try:
            told = await chat_turns(chat_graph(writer), 2)
        finally:
            await writer.aclose()
        reader = SQLSaver.from_url(url)  # nothing of the thread in its memory
        try:
            state = await chat_graph(reader).aget_state({"configurable": {"thread_id": "t"}})
        finally:
            await reader.aclose()
        return told, [f"{m.type}:{m.content}" for m in state.values["messages"]]

    told, read = asyncio.run(scenario())
    assert read == told == ["human:turn 0", "ai:reply 1", "human:turn 1", "ai:reply 3"]
