"""The checkpoint tables' Alembic history creates exactly what the models describe and
removes it again, on both dialects; `SQLSaver.setup()` runs it for a library user, from
any number of processes at once, without loading the server (`app`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from sqlalchemy import inspect

from alembic import command
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import CHECKPOINT, check_schema, migrate, run_alembic
from engine.checkpoint.sql.models import checkpoint_metadata
from engine.checkpoint.sql.saver import SQLSaver
from tests.checkpoint.history import History

CHECKPOINT_TABLES = {table.name for table in checkpoint_metadata.sorted_tables}


async def table_names(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


async def test_upgrade_from_empty_check_and_downgrade(empty_database: str) -> None:
    outdated = await check_schema(empty_database)
    assert outdated is not None
    assert "empty" in outdated and "setup()" in outdated

    await migrate(empty_database)
    assert await check_schema(empty_database) is None
    assert await table_names(empty_database) == {*CHECKPOINT_TABLES, CHECKPOINT.version_table}
    await run_alembic(empty_database, command.check)  # raises if the models drifted

    await run_alembic(empty_database, command.downgrade, "base")
    assert await table_names(empty_database) == {CHECKPOINT.version_table}
    assert "setup()" in (await check_schema(empty_database) or "")


async def test_setup_from_many_processes_at_once(empty_database: str) -> None:
    """Savers that each call `setup()` at start, at the same time: the upgrades take
    turns, the later ones find the tables at head, and every saver works."""
    savers = [SQLSaver.from_url(empty_database) for _ in range(3)]
    try:
        await asyncio.gather(*(saver.setup() for saver in savers))
        await savers[0].setup()  # at head: changes nothing
        written = History(savers[0], "t")
        await written.put({"x": 1})
        found = await savers[-1].aget_tuple(written.config())
        assert found is not None and found.checkpoint["channel_values"] == {"x": 1}
    finally:
        for saver in savers:
            await saver.aclose()
    assert await check_schema(empty_database) is None


def test_setup_never_imports_the_server(tmp_path: Path) -> None:
    """A library user's process: the engine's saver sets up its tables, and no module of
    `app` is ever imported."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from engine.checkpoint.sql import SQLSaver

        saver = SQLSaver.from_url("sqlite:///{tmp_path / "library.db"}")
        asyncio.run(saver.setup())
        asyncio.run(saver.aclose())
        loaded = sorted(name for name in sys.modules if name.split(".")[0] == "app")
        assert not loaded, loaded
        """
    )
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=environment, check=True, timeout=60
    )
