"""The SQL saver under the names of LangGraph's SQLite and Postgres savers (the packages
`langgraph-checkpoint-sqlite` and `-postgres`), so that programs made with them run after
the port: `from_conn_string(...)` as a context manager that opens and closes the saver,
and `setup()`, sync for the sync savers and async for the `aio` ones. The tables are the
SQL saver's own (docs/storage.md): a database LangGraph's savers wrote is not read.

Each saver is made from a connection string, or, as LangGraph's are, from a connection
of their drivers (`sqlite3`, `psycopg`, a `psycopg_pool` pool): it opens the same
database with connections of its own (`engine_of`)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Self

import sqlalchemy as sa
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


def postgres_url(conn_string: str, *, pipeline: bool = False) -> str:
    """The URL of the database a connection string names: `postgresql://...` (or
    `postgres://`) as given, a libpq `key=value` string (as psycopg takes) as a URL.

    `pipeline` is LangGraph's option of its psycopg connection: these keep connections
    of their own, so it is refused when set."""
    if pipeline:
        raise NotImplementedError(
            "pipeline=True tunes LangGraph's psycopg connection; this one keeps "
            "connections of its own and batches its statements itself: leave it out."
        )
    if conn_string.startswith(("postgresql://", "postgres://")):
        return conn_string
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        fields = conninfo_to_dict(conn_string)
    except ProgrammingError:
        raise ValueError(
            "Give the database as a URL (postgresql://user:password@host:5432/db) or as "
            f"libpq's key=value pairs; {conn_string[:40]!r} is neither."
        ) from None
    return _postgres_url(fields)


def engine_of(owner: object, given: Any) -> tuple[AsyncEngine, bool]:
    """The engine a saver or store of LangGraph's name runs on, and whether it made it.

    LangGraph's take a connection of their driver (`SqliteSaver(sqlite3.connect(...))`,
    `PostgresSaver(psycopg_connection_or_pool)`); these keep connections of their own,
    so they open the same database themselves, a connection per call (the one given is
    left to its owner). An in-memory SQLite connection cannot be reopened: the saver
    keeps its data in a file of its own instead, removed with the saver, as
    `from_conn_string(":memory:")` does. Another connection is refused, naming
    `from_conn_string`."""
    if isinstance(given, AsyncEngine):
        return given, False
    url = _url_of(given)
    if url is None and _is_sqlite(given):
        folder = tempfile.mkdtemp(prefix="engine-sqlite-")
        weakref.finalize(owner, shutil.rmtree, folder, ignore_errors=True)
        url = f"sqlite:///{Path(folder) / 'checkpoints.db'}"
    if url is None:
        name = type(owner).__name__
        raise TypeError(
            f"{name} keeps connections of its own and cannot reopen a "
            f"{type(given).__name__}: make it with {name}.from_conn_string(...)."
        )
    return create_engine(url, pool_per_call=True), True


def _is_sqlite(connection: Any) -> bool:
    return isinstance(connection, sqlite3.Connection) or _is_aiosqlite(connection)


def _is_aiosqlite(connection: Any) -> bool:
    return type(connection).__module__.split(".")[0] == "aiosqlite"


def _url_of(connection: Any) -> str | None:
    """The URL of the database a sqlite3 or psycopg connection (or pool) is open on."""
    if isinstance(connection, sqlite3.Connection):
        files = connection.execute("PRAGMA database_list").fetchall()
        path = next((file for _, name, file in files if name == "main"), "")
        return f"sqlite:///{Path(path)}" if path else None
    if _is_aiosqlite(connection):
        path = _aiosqlite_path(connection)
        return f"sqlite:///{Path(path)}" if path and path != ":memory:" else None
    if type(connection).__module__.split(".")[0] not in ("psycopg", "psycopg_pool"):
        return None
    info = getattr(connection, "info", None)
    if info is not None:
        fields = {"host": info.host, "port": info.port, "dbname": info.dbname}
        fields |= {"user": info.user, "password": info.password}
    else:  # a pool: its connection string and keyword arguments
        from psycopg.conninfo import conninfo_to_dict

        fields = dict(conninfo_to_dict(connection.conninfo))
        fields |= {k: v for k, v in connection.kwargs.items() if k in _ADDRESS + _KEPT_OPTIONS}
    return _postgres_url(fields)


def _aiosqlite_path(connection: Any) -> str | None:
    """The file an aiosqlite connection opens: aiosqlite keeps no public record of it,
    only the function that connects, which holds the path it was given."""
    cells = getattr(getattr(connection, "_connector", None), "__closure__", None) or ()
    found = [cell.cell_contents for cell in cells if isinstance(cell.cell_contents, str | Path)]
    return str(found[0]) if len(found) == 1 else None


_ADDRESS = ("host", "port", "dbname", "user", "password")
# libpq options a URL carries on, besides the address: asyncpg takes these (the first
# two under its own names, engine.checkpoint.sql.connect).
_KEPT_OPTIONS = ("sslmode", "connect_timeout", "target_session_attrs")


def _postgres_url(fields: dict[str, Any]) -> str:
    """A `postgresql://` URL of libpq's connection fields (a socket folder as `host`);
    an option the URL cannot carry is refused, naming it."""
    unknown = sorted(set(fields) - {*_ADDRESS, *_KEPT_OPTIONS})
    if unknown:
        raise ValueError(
            f"libpq option(s) {unknown} cannot be used here; the options taken are "
            f"{list(_KEPT_OPTIONS)}."
        )
    host = str(fields.get("host") or "")
    query = {key: str(fields[key]) for key in _KEPT_OPTIONS if fields.get(key)}
    url = sa.URL.create(
        "postgresql",
        username=fields.get("user") or None,
        password=fields.get("password") or None,
        host=None if host.startswith("/") else host or None,
        port=int(fields["port"]) if fields.get("port") else None,
        database=fields.get("dbname") or None,
        query={"host": host, **query} if host.startswith("/") else query,
    )
    return url.render_as_string(hide_password=False)


class NamedSaver(SQLSaver):
    """A `SQLSaver` made from a connection string by `from_conn_string`, or from a
    connection of LangGraph's kinds (see `engine_of`)."""

    def __init__(self, engine: Any, **options: Any) -> None:
        engine, made = engine_of(self, engine)
        super().__init__(engine, **{"owns_engine": made, **options})
        if made and engine.dialect.name == "sqlite":
            # As LangGraph's SQLite saver made on a connection, it needs no setup() call.
            run_sync(lambda: SQLSaver.setup(self))


class SyncNamedSaver(NamedSaver):
    """For sync code: `setup()` runs to completion here, and the saver holds no
    connection between calls (each sync `invoke()` runs on an event loop of its own)."""

    def setup(self) -> None:  # type: ignore[override]
        run_sync(lambda: SQLSaver.setup(self))

    @classmethod
    @contextlib.contextmanager
    def opened(cls, url: str, **options: Any) -> Iterator[Self]:
        saver = cls(create_engine(url, pool_per_call=True), owns_engine=True, **options)
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
    async def opened(cls, url: str, **options: Any) -> AsyncIterator[Self]:
        saver = cls(create_engine(url), owns_engine=True, **options)
        saver.home_loop = asyncio.get_running_loop()
        try:
            yield saver
        finally:
            await saver.aclose()
