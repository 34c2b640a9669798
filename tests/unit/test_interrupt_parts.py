"""The questions of parallel tasks of one step: an `updates` and a `values` part per
interrupted task when it asks, as in LangGraph, but each `values` part shows every
question of the step asked so far, where LangGraph's shows its task's only
(docs/langgraph-differences.md): a client keeping the last state it saw sees every open
question."""

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


def test_parallel_questions_are_parts_each_and_the_last_values_part_shows_all() -> None:
    config = {"configurable": {"thread_id": "1"}}
    parts = list(_graph().stream({"log": []}, config, stream_mode=["updates", "values"]))
    asked = [(mode, _questions(p)) for mode, p in parts if "__interrupt__" in p]
    updates = [questions for mode, questions in asked if mode == "updates"]
    assert sorted(updates) == [["p?"], ["q?"]]
    values = [questions for mode, questions in asked if mode == "values"]
    assert values == [updates[0], ["p?", "q?"]]
    assert [mode for mode, _ in asked] == ["updates", "values", "updates", "values"]
    # The step's end is shown after them, with the finished task's write, as in LangGraph.
    assert parts[-1] == ("values", {"log": ["ok"]})


async def test_astream_events_show_a_chunk_per_question_as_langgraph() -> None:
    config = {"configurable": {"thread_id": "2"}}
    chunks = [
        e["data"]["chunk"]
        async for e in _graph().astream_events({"log": []}, config, version="v2")
        if e["event"] == "on_chain_stream" and e["name"] == "LangGraph"
    ]
    asked = sorted(_questions(c) for c in chunks if "__interrupt__" in c)
    assert asked == [["p?"], ["q?"]]
