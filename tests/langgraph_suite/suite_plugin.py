"""Our replacement for the conftest.py of LangGraph's test folders, and an outcome log.

Their conftest builds checkpointers, stores and caches on Postgres, SQLite and Redis out
of LangGraph's own packages. These fixtures keep its names and parameter ids and use the
engine's savers and store instead. The engine is imported inside the fixtures: a test
that needs none of it still runs while some engine module is broken.

Every test report is appended to the file named by `--suite-report` as one JSON line,
so the harness can count outcomes even from a run that was cut short.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from engine.cache.base import BaseCache
    from engine.checkpoint.base import BaseCheckpointSaver
    from engine.checkpoint.sql import SQLSaver
    from engine.store.base import BaseStore

SAVERS = ["memory", "sqlite"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--suite-report", help="append one JSON line per test report here")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(AsyncioOnly(), "suite-asyncio-only")
    path = config.getoption("suite_report")
    if path:
        config.pluginmanager.register(OutcomeLog(Path(path)), "suite-outcome-log")


class OutcomeLog:
    """Writes each report as soon as it is made (a timeout keeps what finished)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, report: pytest.TestReport | pytest.CollectReport, when: str) -> None:
        line = {
            "nodeid": report.nodeid,
            "when": when,
            "outcome": report.outcome,
            "message": failure_message(report),
        }
        with self.path.open("a") as file:
            file.write(json.dumps(line) + "\n")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.write(report, report.when)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.passed:  # a file that failed to import, or skipped as a whole
            self.write(report, "collect")


def failure_message(report: pytest.TestReport | pytest.CollectReport) -> str:
    """One line saying why a report did not pass: what the harness groups causes by."""
    if report.passed:
        return ""
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        return report.longrepr[2]
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    else:  # an import error at collection: the "E   " lines hold the exception
        lines = report.longreprtext.splitlines()
        text = next((line[1:] for line in reversed(lines) if line.startswith("E ")), "")
        text = text or next((line for line in reversed(lines) if line.strip()), "")
    first = text.strip().splitlines()[0] if text.strip() else "(no message)"
    return first[:300]


class AsyncioOnly:
    """Runs the async tests on asyncio alone, under their own ids (`test[memory]`, as
    their snapshots are named): registered once anyio's plugin is, so that this fixture,
    not anyio's parametrized one, is the one tests get."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"


@pytest.fixture(params=["sync", "async", "exit"])
def durability(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def deterministic_uuids(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    monkeypatch.setattr(uuid, "uuid4", lambda: next(ids))


async def open_sql_saver(folder: Path) -> SQLSaver:
    """Our SQL saver on a fresh SQLite file, migrated (a few tens of ms)."""
    from engine.checkpoint.sql import SQLSaver, migrate

    url = f"sqlite:///{folder / 'checkpoints.db'}"
    await migrate(url)
    return SQLSaver.from_url(url)


@pytest.fixture(params=SAVERS)
def sync_checkpointer(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[BaseCheckpointSaver]:
    if request.param == "memory":
        from engine.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    saver = asyncio.run(open_sql_saver(tmp_path))
    yield saver
    asyncio.run(saver.aclose())


@pytest.fixture(params=SAVERS)
async def async_checkpointer(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseCheckpointSaver]:
    if request.param == "memory":
        from engine.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    saver = await open_sql_saver(tmp_path)
    yield saver
    await saver.aclose()


@pytest.fixture(params=["in_memory"])
def sync_store() -> BaseStore:
    from engine.store.memory import InMemoryStore

    return InMemoryStore()


@pytest.fixture(params=["in_memory"])
def async_store() -> BaseStore:
    from engine.store.memory import InMemoryStore

    return InMemoryStore()


@pytest.fixture(params=["in_memory"])
def cache() -> BaseCache:
    from engine.cache.memory import InMemoryCache

    return InMemoryCache()
