"""Fixtures for the conformance suite: one API namespace per implementation.

Set ``CONFORMANCE_SELFCHECK=1`` to run every case twice on LangGraph instead (checks that
a case is deterministic, and lets the suite run before our engine imports).
"""

from __future__ import annotations

import faulthandler
import sys
from collections.abc import Iterator

import pytest

from .harness import NS, SELFCHECK, engine_ns, langgraph_ns

# A case that hangs (say, an engine loop that never ends) must not stall the suite:
# past this many seconds the process dumps every thread's stack and exits.
CASE_DEADLINE_SECONDS = 120


@pytest.fixture(scope="session")
def oracle() -> NS:
    return langgraph_ns()


@pytest.fixture(scope="session")
def ours() -> NS:
    if SELFCHECK:
        return langgraph_ns()
    return engine_ns()


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    faulthandler.dump_traceback_later(CASE_DEADLINE_SECONDS, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
