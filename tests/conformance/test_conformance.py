"""One test per conformance case: LangGraph's observation must equal our engine's."""

from __future__ import annotations

import pytest

from . import cases_core, cases_persistence  # noqa: F401 - they register the cases
from .harness import CASES, NS, diff, observe


@pytest.mark.parametrize("name", sorted(CASES))
def test_conformance(name: str, oracle: NS, ours: NS) -> None:
    expected = observe(CASES[name], oracle)
    actual = observe(CASES[name], ours)
    assert actual == expected, f"{name}: engine differs from langgraph\n{diff(expected, actual)}"
