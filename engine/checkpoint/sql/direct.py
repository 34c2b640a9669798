"""Statements sent on asyncpg's own connection, under SQLAlchemy's pool.

A chat turn runs the same few statements every time, each a transaction of its own.
SQLAlchemy's execution of one (its cache lookup, an execution context, a result object)
costs about 100 µs of CPU, as much as asyncpg's whole round trip, and an `AsyncConnection`
around it (a `Connection`, its isolation level set and reset, three greenlet switches)
another 50 µs. A `Direct` statement is compiled by SQLAlchemy once, with the bind
processors of its parameters' types, and then sent by asyncpg as it is, on a connection
checked out of the pool for it alone; its errors are raised as SQLAlchemy would raise
them, so callers handle them alike. The pool stays SQLAlchemy's (its checkout pings a
connection that sat idle, a disconnect invalidates one, its reset on return ends any
transaction), and SQLite takes the usual path.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Executable
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util.concurrency import greenlet_spawn

__all__ = ["Direct", "DirectStatements", "direct_statements", "fetch_alone", "fetch_on"]


def direct_statements(engine: AsyncEngine) -> DirectStatements | None:
    """The engine's direct statements; None where statements keep SQLAlchemy's execution:
    a driver other than asyncpg, or an engine that echoes them (in SQLAlchemy's log)."""
    if engine.dialect.driver != "asyncpg" or engine.echo:
        return None
    return DirectStatements(engine)


async def fetch_alone(
    direct: DirectStatements | None,
    engine: AsyncEngine,
    statement: Executable,
    params: Mapping[str, Any],
) -> list[Any]:
    """The rows of `statement` (none for a statement that returns none) run as a
    transaction of its own: sent by asyncpg itself when there are `direct` statements,
    else executed by SQLAlchemy on a connection of `engine`, which is in autocommit mode."""
    if direct is not None:
        return await direct.alone(statement, params)
    async with engine.connect() as conn:
        return await fetch_on(conn, statement, params)


async def fetch_on(
    conn: AsyncConnection, statement: Executable, params: Mapping[str, Any]
) -> list[Any]:
    """The rows of `statement` executed by SQLAlchemy on `conn` (none for a statement
    that returns none), as `fetch_alone` returns them."""
    result = await conn.execute(statement, params)
    return list(result.all()) if result.returns_rows else []


class Direct:
    """One statement, compiled for asyncpg, sent on the driver's connection. Its rows
    are named tuples (attribute and index access, as SQLAlchemy's rows)."""

    def __init__(self, statement: Executable, dialect: Dialect) -> None:
        if dialect.driver != "asyncpg":
            raise ValueError(f"Direct statements are for asyncpg, not {dialect.driver}")
        compiled = statement.compile(dialect=dialect)
        if compiled.post_compile_params or compiled.literal_execute_params:  # type: ignore[attr-defined]
            raise ValueError("A direct statement cannot have parameters rendered per call")
        self.sql = str(compiled)
        self._compiled = compiled
        self._dialect = dialect
        binds = {name: bind for bind, name in compiled.bind_names.items()}  # type: ignore[attr-defined]
        self._args: tuple[tuple[str, Callable[[Any], Any] | None], ...] = tuple(
            (name, binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in compiled.positiontup or ()  # type: ignore[attr-defined]
        )
        columns = getattr(statement, "exported_columns", ())
        results = [c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns]
        self._results = results if any(results) else None
        self._row: Callable[..., Any] | None = None

    async def fetch(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """The statement's rows, run on `conn` (a connection of the pool, in no
        transaction). Listeners of SQLAlchemy's cursor events (tracing, statement counts)
        see it as any other."""
        values = self._compiled.construct_params(params)
        sql = self.sql
        args = [
            values[name] if process is None else process(values[name])
            for name, process in self._args
        ]
        events = conn.dispatch
        context = SimpleNamespace(compiled=self._compiled, executemany=False)
        for listener in events.before_cursor_execute:
            sql, args = listener(conn, None, sql, args, context, False)
        pooled = conn.connection
        try:
            records = await pooled.driver_connection.fetch(sql, *args)  # type: ignore[union-attr]
        except Exception as exc:
            raise await self._error(conn, pooled.dbapi_connection, exc, sql, args) from exc
        cursor = SimpleNamespace(rowcount=len(records))
        for listener in events.after_cursor_execute:
            listener(conn, cursor, sql, args, context, False)
        return self._rows(records)

    def _rows(self, records: list[Any]) -> list[Any]:
        if not records:
            return []
        if self._row is None:
            self._row = namedtuple("Row", records[0].keys(), rename=True)._make  # type: ignore[misc]
        if self._results is None:
            return [self._row(record) for record in records]
        processors = self._results
        return [
            self._row(v if p is None else p(v) for p, v in zip(processors, record, strict=True))
            for record in records
        ]

    async def _error(
        self, conn: Connection, adapted: Any, exc: Exception, sql: str, args: list[Any]
    ) -> BaseException:
        """`exc` as SQLAlchemy raises it: asyncpg's errors as the DBAPI's, wrapped in
        `DBAPIError` (an `IntegrityError`, ...) with the connection invalidated when it is
        gone; anything else (an `OSError`) as it is."""
        dbapi_error = self._dialect.loaded_dbapi.Error
        try:
            adapted._handle_exception(exc)
        except dbapi_error as translated:
            invalidated = self._dialect.is_disconnect(translated, adapted, None)
            if invalidated:
                await greenlet_spawn(conn.invalidate, translated)
            return DBAPIError.instance(
                sql,
                args,
                translated,
                dbapi_error,
                connection_invalidated=invalidated,
                dialect=self._dialect,
            )
        except Exception as other:
            return other
        return exc


class DirectStatements:
    """Each statement's `Direct` form, made on its first use (statements are kept
    objects: the cache holds them, so an id is never reused for another)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine.sync_engine
        self._kept: dict[int, tuple[Executable, Direct]] = {}

    async def alone(self, statement: Executable, params: Mapping[str, Any]) -> list[Any]:
        """The statement's rows, sent on a connection of the pool checked out for it: a
        transaction of its own."""
        kept = self._kept.get(id(statement))
        if kept is None:
            direct = Direct(statement, self._engine.dialect)
            kept = self._kept[id(statement)] = (statement, direct)
        # The sync engine's connection: no `AsyncConnection` around it, and no isolation
        # level to set and reset (asyncpg itself begins no transaction).
        conn = await greenlet_spawn(self._engine.connect)
        try:
            return await kept[1].fetch(conn, params)
        finally:
            await greenlet_spawn(conn.close)
