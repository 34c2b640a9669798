"""`arun`: each stream part reaches the callback as `astream` yields it, and the state it
returns when a run ends at END is the state the thread's head reads back as; there is
none for a run that stops anywhere else."""

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


async def _run(graph: Any, given: Any, config: dict[str, Any]) -> StateSnapshot | None:
    return await graph.arun(given, config, lambda part: None, stream_mode="values")


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_the_final_state_of_a_run_is_its_head_read_back(durability: str) -> None:
    graph = _graph(reply)
    config = {"configurable": {"thread_id": durability}}
    for turn in range(3):
        given = {"messages": [("user", f"question {turn}")]}
        final = await graph.arun(given, config, lambda part: None, durability=durability)
        assert final == await graph.aget_state(config)


async def test_no_final_state_at_an_interrupt_and_one_once_it_is_answered() -> None:
    graph = _graph(reply, ask)
    config = {"configurable": {"thread_id": "asked"}}
    assert await _run(graph, {"messages": [("user", "go")]}, config) is None
    assert await _run(graph, Command(resume="yes"), config) == await graph.aget_state(config)


@pytest.mark.parametrize("subgraphs", [False, True])
async def test_parts_reach_the_callback_as_astream_yields_them(subgraphs: bool) -> None:
    modes = ["values", "updates", "messages", "tasks"]
    streamed, pushed = _graph(reply), _graph(reply)
    given = {"messages": [("user", "hi")]}
    config = {"configurable": {"thread_id": "parts"}}
    expected = [
        part
        async for part in streamed.astream(given, config, stream_mode=modes, subgraphs=subgraphs)
    ]
    parts: list[Any] = []
    await pushed.arun(given, config, parts.append, stream_mode=modes, subgraphs=subgraphs)
    assert _shape(parts) == _shape(expected)


def _shape(parts: list[Any]) -> list[Any]:
    """Each part's namespace and mode, and what it says without the ids every run makes
    anew (message and task ids)."""
    return [(*part[:-1], _said(part[-1])) for part in parts]


def _said(payload: Any) -> Any:
    if isinstance(payload, dict):
        return {k: _said(v) for k, v in payload.items() if k != "id"}
    if isinstance(payload, list | tuple):
        return [_said(v) for v in payload]
    return getattr(payload, "content", payload)


async def test_astream_hands_parts_over_between_steps_of_nodes_that_never_wait() -> None:
    """A reader of `astream` gets each step's parts before the next step runs, though no
    node gives the event loop up: it is not kept waiting for the run's end."""
    seen: list[str] = []

    async def first(state: MessagesState) -> dict[str, Any]:
        seen.append("first ran")
        return {"messages": [("ai", "one")]}

    async def second(state: MessagesState) -> dict[str, Any]:
        seen.append("second ran")
        return {"messages": [("ai", "two")]}

    graph = _graph(first, second)
    config = {"configurable": {"thread_id": "never waits"}}
    async for part in graph.astream({"messages": []}, config, stream_mode="updates"):
        seen.append(f"got {next(iter(part))}")
    assert seen == ["first ran", "got first", "second ran", "got second"]
