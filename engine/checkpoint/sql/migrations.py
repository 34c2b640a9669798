"""Alembic from code: `threadline migrate` upgrades, the server checks before it starts.

The migration scripts live in the top-level `alembic/` folder of the repository (they will
hold the app's tables too), found relative to this file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import URL
from sqlalchemy.engine import Connection

from alembic import command
from engine.checkpoint.sql.url import WRITE_OPTION, create_engine

ALEMBIC_DIR = Path(__file__).resolve().parents[3] / "alembic"


def alembic_config(connection: Connection | None = None) -> Config:
    """A config for the scripts in ALEMBIC_DIR; env.py migrates over `connection`."""
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    config.attributes["connection"] = connection
    return config


async def run_alembic(url: str | URL, operation: Callable[..., Any], *args: Any) -> None:
    """Run an alembic command (`command.upgrade`, `command.check`, ...) on `url`, in one
    transaction that commits only if the command succeeds."""
    engine = create_engine(url)
    try:
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            await conn.run_sync(lambda sync: operation(alembic_config(sync), *args))
    finally:
        await engine.dispose()


async def migrate(url: str | URL, revision: str = "head") -> None:
    """Upgrade the database at `url` to `revision` (creating the tables on first use)."""
    await run_alembic(url, command.upgrade, revision)


async def check_schema(url: str | URL) -> str | None:
    """None when the database is at the head revision, else what to do about it."""
    heads = set(ScriptDirectory.from_config(alembic_config()).get_heads())
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            current = set(
                await conn.run_sync(
                    lambda sync: MigrationContext.configure(sync).get_current_heads()
                )
            )
    finally:
        await engine.dispose()
    if current == heads:
        return None
    at = ", ".join(sorted(current)) or "empty (no migration applied)"
    return (
        f"database schema is at {at}, expected head {', '.join(sorted(heads))}: "
        "run `threadline migrate`"
    )
