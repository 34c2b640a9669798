"""Database URLs and engines for the SQL saver: one place that knows the dialect quirks.

Users write the URL they know (`postgresql://...`, `sqlite:///./data/threadline.db`); the
async driver is filled in here, so configuration never has to name one.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import URL, event, make_url
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

# Execution option that marks a transaction as a writer. SQLite then takes the write lock
# at BEGIN, so two writers queue on busy_timeout instead of one failing when it upgrades
# a read snapshot that went stale (SQLITE_BUSY_SNAPSHOT cannot be waited out).
WRITE_OPTION = "threadline_write"
# A pooled connection idle this long is pinged before use (see `_ping_when_idle`).
PING_AFTER_IDLE_S = 1.0
_IDLE_SINCE = "threadline_idle_since"

# asyncpg costs less CPU per statement than psycopg; both work when named explicitly.
_ASYNC_DRIVERS = {"postgresql": "postgresql+asyncpg", "postgres": "postgresql+asyncpg"}
_SQLITE_PRAGMAS = (
    # Wait for a lock instead of failing at once; first, as the switch to WAL takes one
    # (connections opening a new file at once, as savers calling `setup()` do, queue).
    "PRAGMA busy_timeout=30000",
    "PRAGMA synchronous=NORMAL",  # durable across process crashes; WAL makes FULL unneeded
    "PRAGMA foreign_keys=ON",
)
# Readers never block the writer, nor it them. The mode stays with the file, so only
# connections to a new file switch it; connections opening one at once may find it
# locked whatever the busy timeout (SQLite does not wait for every lock the switch
# takes), and try again.
_WAL_ATTEMPTS = 100
_WAL_PAUSE_S = 0.02


def normalize_url(url: str | URL) -> URL:
    """The URL with an async driver: `postgresql://` -> asyncpg, `sqlite://` -> aiosqlite.

    A URL that already names a driver (`postgresql+asyncpg://`) is kept as it is.
    """
    parsed = make_url(url)
    if parsed.drivername in _ASYNC_DRIVERS:
        parsed = parsed.set(drivername=_ASYNC_DRIVERS[parsed.drivername])
    if parsed.drivername == "postgresql+asyncpg":
        return _asyncpg_options(parsed)
    if parsed.drivername == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite")
    return parsed


def _asyncpg_options(url: URL) -> URL:
    """libpq's names of the options asyncpg takes under names of its own, so that a URL
    written for psycopg or LangGraph's savers (`?sslmode=disable`) works: `sslmode` is
    asyncpg's `ssl` (same values), `connect_timeout` its `timeout`."""
    query = dict(url.query)
    for libpq, asyncpg in _ASYNCPG_NAMES.items():
        if libpq in query:
            value = query.pop(libpq)
            query.setdefault(asyncpg, value)
    return url.set(query=query) if query != dict(url.query) else url


_ASYNCPG_NAMES = {"sslmode": "ssl", "connect_timeout": "timeout"}


def libpq_url(url: URL) -> str:
    """A normalized PostgreSQL URL as libpq (a plain psycopg connection) reads it: no
    driver, and its options under libpq's names again."""
    back = {asyncpg: libpq for libpq, asyncpg in _ASYNCPG_NAMES.items()}
    query = {back.get(key, key): value for key, value in url.query.items()}
    plain = url.set(drivername="postgresql", query=query)
    return plain.render_as_string(hide_password=False)


# The default separators add two bytes per key to every stored JSON column; built once,
# as json.dumps with options builds an encoder on every call.
_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def create_engine(
    url: str | URL,
    *,
    pool_size: int = 10,
    max_overflow: int = 20,
    pool_timeout: float = 30.0,
    pool_recycle: int = 1800,
    echo: bool = False,
    pool_per_call: bool = False,
) -> AsyncEngine:
    """An async engine ready for the saver.

    A connection that sat in the pool for a while is pinged at checkout, so one the
    server dropped meanwhile (restart, idle timeout, pg_terminate_backend) is replaced
    instead of failing the call; a busy pool hands out connections without the round
    trips of a ping.
    PostgreSQL also gets the pool limits and recycling. A SQLite file gets its parent
    directory, WAL, a busy timeout and foreign keys, and SQLAlchemy (not the sqlite3
    module) emits BEGIN, so writers can take the write lock up front.

    `pool_per_call` keeps no connection between uses, for callers whose calls each run
    on a new event loop (the sync `invoke()` of a graph does), which a pooled
    connection must not outlive.
    """
    parsed = normalize_url(url)
    options: dict[str, Any] = {
        "echo": echo,
        "json_serializer": _compact_json,
    }
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite:
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    if pool_per_call:
        options["poolclass"] = NullPool
    elif not is_sqlite:
        options.update(
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
            pool_recycle=pool_recycle,
        )
    if parsed.drivername == "postgresql+asyncpg" and "timeout" in parsed.query:
        # asyncpg takes its connect timeout as a number, which a URL's query is not.
        seconds = parsed.query["timeout"]
        try:
            options["connect_args"] = {"timeout": float(str(seconds))}
        except ValueError:
            raise ValueError(
                f"The URL's connect timeout must be seconds, not {seconds!r}."
            ) from None
        parsed = parsed.difference_update_query(["timeout"])
    if is_sqlite and parsed.drivername == "sqlite+aiosqlite":
        options["connect_args"] = {"factory": RollbackOnClose}
    engine = create_async_engine(parsed, **options)
    _ping_when_idle(engine)
    if is_sqlite:
        _configure_sqlite(engine)
    return engine


class RollbackOnClose(sqlite3.Connection):
    """A SQLite connection that ends its transaction when it is closed.

    sqlite3's `close()` leaves a connection whose statements are not all finalized open
    as a "zombie" (sqlite3_close_v2) until the last of them is, transaction and locks
    included. SQLAlchemy closes a connection in a transaction that way when a task is
    cancelled during one of its statements (it invalidates the connection, and keeps the
    cursor open): the cursor lives on in the cancelled task's traceback, so the zombie
    kept SQLite's write lock for good, and every later write failed with "database is
    locked". Rolled back first, the transaction ends and the lock goes whatever the
    cursors left."""

    def close(self) -> None:
        try:
            if self.in_transaction:
                self.rollback()
        except sqlite3.Error:
            pass  # closing ends it all the same once its statements are finalized
        finally:
            super().close()


def _ping_when_idle(engine: AsyncEngine) -> None:
    """`pool_pre_ping` for connections idle longer than `PING_AFTER_IDLE_S` only: a ping
    costs a transaction's round trips, and a busy server checks out thousands of
    connections a second that were in use a moment ago."""
    dialect = engine.dialect

    @event.listens_for(engine.sync_engine, "checkin")
    def on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.pop(_IDLE_SINCE, None)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:
            # The pool drops this connection and checks out another (a new one, if need be).
            raise DisconnectionError("the pooled connection is gone") from exc


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN (below)
        cursor = dbapi_connection.cursor()
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
        _use_wal(cursor)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(connection: Connection) -> None:
        writer = connection.get_execution_options().get(WRITE_OPTION)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")


def _use_wal(cursor: Any) -> None:
    cursor.execute("PRAGMA journal_mode")
    if cursor.fetchone()[0] == "wal":
        return
    for attempt in range(_WAL_ATTEMPTS):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:
            if "locked" not in str(exc) or attempt == _WAL_ATTEMPTS - 1:
                raise
            # A new file's first connections only, for a moment: the event loop waits.
            time.sleep(_WAL_PAUSE_S)


class WriteGate:
    """SQLite's one writer, in this process: writers take turns here in the order they
    came, except that an urgent one (creating a run: a user waits for its first token)
    goes before the others waiting."""

    def __init__(self) -> None:
        self._held = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    @asynccontextmanager
    async def hold(self, *, urgent: bool = False) -> AsyncIterator[None]:
        await self._acquire(urgent)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, urgent: bool) -> None:
        if not (self._held or self._urgent or self._others):
            self._held = True
            return
        queue = self._urgent if urgent else self._others
        turn = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release()  # handed the gate as the waiter was cancelled: pass it on
            else:
                queue.remove(turn)
            raise

    def _release(self) -> None:
        """Hand the gate to the next waiter (it stays held), or free it."""
        for queue in (self._urgent, self._others):
            while queue:
                turn = queue.popleft()
                if not turn.done():
                    turn.set_result(None)
                    return
        self._held = False


# Per engine and event loop: a gate's futures belong to one loop, and a sync `invoke()`
# runs each call on a new one.
_write_gates: weakref.WeakKeyDictionary[
    Engine, weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WriteGate]
] = weakref.WeakKeyDictionary()


def write_gate(engine: AsyncEngine, *, urgent: bool = False) -> AbstractAsyncContextManager[Any]:
    """Held around every write transaction on `engine`. SQLite has one writer at a time:
    this process's writers queue here rather than in SQLite's busy handler, whose sleeps
    grow to 100 ms and make a busy server slow; `urgent` ones first (see `WriteGate`).
    PostgreSQL writers do not wait for each other."""
    if engine.dialect.name != "sqlite":
        return nullcontext()
    by_loop = _write_gates.setdefault(engine.sync_engine, weakref.WeakKeyDictionary())
    loop = asyncio.get_running_loop()
    gate = by_loop.get(loop)
    if gate is None:
        gate = by_loop[loop] = WriteGate()
    return gate.hold(urgent=urgent)


@asynccontextmanager
async def write_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A transaction that writes (see `write_gate`)."""
    async with write_gate(engine), engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        yield conn
