"""The SQL saver under the names of LangGraph's SQLite and Postgres savers (the packages
`langgraph-checkpoint-sqlite` and `-postgres`), so that programs made with them run after
the port: `from_conn_string(...)` as a context manager that opens and closes the saver,
and `setup()`, sync for the sync savers and async for the `aio` ones. The tables are the
SQL saver's own (docs/storage.md): a database LangGraph's savers wrote is not read.

Each saver is made from a connection string; a connection object (`sqlite3`,
`aiosqlite`, `psycopg`) is refused, naming `from_conn_string`, as the saver keeps a pool
of its own."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Self

from sqlalchemy.ext.asyncio import AsyncEngine

from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.saver import SQLSaver
from engine.pregel.sync import run_sync


@contextlib.contextmanager
def sqlite_url(conn_string: str) -> Iterator[str]:
    """The URL of the SQLite database `conn_string` names: a file path, or `:memory:`,
    which becomes a file in a folder of its own, removed when the block ends (the saver's
    connections come and go, and each would see its own empty in-memory database)."""
    if conn_string != ":memory:":
        yield f"sqlite:///{Path(conn_string)}"
        return
    with tempfile.TemporaryDirectory(prefix="engine-sqlite-") as folder:
        yield f"sqlite:///{Path(folder) / 'checkpoints.db'}"


def postgres_url(conn_string: str) -> str:
    """`postgresql://...` (or `postgres://`) as given; a `key=value` DSN is refused."""
    if not conn_string.startswith(("postgresql://", "postgres://")):
        raise ValueError(
            "Give the database as a URL (postgresql://user:password@host:5432/db); "
            f"{conn_string[:40]!r} is not one."
        )
    return conn_string


def refuse_connections(owner: object, engine: Any) -> None:
    """A saver or store of LangGraph's name made from a connection object (`sqlite3`,
    `psycopg`, ...): refused, naming `from_conn_string`, as it keeps a pool of its own."""
    if not isinstance(engine, AsyncEngine):
        name = type(owner).__name__
        raise TypeError(
            f"{name} keeps a pool of its own connections: make it with "
            f"{name}.from_conn_string(...) rather than from a {type(engine).__name__}."
        )


class NamedSaver(SQLSaver):
    """A `SQLSaver` made from a connection string by `from_conn_string`."""

    def __init__(self, engine: Any, **options: Any) -> None:
        refuse_connections(self, engine)
        super().__init__(engine, **options)


class SyncNamedSaver(NamedSaver):
    """For sync code: `setup()` runs to completion here, and the saver holds no
    connection between calls (each sync `invoke()` runs on an event loop of its own)."""

    def setup(self) -> None:  # type: ignore[override]
        run_sync(lambda: SQLSaver.setup(self))

    @classmethod
    @contextlib.contextmanager
    def opened(cls, url: str) -> Iterator[Self]:
        saver = cls(create_engine(url, pool_per_call=True), owns_engine=True)
        try:
            yield saver
        finally:
            run_sync(saver.aclose)


class AsyncNamedSaver(NamedSaver):
    """For async code: its pooled connections belong to the event loop it opens on (its
    `home_loop`); a run on another loop (a sync `invoke`) is refused."""

    home_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(cls, url: str) -> AsyncIterator[Self]:
        saver = cls(create_engine(url), owns_engine=True)
        saver.home_loop = asyncio.get_running_loop()
        try:
            yield saver
        finally:
            await saver.aclose()
