"""`PostgresStore`, as `langgraph.store.postgres.base` names it (see
engine.store.sql.named). Call `setup()` once, as with LangGraph's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from typing_extensions import TypedDict

from engine.checkpoint.sql.named import postgres_url
from engine.store.base import IndexConfig, TTLConfig
from engine.store.sql.named import SyncNamedStore

__all__ = ["PoolConfig", "PostgresStore"]


class PoolConfig(TypedDict, total=False):
    """LangGraph's options of a psycopg pool: accepted by name for programs that import
    it, refused by `from_conn_string` (the store keeps a SQLAlchemy pool of its own)."""

    min_size: int
    max_size: int
    kwargs: dict[str, Any]


class PostgresStore(SyncNamedStore):
    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: PoolConfig | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> Iterator[PostgresStore]:
        """A store on the database the URL names, for the block."""
        url = postgres_url(conn_string, pipeline=pipeline)
        refuse_pool_config(pool_config)
        with cls.opened(url, index=index, ttl=ttl) as store:
            yield store


def refuse_pool_config(pool_config: PoolConfig | None) -> None:
    """LangGraph's options of its psycopg pool, which the store does not use: it keeps a
    SQLAlchemy pool of its own."""
    if pool_config is not None:
        raise NotImplementedError(
            "pool_config= tunes LangGraph's psycopg pool; this store keeps a pool of its "
            "own: leave it out."
        )
