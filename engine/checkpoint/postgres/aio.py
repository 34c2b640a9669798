"""`AsyncPostgresSaver`, as `langgraph.checkpoint.postgres.aio` names it (see
engine.checkpoint.sql.named). Call `await setup()` once, as with LangGraph's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine.checkpoint.sql.named import AsyncNamedSaver, postgres_url

__all__ = ["AsyncPostgresSaver"]


class AsyncPostgresSaver(AsyncNamedSaver):
    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(cls, conn_string: str) -> AsyncIterator[AsyncPostgresSaver]:
        """A saver on the database the URL names, for the block."""
        async with cls.opened(postgres_url(conn_string)) as saver:
            yield saver
