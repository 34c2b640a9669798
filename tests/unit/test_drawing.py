"""Drawing a graph whose node hands control to its parent graph's node: the node's
`Command[Literal[...]]` names a node this graph does not have, which is not drawn (the
drawing failed with KeyError). LangGraph refuses such a graph at compile
(docs/langgraph-differences.md)."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from engine.graph import START, StateGraph
from engine.types import Command


class State(TypedDict):
    x: int


def hand_off(state: State) -> Command[Literal["b"]]:
    return Command(goto="b", graph=Command.PARENT)


def test_a_destination_in_the_parent_graph_is_not_drawn() -> None:
    inner = StateGraph(State).add_node("hand", hand_off).add_edge(START, "hand").compile()
    parent = (
        StateGraph(State)
        .add_node("sub", inner)
        .add_node("b", lambda state: {"x": 1})
        .add_edge(START, "sub")
        .compile()
    )
    assert parent.invoke({"x": 0}) == {"x": 1}
    assert {(e.source, e.target) for e in inner.get_graph().edges} == {("__start__", "hand")}
    drawn = parent.get_graph(xray=True)
    assert sorted(drawn.nodes) == ["__end__", "__start__", "b", "sub:hand"]
    assert "hand" in drawn.draw_mermaid()
