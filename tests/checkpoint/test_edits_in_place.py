"""A node that changes an element of a list channel in place (a message it got from the
state) and writes the list again: the checkpoint holds the change, as LangGraph's savers
store it. The SQL saver stores only what is new in a list, finding the unchanged prefix
by identity; an object that is the same one but no longer as stored is not unchanged."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage

from engine import END, START, MessagesState, StateGraph
from engine.checkpoint.base import BaseCheckpointSaver
from engine.checkpoint.sql.saver import SQLSaver


def reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}


def chat(saver: BaseCheckpointSaver, *nodes: Callable[..., Any]) -> Any:
    """Nodes in a row, from START to END."""
    graph = StateGraph(MessagesState)
    previous = START
    for i, node in enumerate(nodes):
        graph.add_node(f"n{i}", node)
        graph.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    return graph.add_edge(previous, END).compile(checkpointer=saver)


def readers(saver: BaseCheckpointSaver) -> list[BaseCheckpointSaver]:
    """The saver that wrote, and (SQL) a new one that reads what was stored."""
    return [saver, SQLSaver(saver.engine)] if isinstance(saver, SQLSaver) else [saver]


async def contents(saver: BaseCheckpointSaver, thread_id: str) -> list[list[Any]]:
    """The messages' contents and tool calls of the thread's head, as each reader reads."""
    found = []
    for reader in readers(saver):
        state = await chat(reader, reply).aget_state({"configurable": {"thread_id": thread_id}})
        found.append(
            [
                (m.content, m.additional_kwargs, getattr(m, "tool_calls", []))
                for m in state.values["messages"]
            ]
        )
    return found


def first(change: Callable[[AnyMessage], None]) -> Callable[[MessagesState], dict[str, Any]]:
    """A node that changes the first message in place and writes it back (same id)."""

    def node(state: MessagesState) -> dict[str, Any]:
        message = state["messages"][0]
        change(message)
        return {"messages": [message]}

    return node


def set_content(message: AnyMessage) -> None:
    message.content = "REDACTED"


def flag(message: AnyMessage) -> None:
    message.additional_kwargs["flag"] = True


CHANGES = {"content": set_content, "nested dict": flag}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
async def test_a_message_of_an_earlier_turn_changed_in_place_is_stored(
    saver: BaseCheckpointSaver, change: Callable[[AnyMessage], None]
) -> None:
    config = {"configurable": {"thread_id": "t"}}
    for text in ("secret", "more"):
        await chat(saver, reply).ainvoke({"messages": [("user", text)]}, config)
    await chat(saver, first(change)).ainvoke({"messages": []}, config)
    expected = (
        "REDACTED" if change is set_content else "secret",
        {"flag": True} if change is flag else {},
        [],
    )
    for read in await contents(saver, "t"):
        assert read[0] == expected
    # The next turn goes on from the changed history.
    await chat(saver, reply).ainvoke({"messages": [("user", "again")]}, config)
    for read in await contents(saver, "t"):
        assert read[0] == expected
        assert len(read) == 6


async def test_a_tool_call_changed_in_place_is_stored(saver: BaseCheckpointSaver) -> None:
    """A message with nested containers (kept as text, not as a blueprint)."""
    config = {"configurable": {"thread_id": "t"}}
    call = {"name": "search", "args": {"q": "cats"}, "id": "call-1", "type": "tool_call"}

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("", tool_calls=[call])]}

    def rewrite(state: MessagesState) -> dict[str, Any]:
        message = state["messages"][1]
        message.tool_calls[0]["args"]["q"] = "dogs"
        return {"messages": [message]}

    await chat(saver, ask).ainvoke({"messages": [("user", "find")]}, config)
    await chat(saver, reply).ainvoke({"messages": [("user", "and")]}, config)
    await chat(saver, rewrite).ainvoke({"messages": []}, config)
    for read in await contents(saver, "t"):
        assert read[1][2][0]["args"] == {"q": "dogs"}


async def test_a_message_added_and_changed_in_one_run_is_stored(
    saver: BaseCheckpointSaver,
) -> None:
    """The change comes a step after the put that stored the message."""
    config = {"configurable": {"thread_id": "t"}}

    def edit_last(state: MessagesState) -> dict[str, Any]:
        message = state["messages"][-1]
        message.content = "edited"
        return {"messages": [message]}

    await chat(saver, reply).ainvoke({"messages": [("user", "hi")]}, config)
    await chat(saver, reply, edit_last, reply).ainvoke({"messages": [("user", "more")]}, config)
    for read in await contents(saver, "t"):
        assert [c for c, _, _ in read] == ["hi", "reply 1", "more", "edited", "reply 4"]


async def test_a_subgraph_s_change_in_place_is_stored(saver: BaseCheckpointSaver) -> None:
    """A subgraph gets its graph's very message objects, and its output is its graph's
    write (stored with references to its graph's list)."""
    config = {"configurable": {"thread_id": "t"}}
    inner = chat(None, first(set_content))  # type: ignore[arg-type]
    await chat(saver, reply).ainvoke({"messages": [("user", "secret")]}, config)
    await chat(saver, inner, reply).ainvoke({"messages": [("user", "next")]}, config)
    for read in await contents(saver, "t"):
        assert [c for c, _, _ in read] == ["REDACTED", "reply 1", "next", "reply 3"]


NOTE = "a note long enough to be kept in the list's log"


class Notes(TypedDict):
    notes: Annotated[list[dict[str, Any]], operator.add]


async def test_a_plain_dict_changed_in_place_is_stored(saver: BaseCheckpointSaver) -> None:
    config = {"configurable": {"thread_id": "t"}}

    def add(state: Notes) -> dict[str, Any]:
        return {"notes": [{"n": len(state["notes"]), "text": NOTE}]}

    def mark(state: Notes) -> dict[str, Any]:
        state["notes"][0]["text"] = "marked"
        return {"notes": [{"n": len(state["notes"]), "text": "after"}]}

    def graph(node: Callable[[Notes], dict[str, Any]], reader: BaseCheckpointSaver) -> Any:
        built = StateGraph(Notes).add_node("n", node).add_edge(START, "n").add_edge("n", END)
        return built.compile(checkpointer=reader)

    for _ in range(3):
        await graph(add, saver).ainvoke({"notes": []}, config)
    await graph(mark, saver).ainvoke({"notes": []}, config)
    for reader in readers(saver):
        state = await graph(add, reader).aget_state(config)
        assert [n["text"] for n in state.values["notes"]] == ["marked", NOTE, NOTE, "after"]


def reusing(saver: SQLSaver) -> SQLSaver:
    """A saver on the same tables that gives a read the objects a put was handed."""
    return SQLSaver(saver.engine, reuse_objects=True)


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
async def test_a_change_made_after_the_last_save_is_not_loaded(
    sql_saver: SQLSaver, change: Callable[[AnyMessage], None]
) -> None:
    """A message changed in place once the run that stored it is over (code that kept
    it) is not what the next turn loads: that is the message as stored."""
    saver, config = reusing(sql_saver), {"configurable": {"thread_id": "t"}}
    kept: list[AnyMessage] = []

    def keeping(state: MessagesState) -> dict[str, Any]:
        kept.append(AIMessage("kept"))
        return {"messages": [kept[-1]]}

    seen: list[Any] = []

    def looking(state: MessagesState) -> dict[str, Any]:
        seen.extend((m.content, dict(m.additional_kwargs)) for m in state["messages"])
        return {}

    await chat(saver, keeping).ainvoke({"messages": [("user", "hi")]}, config)
    change(kept[0])
    await chat(saver, looking).ainvoke({"messages": [("user", "again")]}, config)
    assert seen[1] == ("kept", {})
    for read in await contents(saver, "t"):
        assert read[1] == ("kept", {}, [])


async def test_the_next_turn_loads_the_messages_the_last_one_stored(sql_saver: SQLSaver) -> None:
    """With `reuse_objects`, the first read of what a run's last save was handed gives
    those objects, still as stored, in a new list: a turn on a long chat does not build
    its history again. A second read, a listing and a saver without the option build
    objects of their own."""
    saver, config = reusing(sql_saver), {"configurable": {"thread_id": "t"}}
    stored: list[Any] = []

    def replying(state: MessagesState) -> dict[str, Any]:
        stored.append(AIMessage("stored"))
        return {"messages": [stored[-1]]}

    async def last_message(reader: SQLSaver, config: Any) -> Any:
        loaded = await reader.aget_tuple(config)
        assert loaded is not None
        return loaded.checkpoint["channel_values"]["messages"][-1]

    for reader, shares in ((sql_saver, False), (saver, True)):
        stored.clear()
        await chat(reader, replying).ainvoke({"messages": [("user", "hi")]}, config)
        assert (await last_message(reader, config) is stored[0]) is shares
        again = await last_message(reader, config)
        assert again is not stored[0] and again == stored[0]
    # A listing of the history builds its own, and leaves the objects to the next read.
    await chat(saver, replying).ainvoke({"messages": [("user", "hi")]}, config)
    listed = [c async for c in saver.alist(config)][0]
    assert listed.checkpoint["channel_values"]["messages"][-1] is not stored[-1]
    assert await last_message(saver, config) is stored[-1]
