"""`SqliteStore`, as `langgraph.store.sqlite.base` names it (see engine.store.sql.named). Its
table is made when it opens; `setup()` may still be called, as with LangGraph's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from engine.checkpoint.sql.named import sqlite_url
from engine.store.base import IndexConfig, TTLConfig
from engine.store.sql.named import SyncNamedStore

__all__ = ["SqliteStore"]


class SqliteStore(SyncNamedStore):
    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> Iterator[SqliteStore]:
        """A store on the SQLite file `conn_string` (or `:memory:`), for the block."""
        with sqlite_url(conn_string) as url, cls.opened(url, index=index, ttl=ttl) as store:
            store.setup()
            yield store
