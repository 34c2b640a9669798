"""LangGraph's own tests must pass on our engine, or be listed with a reason in
docs/langgraph-differences.md (and leave the list once they pass)."""

from __future__ import annotations

import pytest

from .harness import ARCHIVES, REPORT_KEY, SUITE, IndexUnreachable, run_files, table, verdict


@pytest.mark.slow
def test_langgraph_suite(request: pytest.FixtureRequest) -> None:
    try:
        runs = [run_files(ARCHIVES[name], files) for name, files in SUITE.items()]
    except IndexUnreachable as error:
        pytest.skip(f"LangGraph's tests are not cached, and the index is unreachable: {error}")
    request.config.stash[REPORT_KEY] = table(runs)
    problems = verdict(runs, whole_suite=True)
    assert not problems, "\n".join(
        [f"{len(problems)} problems (see docs/langgraph-differences.md):", *problems]
    )
