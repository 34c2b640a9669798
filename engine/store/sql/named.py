"""The SQL store under the names of LangGraph's database stores (`PostgresStore`,
`SqliteStore` and their `aio` twins): made by `from_conn_string(...)` as a context manager
that opens and closes it, with `setup()` and a TTL sweeper, sync for the sync stores and
async for the `aio` ones. The table is the SQL store's own (`engine_store_items`): a
database LangGraph's stores wrote is not read.

A store is made from a connection string, or from a connection of LangGraph's kinds
(`sqlite3`, `psycopg`), whose database it opens with connections of its own
(`engine.checkpoint.sql.named.engine_of`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, Self

from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.named import engine_of
from engine.pregel.sync import run_sync
from engine.store.base import IndexConfig, TTLConfig
from engine.store.sql import SQLStore, positive_minutes

logger = logging.getLogger(__name__)

# LangGraph's default time between two sweeps, in minutes.
DEFAULT_SWEEP_MINUTES = 5


class NamedStore(SQLStore):
    """A `SQLStore` made from a connection string by `from_conn_string`."""

    def __init__(self, engine: Any, **options: Any) -> None:
        engine, made = engine_of(self, engine)
        super().__init__(engine, **{"owns_engine": made, **options})
        if made and engine.dialect.name == "sqlite":
            # As LangGraph's SQLite store made on a connection, it needs no setup() call.
            run_sync(lambda: SQLStore.setup(self))

    def _sweep_minutes(self, given: float | None) -> float:
        minutes = given or (self.ttl_config or {}).get("sweep_interval_minutes")
        return positive_minutes(
            minutes or DEFAULT_SWEEP_MINUTES, "sweep_interval_minutes must be above 0"
        )


class SyncNamedStore(NamedStore):
    """For sync code: each call runs to completion here, and the store holds no
    connection between calls. Its TTL sweeper is a thread."""

    def __init__(self, engine: Any, **options: Any) -> None:
        super().__init__(engine, **options)
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()

    def setup(self) -> None:  # type: ignore[override]
        run_sync(lambda: SQLStore.setup(self))

    def sweep_ttl(self) -> int:
        """Delete the items whose time to live ran out; how many."""
        return run_sync(self.asweep_ttl)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every `sweep_interval_minutes` (the TTL config's, else 5) in a thread of
        its own until `stop_ttl_sweeper()`; the future is done when the thread ends."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            done.set_result(None)
            return done
        seconds = self._sweep_minutes(sweep_interval_minutes) * 60
        self._stop_sweeping.clear()

        def sweep() -> None:
            try:
                while not self._stop_sweeping.wait(seconds):
                    try:
                        self.sweep_ttl()
                    except Exception:
                        logger.exception("The store's TTL sweep failed; it runs again later")
            finally:
                done.set_result(None)

        self._sweeper = threading.Thread(target=sweep, name="store-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it ended within `timeout` seconds."""
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._stop_sweeping.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    @classmethod
    @contextlib.contextmanager
    def opened(
        cls, url: str, *, index: IndexConfig | None, ttl: TTLConfig | None
    ) -> Iterator[Self]:
        store = cls(create_engine(url, pool_per_call=True), index=index, ttl=ttl, owns_engine=True)
        try:
            yield store
        finally:
            store.stop_ttl_sweeper()
            run_sync(store.aclose)


class AsyncNamedStore(NamedStore):
    """For async code. Its TTL sweeper is a task of the loop that starts it."""

    def __init__(self, engine: Any, **options: Any) -> None:
        super().__init__(engine, **options)
        self._sweeper: asyncio.Task[None] | None = None

    async def sweep_ttl(self) -> int:
        """Delete the items whose time to live ran out; how many."""
        return await self.asweep_ttl()

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep every `sweep_interval_minutes` (the TTL config's, else 5) in a task of
        this loop until `stop_ttl_sweeper()`."""
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper
        seconds = self._sweep_minutes(sweep_interval_minutes) * 60

        async def sweep() -> None:
            while True:
                await asyncio.sleep(seconds)
                try:
                    await self.asweep_ttl()
                except Exception:
                    logger.exception("The store's TTL sweep failed; it runs again later")

        self._sweeper = asyncio.create_task(sweep(), name="store-ttl-sweeper")
        return self._sweeper

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; whether it ended within `timeout` seconds."""
        if self._sweeper is None or self._sweeper.done():
            return True
        self._sweeper.cancel()
        done, _ = await asyncio.wait([self._sweeper], timeout=timeout)
        stopped = bool(done)
        if stopped:
            self._sweeper = None
        return stopped

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(
        cls, url: str, *, index: IndexConfig | None, ttl: TTLConfig | None
    ) -> AsyncIterator[Self]:
        store = cls(create_engine(url), index=index, ttl=ttl, owns_engine=True)
        try:
            yield store
        finally:
            await store.stop_ttl_sweeper()
            await store.aclose()
