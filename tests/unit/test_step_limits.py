"""What bounds a step: a `max_concurrency` or `recursion_limit` that is not a positive int
is refused before the run, not ignored, and `step_timeout` bounds a sync run's step too
(the bounds themselves are conformance cases: cases_runtime, cases_policies)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engine import START, StateGraph


@pytest.mark.parametrize("bad", [0, -2, True, 2.5, "3"])
async def test_a_bad_max_concurrency_is_refused(bad: Any) -> None:
    ran: list[str] = []
    graph = StateGraph(dict).add_node("a", lambda s: ran.append("a") or {}).add_edge(START, "a")
    compiled = graph.compile()
    with pytest.raises(ValueError, match="max_concurrency must be a positive int"):
        await compiled.ainvoke({}, {"max_concurrency": bad})
    with pytest.raises(ValueError, match="max_concurrency"):
        compiled.invoke({}, {"max_concurrency": bad})
    assert ran == []


def test_step_timeout_bounds_a_sync_node() -> None:
    release = threading.Event()

    def stuck(state: dict[str, Any]) -> dict[str, Any]:
        release.wait(10)
        return {}

    graph = StateGraph(dict).add_node("stuck", stuck).add_edge(START, "stuck").compile()
    graph.step_timeout = 0.05
    try:
        with pytest.raises(TimeoutError, match=r"step_timeout \(0.05 s\); still running: stuck"):
            graph.invoke({"x": 1})
    finally:
        release.set()  # the node's thread runs on, unwaited: let it end


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3"])
async def test_a_bad_recursion_limit_is_refused(bad: Any) -> None:
    ran: list[str] = []
    graph = StateGraph(dict).add_node("a", lambda s: ran.append("a") or {}).add_edge(START, "a")
    compiled = graph.compile()
    with pytest.raises(ValueError, match="recursion_limit must be a positive int"):
        await compiled.ainvoke({}, {"recursion_limit": bad})
    with pytest.raises(ValueError, match="recursion_limit"):
        list(compiled.stream({}, {"recursion_limit": bad}))
    assert ran == []
