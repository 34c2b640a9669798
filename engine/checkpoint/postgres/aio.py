"""`AsyncPostgresSaver`, as `langgraph.checkpoint.postgres.aio` names it (see
engine.checkpoint.sql.named). Call `await setup()` once, as with LangGraph's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine.checkpoint.serde.jsonplus import JsonSerializer
from engine.checkpoint.sql.named import AsyncNamedSaver, postgres_url

__all__ = ["AsyncPostgresSaver"]


class AsyncPostgresSaver(AsyncNamedSaver):
    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        serde: JsonSerializer | None = None,
    ) -> AsyncIterator[AsyncPostgresSaver]:
        """A saver on the database the URL (or libpq string) names, for the block."""
        url = postgres_url(conn_string, pipeline=pipeline)
        async with cls.opened(url, serde=serde) as saver:
            yield saver
