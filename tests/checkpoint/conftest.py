"""Savers under test: the in-memory one, SQLite in a temp file, and a real PostgreSQL.

PostgreSQL comes from tests/pg.py: a throwaway cluster for the session (or the server
named by THREADLINE_TEST_DATABASE_URL), migrated once; each test starts from empty tables.
SQLite tests copy a migrated template file, which is faster than migrating each time.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from engine.checkpoint.base import BaseCheckpointSaver
from engine.checkpoint.memory import InMemorySaver
from engine.checkpoint.sql.migrations import migrate
from engine.checkpoint.sql.models import checkpoint_metadata
from engine.checkpoint.sql.saver import SQLSaver


def run_aside(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from code that may itself run inside an event loop
    (session fixtures are first requested from async fixtures)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "template.db"
    run_aside(migrate(f"sqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def migrated_postgres(postgres_url: str) -> str:
    run_aside(migrate(postgres_url))
    return postgres_url


async def open_saver(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> SQLSaver:
    """A SQL saver on a fresh, migrated database of `kind` ("sqlite" or "postgres")."""
    if kind == "sqlite":
        path = tmp_path / "threadline.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return SQLSaver.from_url(f"sqlite:///{path}")
    saver = SQLSaver.from_url(request.getfixturevalue("migrated_postgres"))
    tables = ", ".join(table.name for table in checkpoint_metadata.sorted_tables)
    async with saver.engine.begin() as conn:
        await conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY"))
    return saver


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def saver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseCheckpointSaver]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    sql_saver = await open_saver(request.param, request, tmp_path)
    yield sql_saver
    await sql_saver.aclose()


@pytest.fixture(params=["sqlite", "postgres"])
async def sql_saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLSaver]:
    sql_saver = await open_saver(request.param, request, tmp_path)
    yield sql_saver
    await sql_saver.aclose()


@pytest.fixture
async def pg_saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLSaver]:
    sql_saver = await open_saver("postgres", request, tmp_path)
    yield sql_saver
    await sql_saver.aclose()
