"""`max_concurrency` that is not a positive int is refused before the run, not ignored
(the bound itself is a conformance case: cases_runtime)."""

from __future__ import annotations

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
