"""What bounds a step: a `max_concurrency` or `recursion_limit` that is not a positive int
is refused before the run, not ignored, and `step_timeout` bounds a sync run's step too
(the bounds themselves are conformance cases: cases_runtime, cases_policies)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from engine import START, StateGraph


@pytest.mark.parametrize("key", ["max_concurrency", "recursion_limit"])
@pytest.mark.parametrize("bad", [0, -2, True, 2.5, "3"])
async def test_a_bad_limit_is_refused(key: str, bad: Any) -> None:
    ran: list[str] = []
    graph = StateGraph(dict).add_node("a", lambda s: ran.append("a") or {}).add_edge(START, "a")
    compiled = graph.compile()
    # An int below 1 as recursion_limit gets LangGraph's own text.
    with pytest.raises(ValueError, match=f"{key} must be (a positive int|at least 1)"):
        await compiled.ainvoke({}, {key: bad})
    with pytest.raises(ValueError, match=key):
        compiled.invoke({}, {key: bad})
    with pytest.raises(ValueError, match=key):
        list(compiled.stream({}, {key: bad}))
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


def test_the_default_recursion_limit_comes_from_langgraphs_variable() -> None:
    """LANGGRAPH_DEFAULT_RECURSION_LIMIT sets the limit of a call that sets none, as it
    does for LangGraph: read once, when the engine is imported (so in a process of its
    own here)."""
    code = (
        "from engine import START, StateGraph\n"
        "from engine.errors import GraphRecursionError\n"
        "g = StateGraph(dict).add_node('a', lambda s: {}).add_edge(START, 'a')\n"
        "g.add_conditional_edges('a', lambda s: 'a')\n"
        "try:\n"
        "    g.compile().invoke({})\n"
        "except GraphRecursionError as exc:\n"
        "    print(str(exc).split(' reached')[0])\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "LANGGRAPH_DEFAULT_RECURSION_LIMIT": "3"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env
    )
    assert done.stdout.strip() == "Recursion limit of 3"
