"""Prints the suite's table of counts at the end of the session, whatever the capture
mode: the counts matter when the suite passes too."""

from __future__ import annotations

import pytest

from .harness import REPORT_KEY


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    text = config.stash.get(REPORT_KEY, "")
    if text:
        terminalreporter.write_sep("=", "LangGraph's own tests against the engine")
        terminalreporter.write_line(text)
