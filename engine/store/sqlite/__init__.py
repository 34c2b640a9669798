"""LangGraph's SQLite store (`langgraph.store.sqlite`): `SqliteStore` for sync code,
`AsyncSqliteStore` for async code, on the engine's SQL store (engine.store.sql)."""

from engine.store.sqlite.aio import AsyncSqliteStore
from engine.store.sqlite.base import SqliteStore

__all__ = ["AsyncSqliteStore", "SqliteStore"]
