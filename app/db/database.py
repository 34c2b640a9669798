"""One engine for the server's tables and the checkpointer, and short transactions on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import Executable, event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.migrations import migrate, schema_state
from engine.checkpoint.sql.connect import (
    WRITE_OPTION,
    create_engine,
    libpq_url,
    normalize_url,
    write_gate,
)
from engine.checkpoint.sql.direct import direct_statements, fetch_alone


class SchemaOutdatedError(RuntimeError):
    """The database needs `threadline migrate` before the server can use it."""


T = TypeVar("T")
# Attempts of a write that PostgreSQL chose as a deadlock's victim.
DEADLOCK_ATTEMPTS = 3
_DEADLOCK = "40P01"


def deadlocked(exc: BaseException) -> bool:
    """Whether PostgreSQL aborted the statement to break a deadlock (asyncpg's error, or
    SQLAlchemy's around it)."""
    return _DEADLOCK in (
        getattr(exc, "sqlstate", None),
        getattr(getattr(exc, "orig", None), "sqlstate", None),
    )


async def retry_deadlocks(
    work: Callable[[], Awaitable[T]], undone: Callable[[], None] = lambda: None
) -> T:
    """`work`, again (up to DEADLOCK_ATTEMPTS times in all) when PostgreSQL undid its
    statement or transaction to break a deadlock: that changed nothing in the database,
    so doing it again is safe once `undone` has put back what it did outside."""
    attempt = 1
    while True:
        try:
            return await work()
        except Exception as exc:
            if attempt == DEADLOCK_ATTEMPTS or not deadlocked(exc):
                raise
            attempt += 1
            undone()


def _add_casefold(connection: Any, _record: Any) -> None:
    """SQLite's `casefold(text)`, Python's: its own `lower()` and `LIKE` fold ASCII
    letters only, where PostgreSQL's `ILIKE` folds every alphabet."""
    connection.create_function("casefold", 1, _casefold, deterministic=True)


def _casefold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


class Database:
    def __init__(self, url: str, *, pool_size: int = 10, max_overflow: int = 20) -> None:
        self.url = normalize_url(url)
        self.engine: AsyncEngine = create_engine(
            self.url, pool_size=pool_size, max_overflow=max_overflow
        )
        # On SQLite a transaction that will write takes the write lock when it begins,
        # so two writers never deadlock upgrading from a read lock.
        writes = self.engine.execution_options(**{WRITE_OPTION: True})
        self._writer = async_sessionmaker(writes, expire_on_commit=False)
        self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        # Reads on PostgreSQL need no transaction: under READ COMMITTED each statement sees
        # what was committed when it began, in a transaction or not, and autocommit saves
        # the BEGIN and ROLLBACK round trips of every read. On SQLite the transaction is
        # what makes a session's reads one snapshot: it stays.
        reads = self._autocommit if self.dialect == "postgresql" else self.engine
        self._reader = async_sessionmaker(reads, expire_on_commit=False)
        # A statement alone needs no transaction on PostgreSQL; SQLite's keeps its
        # write lock up front (see `write`).
        alone = self._autocommit if self.dialect == "postgresql" else writes
        self._alone = async_sessionmaker(alone, expire_on_commit=False)
        # A turn's statements alone go around SQLAlchemy's execution on asyncpg.
        self._direct = direct_statements(self.engine)
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _add_casefold)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def libpq_url(self) -> str:
        """The URL without the SQLAlchemy driver, for a plain psycopg connection."""
        return libpq_url(self.url)

    @asynccontextmanager
    async def write(self, *, urgent: bool = False) -> AsyncIterator[AsyncSession]:
        """A transaction that commits when the block ends without an error. An `urgent`
        one goes before the other writers waiting for SQLite's one writer."""
        async with (
            write_gate(self.engine, urgent=urgent),
            self._writer() as session,
            session.begin(),
        ):
            yield session

    async def write_one(self, statement: Executable, params: dict[str, Any]) -> list[Any]:
        """One statement as a transaction of its own: on PostgreSQL in autocommit mode,
        one round trip rather than BEGIN, the statement and COMMIT; on SQLite in a
        transaction that takes the write lock up front (`write_alone`). Its rows, if it
        returns any (named tuples on PostgreSQL, where it goes around SQLAlchemy's
        execution: `Direct`)."""
        if self.dialect != "postgresql":
            async with self.write_alone() as session:
                result = await session.execute(statement, params)
                return list(result) if result.returns_rows else []
        async with write_gate(self.engine):
            return await retry_deadlocks(
                lambda: fetch_alone(self._direct, self._autocommit, statement, params)
            )

    async def read_one(self, statement: Executable, params: dict[str, Any]) -> list[Any]:
        """One read statement's rows, in no transaction (sent by asyncpg itself on
        PostgreSQL, as `write_one`): a waiter's read of a run's end, with no session
        around it."""
        return await fetch_alone(self._direct, self._autocommit, statement, params)

    @asynccontextmanager
    async def write_alone(self) -> AsyncIterator[AsyncSession]:
        """A session for one statement that writes, in autocommit mode on PostgreSQL
        (one round trip rather than BEGIN, the statement and COMMIT; a transaction on
        SQLite): `write_one` for a statement whose rows come back as objects (an ORM
        `UPDATE ... RETURNING`)."""
        async with write_gate(self.engine), self._alone() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self._reader() as session:
            yield session

    async def prepare(self, *, migrate_empty: bool = True) -> None:
        """Create the schema of a new database; refuse one at other revisions."""
        new, problem = await schema_state(self.url)
        if problem is None:
            return
        if migrate_empty and new:
            await migrate(self.url)
            return
        raise SchemaOutdatedError(problem)

    async def close(self) -> None:
        await self.engine.dispose()
