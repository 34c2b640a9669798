"""`PostgresSaver`, as `langgraph.checkpoint.postgres` names it (see
engine.checkpoint.sql.named). Call `setup()` once, as with LangGraph's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from engine.checkpoint.sql.named import SyncNamedSaver, postgres_url

__all__ = ["PostgresSaver"]


class PostgresSaver(SyncNamedSaver):
    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls, conn_string: str, *, pipeline: bool = False
    ) -> Iterator[PostgresSaver]:
        """A saver on the database the URL (or libpq string) names, for the block."""
        with cls.opened(postgres_url(conn_string, pipeline=pipeline)) as saver:
            yield saver
