"""`AsyncPostgresStore`, as `langgraph.store.postgres.aio` names it (see
engine.store.sql.named). Call `await setup()` once, as with LangGraph's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine.checkpoint.sql.named import postgres_url
from engine.store.base import IndexConfig, TTLConfig
from engine.store.postgres.base import PoolConfig, refuse_pool_config
from engine.store.sql.named import AsyncNamedStore

__all__ = ["AsyncPostgresStore"]


class AsyncPostgresStore(AsyncNamedStore):
    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: PoolConfig | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> AsyncIterator[AsyncPostgresStore]:
        """A store on the database the URL names, for the block."""
        url = postgres_url(conn_string, pipeline=pipeline)
        refuse_pool_config(pool_config)
        async with cls.opened(url, index=index, ttl=ttl) as store:
            yield store
