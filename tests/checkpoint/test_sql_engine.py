"""URLs name the async driver for the user; SQLite files get their directory and pragmas."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy import text

from engine.checkpoint.sql import connect
from engine.checkpoint.sql.connect import create_engine, normalize_url


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@db:5432/app", "postgresql+asyncpg://u:***@db:5432/app"),
        ("postgres://db/app", "postgresql+asyncpg://db/app"),
        ("postgresql+asyncpg://db/app", "postgresql+asyncpg://db/app"),
        ("sqlite:///./data/threadline.db", "sqlite+aiosqlite:///./data/threadline.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        # libpq's option names, as LangGraph's docs write them, become asyncpg's.
        (
            "postgresql://db/app?sslmode=disable&connect_timeout=5",
            "postgresql+asyncpg://db/app?ssl=disable&timeout=5",
        ),
        ("postgresql+asyncpg://db/app?sslmode=require", "postgresql+asyncpg://db/app?ssl=require"),
        (
            "postgresql+psycopg://db/app?sslmode=disable",
            "postgresql+psycopg://db/app?sslmode=disable",
        ),
    ],
)
def test_normalize_url(given: str, expected: str) -> None:
    assert str(normalize_url(given)) == expected


def test_libpq_options_reach_asyncpg_and_libpq_alike(postgres_url: str) -> None:
    """`?sslmode=...&connect_timeout=...` as LangGraph's guides write it: the asyncpg
    engine connects with them (under its names), and a plain psycopg connection of the
    same database (the server's listener) reads them under libpq's again."""
    url = normalize_url(f"{postgres_url}?sslmode=disable&connect_timeout=5")
    assert dict(url.query) == {"ssl": "disable", "timeout": "5"}
    libpq = sa.make_url(connect.libpq_url(url))
    assert dict(libpq.query) == {"sslmode": "disable", "connect_timeout": "5"}
    with psycopg.connect(connect.libpq_url(url), autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)

    async def through_asyncpg() -> Any:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                return await conn.scalar(text("SELECT 1"))
        finally:
            await engine.dispose()

    assert asyncio.run(through_asyncpg()) == 1


async def test_sqlite_file_gets_its_directory_and_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "dir" / "threadline.db"
    engine = create_engine(f"sqlite:///{path}")
    try:
        async with engine.connect() as conn:
            pragmas = {
                name: await conn.scalar(text(f"PRAGMA {name}"))
                for name in ("journal_mode", "busy_timeout", "foreign_keys")
            }
    finally:
        await engine.dispose()
    assert path.exists()
    assert pragmas == {"journal_mode": "wal", "busy_timeout": 30000, "foreign_keys": 1}


async def test_a_connection_dropped_while_idle_is_replaced_and_a_busy_one_is_not_pinged(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = create_engine(postgres_url, pool_size=1, max_overflow=0)
    pings: list[object] = []
    ping = engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda c: pings.append(c) or ping(c))
    try:
        async with engine.connect() as conn:
            pid = await conn.scalar(text("SELECT pg_backend_pid()"))
        async with engine.connect() as conn:  # back at once: no ping
            assert await conn.scalar(text("SELECT pg_backend_pid()")) == pid
        assert pings == []
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as db:
            await db.execute("SELECT pg_terminate_backend(%s)", [pid])
        monkeypatch.setattr(connect, "PING_AFTER_IDLE_S", 0.05)
        await asyncio.sleep(0.1)
        async with engine.connect() as conn:  # idle, and dead: pinged, replaced
            assert await conn.scalar(text("SELECT pg_backend_pid()")) != pid
        assert len(pings) == 1
    finally:
        await engine.dispose()
