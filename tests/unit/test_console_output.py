"""What a ported program shows on the console, as under LangGraph: `debug=True` prints
each `updates` and `values` part (its mode in bold, a subgraph's namespace in yellow),
and a node or edge added to a builder after `compile()` is warned of."""

from __future__ import annotations

import asyncio
import importlib
import operator
import re
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from typing_extensions import TypedDict

from engine.graph import START, StateGraph


class State(TypedDict):
    log: Annotated[list, operator.add]


def _printed(package: str, capsys: pytest.CaptureFixture[str], **kwargs: Any) -> str:
    graph = importlib.import_module(f"{package}.graph")

    def note(name: str) -> Any:
        return lambda state: {"log": [name]}

    inner = graph.StateGraph(State)
    inner.add_node("c", note("c"))
    inner.add_edge(graph.START, "c")
    builder = graph.StateGraph(State)
    builder.add_node("a", note("a"))
    builder.add_node("sub", inner.compile())
    builder.add_edge(graph.START, "a")
    builder.add_edge("a", "sub")
    capsys.readouterr()
    for _ in builder.compile(debug=True).stream({"log": []}, **kwargs):
        pass
    # A subgraph's namespace ends with its task id, which differs between runs.
    return re.sub(r"sub:[0-9a-f-]{36}", "sub:<id>", capsys.readouterr().out)


@pytest.mark.parametrize("subgraphs", [False, True])
def test_debug_prints_as_langgraph(capsys: pytest.CaptureFixture[str], subgraphs: bool) -> None:
    ours = _printed("engine", capsys, subgraphs=subgraphs)
    assert ours == _printed("langgraph", capsys, subgraphs=subgraphs)
    assert "\033[1m[updates]\033[0m {'a': {'log': ['a']}}" in ours


def test_a_node_added_after_compile_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_edge(START, "a")
    graph = builder.compile()
    assert not caplog.records
    builder.add_node("b", lambda state: {"log": ["b"]})
    builder.add_edge("a", "b")
    builder.add_conditional_edges("b", lambda state: "__end__")
    assert [r.levelname for r in caplog.records] == ["WARNING"] * 3
    assert "compiled already" in caplog.records[0].getMessage()
    assert list(graph.invoke({"log": []})["log"]) == ["a"]


def _interleaved(package: str, capsys: pytest.CaptureFixture[str], aio: bool) -> str:
    """What a reader that prints each part it is given shows, with the lines print_mode
    prints: both in the order they come."""
    graph = importlib.import_module(f"{package}.graph")
    compiled = (
        graph.StateGraph(State)
        .add_node("a", lambda state: {"log": ["a"]})
        .add_node("b", lambda state: {"log": ["b"]})
        .add_edge(graph.START, "a")
        .add_edge("a", "b")
        .compile()
    )
    kwargs = {"stream_mode": "updates", "print_mode": "values"}
    capsys.readouterr()
    if aio:

        async def read() -> None:
            async for part in compiled.astream({"log": []}, **kwargs):
                print("yielded", part)

        asyncio.run(read())
    else:
        for part in compiled.stream({"log": []}, **kwargs):
            print("yielded", part)
    return capsys.readouterr().out


@pytest.mark.parametrize("aio", [False, True])
def test_print_mode_prints_in_order_with_the_parts_yielded(
    capsys: pytest.CaptureFixture[str], aio: bool
) -> None:
    """A part made after one the reader was given is printed once the reader has it, as
    LangGraph prints: the update of a step, then the state after it."""
    ours = _interleaved("engine", capsys, aio)
    assert ours == _interleaved("langgraph", capsys, aio)
    assert ours.index("yielded {'a'") < ours.index("[values]\x1b[0m {'log': ['a']}")


def _printed_messages(package: str, capsys: pytest.CaptureFixture[str], aio: bool) -> str:
    """What `debug=True` prints of a node that adds a message without an id."""
    graph = importlib.import_module(f"{package}.graph")
    compiled = (
        graph.StateGraph(graph.MessagesState)
        .add_node("reply", lambda state: {"messages": [AIMessage("hi")]})
        .add_edge(graph.START, "reply")
        .compile(debug=True)
    )
    capsys.readouterr()
    given = {"messages": [HumanMessage("hello", id="h")]}
    if aio:
        asyncio.run(compiled.ainvoke(given))
    else:
        compiled.invoke(given)
    return re.sub(r"id='[0-9a-f-]{36}'", "id=<id>", capsys.readouterr().out)


@pytest.mark.parametrize("aio", [False, True])
def test_debug_prints_the_ids_add_messages_gives(
    capsys: pytest.CaptureFixture[str], aio: bool
) -> None:
    """The update of a step that runs one node is printed once its writes are applied,
    as LangGraph prints it: a message `add_messages` gave an id shows that id."""
    ours = _printed_messages("engine", capsys, aio)
    assert ours == _printed_messages("langgraph", capsys, aio)
    assert "[updates]\x1b[0m {'reply': {'messages': [AIMessage(content='hi'" in ours
    assert "id=<id>" in ours.split("[updates]")[1]
