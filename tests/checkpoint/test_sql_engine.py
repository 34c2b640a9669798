"""URLs name the async driver for the user; SQLite files get their directory and pragmas."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from engine.checkpoint.sql.url import create_engine, normalize_url


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@db:5432/app", "postgresql+asyncpg://u:***@db:5432/app"),
        ("postgres://db/app", "postgresql+asyncpg://db/app"),
        ("postgresql+asyncpg://db/app", "postgresql+asyncpg://db/app"),
        ("sqlite:///./data/threadline.db", "sqlite+aiosqlite:///./data/threadline.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db"),
    ],
)
def test_normalize_url(given: str, expected: str) -> None:
    assert str(normalize_url(given)) == expected


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
