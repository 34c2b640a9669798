"""`SqliteSaver`, as `langgraph.checkpoint.sqlite` names it (see engine.checkpoint.sql.named).
Its tables are made when it opens, as LangGraph's SQLite saver makes them on first use."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from engine.checkpoint.sql.named import SyncNamedSaver, sqlite_url

__all__ = ["SqliteSaver"]


class SqliteSaver(SyncNamedSaver):
    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, conn_string: str) -> Iterator[SqliteSaver]:
        """A saver on the SQLite file `conn_string` (or `:memory:`), for the block."""
        with sqlite_url(conn_string) as url, cls.opened(url) as saver:
            saver.setup()
            yield saver
