"""A cache in a SQLite file: node results outlive the process, and processes on one
machine share them."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from engine.cache.base import BaseCache, FullKey, Namespace

__all__ = ["SqliteCache"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS cache (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    expires REAL,
    value BLOB NOT NULL,
    PRIMARY KEY (ns, key)
)"""


def _ns(namespace: Namespace) -> str:
    # A JSON array, so ("a,b",) and ("a", "b") stay apart.
    return orjson.dumps(list(namespace)).decode()


class SqliteCache(BaseCache):
    """Entries in one table of the file at `path`, each with the wall-clock time it
    expires at (another process reads the same times). One connection serves every
    thread, one call at a time; the async methods run it in a worker thread."""

    def __init__(self, *, path: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        wanted = {(_ns(ns), key): (ns, key) for ns, key in keys}
        if not wanted:
            return {}
        rows = ",".join("(?, ?)" for _ in wanted)
        params = [part for pair in wanted for part in pair]
        now = time.time()
        with self._lock:
            found = self._conn.execute(
                f"SELECT ns, key, value FROM cache WHERE (ns, key) IN (VALUES {rows})"
                " AND (expires IS NULL OR expires > ?)",
                [*params, now],
            ).fetchall()
            self._conn.execute("DELETE FROM cache WHERE expires <= ?", (now,))
        return {wanted[(ns, key)]: self.serde.loads(value) for ns, key, value in found}

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        now = time.time()
        rows = [
            (_ns(ns), key, None if ttl is None else now + ttl, self.serde.dumps(value))
            for (ns, key), (value, ttl) in pairs.items()
        ]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO cache VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._conn.execute("DELETE FROM cache")
            else:
                self._conn.executemany(
                    "DELETE FROM cache WHERE ns = ?", [(_ns(ns),) for ns in namespaces]
                )

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        return await asyncio.to_thread(self.get, keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        await asyncio.to_thread(self.set, pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        await asyncio.to_thread(self.clear, namespaces)

    def close(self) -> None:
        """Close the file; a later call fails."""
        with self._lock:
            self._conn.close()
