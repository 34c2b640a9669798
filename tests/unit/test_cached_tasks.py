"""A task answered from the node cache ends like any other: its result is streamed
(`tasks` and `debug` modes), where LangGraph streams only its start
(docs/langgraph-differences.md), and its writes are saved with its step, as in
LangGraph."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from engine import START, StateGraph
from engine.cache.memory import InMemoryCache
from engine.checkpoint.memory import InMemorySaver
from engine.types import CachePolicy


class State(TypedDict):
    seen: Annotated[list[str], operator.add]


def _graph(calls: list[str]) -> Any:
    def slow(state: State) -> dict[str, Any]:
        calls.append("slow")
        return {"seen": ["slow"]}

    def fast(state: State) -> dict[str, Any]:
        return {"seen": ["fast"]}

    builder = StateGraph(State)
    builder.add_node("slow", slow, cache_policy=CachePolicy())
    builder.add_node("fast", fast)
    builder.add_edge(START, "slow")
    builder.add_edge(START, "fast")
    return builder.compile(checkpointer=InMemorySaver(), cache=InMemoryCache())


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def test_a_cached_task_streams_its_result() -> None:
    calls: list[str] = []
    graph = _graph(calls)
    graph.invoke({"seen": []}, _config("first"))
    parts = list(graph.stream({"seen": []}, _config("second"), stream_mode=["tasks", "updates"]))
    assert calls == ["slow"]  # the second run's slow task came from the cache
    assert ("updates", {"slow": {"seen": ["slow"]}, "__metadata__": {"cached": True}}) in parts
    started = [p["name"] for mode, p in parts if mode == "tasks" and "input" in p]
    ended = {p["name"]: p for mode, p in parts if mode == "tasks" and "result" in p}
    assert sorted(started) == sorted(ended) == ["fast", "slow"]
    assert ended["slow"]["result"] == {"seen": ["slow"]}
    assert ended["slow"]["error"] is None


def test_a_cached_task_has_a_debug_result() -> None:
    graph = _graph([])
    graph.invoke({"seen": []}, _config("first"))
    events = list(graph.stream({"seen": []}, _config("second"), stream_mode="debug"))
    results = [e["payload"]["name"] for e in events if e["type"] == "task_result"]
    assert sorted(results) == ["fast", "slow"]


def test_a_cached_task_writes_are_saved_with_its_step() -> None:
    graph = _graph([])
    graph.invoke({"seen": []}, _config("first"))
    config = _config("second")
    graph.invoke({"seen": []}, config, durability="sync")
    history = list(graph.get_state_history(config))
    first_step = next(s for s in history if s.next and set(s.next) == {"fast", "slow"})
    assert {t.name: t.result for t in first_step.tasks} == {
        "fast": {"seen": ["fast"]},
        "slow": {"seen": ["slow"]},
    }
    assert sorted(graph.get_state(config).values["seen"]) == ["fast", "slow"]
