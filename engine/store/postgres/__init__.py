"""LangGraph's Postgres store (`langgraph.store.postgres`): `PostgresStore` for sync code,
`AsyncPostgresStore` for async code, on the engine's SQL store (engine.store.sql)."""

from engine.store.postgres.aio import AsyncPostgresStore
from engine.store.postgres.base import PoolConfig, PostgresStore

__all__ = ["AsyncPostgresStore", "PoolConfig", "PostgresStore"]
