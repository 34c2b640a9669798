"""The persistence cases again, with our engine saving to the SQL saver on SQLite and on
PostgreSQL: what a thread looks like must not depend on where it is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import migrate
from engine.checkpoint.sql.models import checkpoint_metadata
from engine.checkpoint.sql.saver import SQLSaver
from tests.pg import PostgresCluster

# Importing the case modules registers their cases.
from . import (  # noqa: F401
    cases_core,
    cases_delta,
    cases_func,
    cases_langchain,
    cases_nesting,
    cases_persistence,
    cases_pregel,
    cases_runtime,
)
from .harness import CASES, NS, ON_SQL, case_params, diff, observe

PERSISTENCE = sorted(
    name
    for name, fn in CASES.items()
    if name in ON_SQL or getattr(fn, "func", fn).__module__ == cases_persistence.__name__
)


def saver_factory(url: str) -> Callable[[], SQLSaver]:
    """What the cases call as `InMemorySaver()`: a saver on the test's database."""
    return lambda: SQLSaver(create_engine(url, pool_per_call=True), owns_engine=True)


@pytest.fixture(scope="module")
def postgres_database(postgres_cluster: PostgresCluster | None, postgres_url: str) -> str:
    url = (
        postgres_cluster.create_database("conformance_sql")
        if postgres_cluster is not None
        else postgres_url
    )
    asyncio.run(migrate(url))
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty, migrated database per case."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'conformance.db'}"
        asyncio.run(migrate(url))
        yield url
        return
    url = request.getfixturevalue("postgres_database")
    asyncio.run(_truncate(url))
    yield url


async def _truncate(url: str) -> None:
    engine = create_engine(url, pool_per_call=True)
    tables = ", ".join(table.name for table in checkpoint_metadata.sorted_tables)
    async with engine.begin() as conn:
        await conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("name", case_params(PERSISTENCE))
def test_persistence_on_sql(name: str, oracle: NS, ours: NS, database: str) -> None:
    on_sql = NS(**{**vars(ours), "InMemorySaver": saver_factory(database)})
    expected = observe(CASES[name], oracle)
    actual = observe(CASES[name], on_sql)
    assert actual == expected, f"{name}: on SQL, differs from langgraph\n{diff(expected, actual)}"
