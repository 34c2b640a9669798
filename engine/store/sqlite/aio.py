"""`AsyncSqliteStore`, as `langgraph.store.sqlite.aio` names it (see
engine.store.sql.named). Its table is made when it opens."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine.checkpoint.sql.named import sqlite_url
from engine.store.base import IndexConfig, TTLConfig
from engine.store.sql.named import AsyncNamedStore

__all__ = ["AsyncSqliteStore"]


class AsyncSqliteStore(AsyncNamedStore):
    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> AsyncIterator[AsyncSqliteStore]:
        """A store on the SQLite file `conn_string` (or `:memory:`), for the block."""
        with sqlite_url(conn_string) as url:
            async with cls.opened(url, index=index, ttl=ttl) as store:
                await store.setup()
                yield store
