"""LangGraph's SQLite and Postgres savers by their names (`engine.checkpoint.sqlite`,
`.sqlite.aio`, `.postgres`, `.postgres.aio`): made with `from_conn_string` as a context
manager or from a connection of their drivers, set up, used by a graph's sync and async
calls, and what they saved is there when the database is opened again (not for
`:memory:`)."""

from __future__ import annotations

import asyncio
import gc
import operator
import sqlite3
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
import psycopg
import pytest
import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from engine.checkpoint.postgres import PostgresSaver
from engine.checkpoint.postgres.aio import AsyncPostgresSaver
from engine.checkpoint.serde.jsonplus import JsonPlusSerializer
from engine.checkpoint.sqlite import SqliteSaver
from engine.checkpoint.sqlite.aio import AsyncSqliteSaver
from engine.graph import START, StateGraph
from engine.pregel.sync import run_sync


class Log(TypedDict):
    log: Annotated[list, operator.add]


BUILDER = StateGraph(Log).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_sqlite_saver_keeps_a_file_and_forgets_memory(tmp_path: Path) -> None:
    path, config = str(tmp_path / "checkpoints.db"), thread()
    with SqliteSaver.from_conn_string(path) as saver:
        graph = BUILDER.compile(checkpointer=saver)
        assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    with SqliteSaver.from_conn_string(path) as saver:
        graph = BUILDER.compile(checkpointer=saver)
        assert graph.invoke({"log": []}, config) == {"log": ["a", "a"]}
        assert len(list(saver.list(config))) == 6
    for _ in range(2):
        with SqliteSaver.from_conn_string(":memory:") as saver:
            graph = BUILDER.compile(checkpointer=saver)
            assert graph.invoke({"log": []}, config) == {"log": ["a"]}


async def test_async_sqlite_saver(tmp_path: Path) -> None:
    path, config = str(tmp_path / "checkpoints.db"), thread()
    for expected in (["a"], ["a", "a"]):
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            graph = BUILDER.compile(checkpointer=saver)
            assert await graph.ainvoke({"log": []}, config) == {"log": expected}


def test_postgres_savers(postgres_url: str) -> None:
    # As LangGraph's guides write the URL: libpq's `sslmode` is asyncpg's `ssl`.
    config, postgres_url = thread(), f"{postgres_url}?sslmode=disable"
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        graph = BUILDER.compile(checkpointer=saver)
        assert graph.invoke({"log": []}, config) == {"log": ["a"]}
        assert saver.get_tuple(config) is not None

    async def again() -> Any:
        async with AsyncPostgresSaver.from_conn_string(postgres_url) as saver:
            await saver.setup()
            graph = BUILDER.compile(checkpointer=saver)
            return await graph.ainvoke({"log": []}, config)

    assert run_sync(again) == {"log": ["a", "a"]}


def test_made_from_a_connection_as_langgraphs_are(tmp_path: Path, postgres_url: str) -> None:
    """`SqliteSaver(sqlite3.connect(path))` and `PostgresSaver(psycopg connection or
    pool)`, as LangGraph's guides make them: the saver opens the same database with
    connections of its own (the SQLite one with its tables made), and leaves the given
    connection open to its owner."""
    path, config = tmp_path / "checkpoints.db", thread()
    connection = sqlite3.connect(path, check_same_thread=False)
    graph = BUILDER.compile(checkpointer=SqliteSaver(connection))
    assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    assert connection.execute("SELECT count(*) FROM checkpoint_threads").fetchone() == (1,)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        assert BUILDER.compile(checkpointer=saver).get_state(config).values == {"log": ["a"]}

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        graph = BUILDER.compile(checkpointer=saver)
        assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    with ConnectionPool(postgres_url, kwargs={"autocommit": True}, open=True) as pool:
        graph = BUILDER.compile(checkpointer=PostgresSaver(pool))
        assert graph.invoke({"log": []}, config) == {"log": ["a", "a"]}

    async def from_an_async_connection() -> Any:
        async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
            graph = BUILDER.compile(checkpointer=AsyncPostgresSaver(conn))
            return await graph.ainvoke({"log": []}, config)

    assert asyncio.run(from_an_async_connection()) == {"log": ["a", "a", "a"]}

    async def from_aiosqlite() -> Any:
        async with aiosqlite.connect(path) as conn:
            graph = BUILDER.compile(checkpointer=AsyncSqliteSaver(conn))
            return await graph.ainvoke({"log": []}, config)

    assert asyncio.run(from_aiosqlite()) == {"log": ["a", "a"]}


def test_a_libpq_string_names_the_database_as_a_url_does(postgres_url: str) -> None:
    url = sa.make_url(postgres_url)
    dsn = f"host={url.host} port={url.port} dbname={url.database} user={url.username}"
    config = thread()
    with PostgresSaver.from_conn_string(f"{dsn} sslmode=disable connect_timeout=5") as saver:
        saver.setup()
        graph = BUILDER.compile(checkpointer=saver)
        assert graph.invoke({"log": []}, config) == {"log": ["a"]}

    async def again() -> Any:
        serde = JsonPlusSerializer()
        async with AsyncPostgresSaver.from_conn_string(dsn, serde=serde) as saver:
            assert saver.serde is serde
            return await BUILDER.compile(checkpointer=saver).ainvoke({"log": []}, config)

    assert asyncio.run(again()) == {"log": ["a", "a"]}


def test_a_saver_of_an_in_memory_connection_keeps_a_file_of_its_own() -> None:
    """As LangGraph's guides make it (`SqliteSaver(sqlite3.connect(":memory:",
    check_same_thread=False))`): the saver cannot reopen that database, so it keeps its
    checkpoints in a file of its own, gone with the saver."""
    config = thread()
    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    graph = BUILDER.compile(checkpointer=saver)
    assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    assert graph.invoke({"log": []}, config) == {"log": ["a", "a"]}
    folder = Path(saver.engine.url.database or "").parent
    assert folder.is_dir()
    del graph, saver
    gc.collect()
    assert not folder.exists()

    async def in_memory() -> Any:
        async with aiosqlite.connect(":memory:") as conn:
            graph = BUILDER.compile(checkpointer=AsyncSqliteSaver(conn))
            await graph.ainvoke({"log": []}, config)
            return await graph.ainvoke({"log": []}, config)

    assert asyncio.run(in_memory()) == {"log": ["a", "a"]}


def test_what_it_cannot_take_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"cannot reopen a str"):
        SqliteSaver(str(tmp_path / "x.db"))
    for conn_string, error, match in [
        ("not a connection string", ValueError, "as a URL .* or as libpq's key=value"),
        ("host=db application_name=x", ValueError, r"option\(s\) \['application_name'\]"),
    ]:
        with pytest.raises(error, match=match), PostgresSaver.from_conn_string(conn_string):
            pass
    with (
        pytest.raises(NotImplementedError, match="pipeline=True tunes"),
        PostgresSaver.from_conn_string("postgresql://db/x", pipeline=True),
    ):
        pass

    async def foreign_serde() -> None:
        async with AsyncPostgresSaver.from_conn_string("postgresql://db/x", serde=object()):  # type: ignore[arg-type]
            pass

    with pytest.raises(TypeError, match="serde must be a JsonSerializer"):
        asyncio.run(foreign_serde())


def test_an_async_saver_refuses_a_run_on_another_loop(postgres_url: str, tmp_path: Path) -> None:
    """An `aio` saver's connections belong to the loop it opened on: a sync `invoke` (a
    loop of its own) is refused before it runs, naming what to do, and the saver still
    works on its loop."""
    config = thread()

    async def run(opened: Any, twin: str) -> Any:
        async with opened as saver:
            await saver.setup()
            graph = BUILDER.compile(checkpointer=saver)
            with pytest.raises(RuntimeError, match=f"ainvoke/astream .*, or {twin} in sync"):
                graph.invoke({"log": []}, config)
            with pytest.raises(RuntimeError, match="belongs to the event loop"):
                await asyncio.to_thread(graph.invoke, {"log": []}, config)
            return await graph.ainvoke({"log": []}, config)

    postgres = AsyncPostgresSaver.from_conn_string(postgres_url)
    assert asyncio.run(run(postgres, "PostgresSaver")) == {"log": ["a"]}
    sqlite = AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db"))
    assert asyncio.run(run(sqlite, "SqliteSaver")) == {"log": ["a"]}
