"""A background loop's failures: a database outage is a warning when it starts and a line
when it ends, not a traceback on every beat; other failures keep their tracebacks."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy.exc import OperationalError

from app.outages import Retrying


def test_an_outage_is_two_lines_and_other_failures_each_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("tests.outages")
    retrying = Retrying(log, "claiming runs")
    away = OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))
    with caplog.at_level(logging.INFO, logger="tests.outages"):
        for _ in range(5):
            retrying.failed(away)
        retrying.succeeded()
        retrying.succeeded()
        retrying.failed(ValueError("a bug"))
        retrying.failed(ValueError("a bug"))
    told = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert told == [
        (
            "WARNING",
            "claiming runs: the database is unavailable ((builtins.ConnectionRefusedError) "
            "connection refused); trying again",
            False,
        ),
        ("INFO", "claiming runs: the database is back", False),
        ("ERROR", "claiming runs failed; trying again", True),
        ("ERROR", "claiming runs failed; trying again", True),
    ]
