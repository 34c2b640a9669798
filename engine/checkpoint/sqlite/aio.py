"""`AsyncSqliteSaver`, as `langgraph.checkpoint.sqlite.aio` names it (see
engine.checkpoint.sql.named)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine.checkpoint.sql.named import AsyncNamedSaver, sqlite_url

__all__ = ["AsyncSqliteSaver"]


class AsyncSqliteSaver(AsyncNamedSaver):
    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(cls, conn_string: str) -> AsyncIterator[AsyncSqliteSaver]:
        """A saver on the SQLite file `conn_string` (or `:memory:`), for the block."""
        with sqlite_url(conn_string) as url:
            async with cls.opened(url) as saver:
                await saver.setup()
                yield saver
