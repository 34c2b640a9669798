"""How many bytes a database has written, as the database counts them: PostgreSQL's
write-ahead log position (the test clusters run without full-page images, so the log holds
each row, row version and index entry written, once), and for SQLite the length of its
write-ahead log (every page a transaction changed), which a read transaction held open
meanwhile keeps from being reset and reused. Shared by tests/api/test_growth.py and
bench/growth.py."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
from sqlalchemy import make_url


@contextlib.contextmanager
def bytes_written(database_url: str) -> Iterator[Callable[[], int]]:
    """A function reading how many bytes the database has written so far (for SQLite,
    since the block began)."""
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(plain, autocommit=True) as conn:

            def wal() -> int:
                row = conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
                assert row is not None
                return int(row[0])

            yield wal
        return
    path = Path(url.database or "")
    log = path.with_name(path.name + "-wal")
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchall()
        yield lambda: log.stat().st_size
    finally:
        reader.execute("COMMIT")
        reader.close()
