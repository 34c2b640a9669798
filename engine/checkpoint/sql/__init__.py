"""The SQL saver (SQLite and PostgreSQL through SQLAlchemy) and its schema management."""

from engine.checkpoint.sql.connect import create_engine, normalize_url
from engine.checkpoint.sql.migrations import check_schema, migrate
from engine.checkpoint.sql.saver import SQLSaver, ThreadDeletedError

__all__ = [
    "SQLSaver",
    "ThreadDeletedError",
    "check_schema",
    "create_engine",
    "migrate",
    "normalize_url",
]
