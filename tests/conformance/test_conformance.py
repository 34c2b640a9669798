"""One test per conformance case: LangGraph's observation must equal our engine's."""

from __future__ import annotations

import pytest

# Importing the case modules registers their cases.
from . import (  # noqa: F401
    cases_annotations,
    cases_compiled,
    cases_core,
    cases_delta,
    cases_deprecated,
    cases_func,
    cases_langchain,
    cases_nesting,
    cases_persistence,
    cases_policies,
    cases_pregel,
    cases_runtime,
    cases_serde,
    cases_streams,
    cases_tracing,
)
from .harness import CASES, NS, case_params, diff, observe


@pytest.mark.parametrize("name", case_params(sorted(CASES)))
def test_conformance(name: str, oracle: NS, ours: NS) -> None:
    expected = observe(CASES[name], oracle)
    # A case that fails on LangGraph itself (a typo, a missing import) observes nothing.
    failed = isinstance(expected, dict) and "uncaught" in expected
    assert not failed, f"{name}: the case fails on langgraph: {expected}"
    actual = observe(CASES[name], ours)
    assert actual == expected, f"{name}: engine differs from langgraph\n{diff(expected, actual)}"
