"""The state `astream` hands to `final_state` when a run ends at END is the state the
thread's head reads back as, and there is none for a run that stops anywhere else."""

from __future__ import annotations

from typing import Any

import pytest

from engine import END, START, Command, MessagesState, StateGraph, StateSnapshot, interrupt
from engine.checkpoint.memory import InMemorySaver


def reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [("ai", f"answer {len(state['messages'])}")]}


def ask(state: MessagesState) -> dict[str, Any]:
    return {"messages": [("ai", interrupt("sure?"))]}


def _graph(*nodes: Any) -> Any:
    builder = StateGraph(MessagesState)
    names = [node.__name__ for node in nodes]
    for node in nodes:
        builder.add_node(node)
    for a, b in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(a, b)
    return builder.compile(checkpointer=InMemorySaver())


async def _run(graph: Any, given: Any, config: dict[str, Any]) -> list[StateSnapshot]:
    final: list[StateSnapshot] = []
    async for _ in graph.astream(given, config, stream_mode="values", final_state=final.append):
        pass
    return final


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_the_final_state_of_a_run_is_its_head_read_back(durability: str) -> None:
    graph = _graph(reply)
    config = {"configurable": {"thread_id": durability}}
    for turn in range(3):
        final: list[StateSnapshot] = []
        async for _ in graph.astream(
            {"messages": [("user", f"question {turn}")]},
            config,
            durability=durability,
            final_state=final.append,
        ):
            pass
        assert final == [await graph.aget_state(config)]


async def test_no_final_state_at_an_interrupt_and_one_once_it_is_answered() -> None:
    graph = _graph(reply, ask)
    config = {"configurable": {"thread_id": "asked"}}
    assert await _run(graph, {"messages": [("user", "go")]}, config) == []
    assert await _run(graph, Command(resume="yes"), config) == [await graph.aget_state(config)]
