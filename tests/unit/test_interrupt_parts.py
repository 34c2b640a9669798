"""The questions of parallel tasks of one step are streamed in one part of each mode,
where LangGraph streams a part per interrupted task (docs/langgraph-differences.md): a
client sees every open question in the one part that has any."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from engine import START, StateGraph, interrupt
from engine.checkpoint.memory import InMemorySaver


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph() -> Any:
    def ask_p(state: State) -> dict[str, Any]:
        return {"log": [interrupt("p?")]}

    def ask_q(state: State) -> dict[str, Any]:
        return {"log": [interrupt("q?")]}

    def answer(state: State) -> dict[str, Any]:
        return {"log": ["ok"]}

    builder = StateGraph(State)
    for node in (ask_p, ask_q, answer):
        builder.add_node(node)
        builder.add_edge(START, node.__name__)
    return builder.compile(checkpointer=InMemorySaver())


def _questions(part: dict[str, Any]) -> list[str]:
    return sorted(i.value for i in part["__interrupt__"])


def test_parallel_questions_are_one_updates_part_and_one_values_part() -> None:
    config = {"configurable": {"thread_id": "1"}}
    parts = list(_graph().stream({"log": []}, config, stream_mode=["updates", "values"]))
    asked = [(mode, p) for mode, p in parts if "__interrupt__" in p]
    assert [mode for mode, _ in asked] == ["updates", "values"]
    assert all(_questions(p) == ["p?", "q?"] for _, p in asked)
    # The step's end is shown after them, with the finished task's write, as in LangGraph.
    assert parts[-1] == ("values", {"log": ["ok"]})


async def test_astream_events_show_the_questions_in_one_chunk() -> None:
    config = {"configurable": {"thread_id": "2"}}
    chunks = [
        e["data"]["chunk"]
        async for e in _graph().astream_events({"log": []}, config, version="v2")
        if e["event"] == "on_chain_stream" and e["name"] == "LangGraph"
    ]
    asked = [c for c in chunks if "__interrupt__" in c]
    assert len(asked) == 1
    assert _questions(asked[0]) == ["p?", "q?"]
