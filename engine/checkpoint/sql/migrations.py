"""The checkpoint tables' schema, from code: `SQLSaver.setup()` and `migrate(url)` create
and upgrade them without loading any part of the server (`app`).

The Alembic scripts ship in the wheel as the package `threadline_migrations`: the
repository's top-level `alembic/` folder, under a name that cannot shadow the `alembic`
library. It holds two histories, each recorded in a table of its own, so that each side
upgrades its tables alone:

- the checkpoint tables' (`threadline_migrations.checkpoint`, `alembic/checkpoint/` in the
  repository), recorded in `checkpoint_alembic_version`: `CHECKPOINT` below;
- the server's tables' (`threadline_migrations`), recorded in `alembic_version`:
  `app.db.migrations`, whose `threadline migrate` upgrades both, this one first.

Before that split they were one linear history, 0001 to 0005, recorded in
`alembic_version`. A database migrated then gets its revision in each history's own table
at its first upgrade (`MigrationHistory.adopt_legacy`); nothing else changes in it.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from logging.config import fileConfig
from typing import Any

import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from alembic import command, context
from engine.checkpoint.sql.connect import create_engine, normalize_url, write_transaction

# Concurrent upgrades of one PostgreSQL database take turns on this advisory lock, so every
# process of a deployment may upgrade at start: the later ones find the tables at head.
MIGRATION_LOCK = 0x74686C6E6D696772  # "thlnmigr"
# The one history's table before the split, and the checkpoint revision each of its
# revisions implies (0002 and 0003 were the server's, on top of 0001).
LEGACY_VERSION_TABLE = "alembic_version"
LEGACY_CHECKPOINT_REVISIONS = {
    "0001": "0001",
    "0002": "0001",
    "0003": "0001",
    "0004": "0004",
    "0005": "0005",
}


def scripts_folder(package: str) -> str:
    """The folder of a package of migration scripts: in site-packages when installed from
    the wheel, the repository's `alembic/` in an editable install."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the migration scripts {package} are not installed")
    return str(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class MigrationHistory:
    """One Alembic history: its scripts and the table that records which of its revisions
    a database is at. `legacy` reads, from a database migrated before the split, the
    revisions it is at in this history (None for any other database)."""

    name: str
    package: str
    version_table: str
    legacy: Callable[[Connection], tuple[str, ...] | None]

    def config(self, connection: Connection | None = None) -> Config:
        """A config for the scripts; their env.py migrates over `connection`."""
        config = Config()
        config.set_main_option("script_location", scripts_folder(self.package))
        config.attributes["connection"] = connection
        return config

    def heads(self) -> set[str]:
        return set(ScriptDirectory.from_config(self.config()).get_heads())

    def current(self, connection: Connection) -> set[str]:
        return set(self._context(connection).get_current_heads())

    def problem(self, connection: Connection) -> str | None:
        """None when the database is at this history's heads, else where it is."""
        current, heads = self.current(connection), self.heads()
        if current == heads:
            return None
        expected = ", ".join(sorted(heads))
        if current:
            return f"{self.name} at {', '.join(sorted(current))}, expected {expected}"
        # Nothing recorded in this history's table: a new database, or one migrated before
        # the split.
        legacy = self.legacy(connection)
        if legacy is None:
            return f"{self.name} empty (no migration applied), expected {expected}"
        return (
            f"{self.name} at {', '.join(legacy) or 'none'} as migrated before they had a "
            f"history of their own, expected {expected}"
        )

    def adopt_legacy(self, connection: Connection) -> None:
        """Record in this history's table the revisions a database migrated before the
        split is at; from then on it is a database like any other. env.py calls it before
        every command, so the first upgrade (from code or from the `alembic` command
        line) does it, in the upgrade's transaction."""
        revisions = self.legacy(connection)
        if revisions is None:
            return
        if sa.inspect(connection).has_table(self.version_table):
            connection.execute(sa.delete(sa.table(self.version_table)))
        script = ScriptDirectory.from_config(self.config())
        for revision in revisions:
            self._context(connection).stamp(script, revision)

    def _context(self, connection: Connection) -> MigrationContext:
        return MigrationContext.configure(connection, opts={"version_table": self.version_table})


def _legacy_checkpoint_revision(connection: Connection) -> tuple[str, ...] | None:
    """Checkpoint tables without a revision of their own, and a revision of the one
    history in `alembic_version`: the checkpoint revision that one implies."""
    tables = set(sa.inspect(connection).get_table_names())
    if CHECKPOINT.version_table in tables or "checkpoint_threads" not in tables:
        return None
    legacy = MigrationContext.configure(connection, opts={"version_table": LEGACY_VERSION_TABLE})
    recorded = legacy.get_current_heads()
    if len(recorded) != 1 or recorded[0] not in LEGACY_CHECKPOINT_REVISIONS:
        return None
    return (LEGACY_CHECKPOINT_REVISIONS[recorded[0]],)


CHECKPOINT = MigrationHistory(
    name="checkpoint tables",
    package="threadline_migrations.checkpoint",
    version_table="checkpoint_alembic_version",
    legacy=_legacy_checkpoint_revision,
)


def run_environment(history: MigrationHistory, metadata: sa.MetaData, url: str) -> None:
    """The body of each history's env.py. From code, a connection arrives in the config
    (`MigrationHistory.config`); from the `alembic` command line, env.py names the
    database, `url`. Autogenerate and `alembic check` compare `metadata`'s tables only:
    the other history's tables are not drift."""

    def own_tables(name: str | None, kind: str, _parents: Any) -> bool:
        return kind != "table" or name in metadata.tables

    def run(connection: Connection) -> None:
        history.adopt_legacy(connection)
        # SQLite alters a table by copying it: batch mode makes autogenerate write that.
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table=history.version_table,
            include_name=own_tables,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()

    async def run_on_url() -> None:
        # One transaction, begun here: alembic commits none it did not begin, and
        # `adopt_legacy` may have begun one before alembic looks.
        engine = create_engine(url)
        try:
            async with write_transaction(engine) as connection:
                await connection.run_sync(run)
        finally:
            await engine.dispose()

    config = context.config
    if context.is_offline_mode():
        context.configure(
            url=normalize_url(url),
            target_metadata=metadata,
            version_table=history.version_table,
            literal_binds=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    elif config.attributes.get("connection") is not None:
        run(config.attributes["connection"])
    else:
        if config.config_file_name is not None:
            fileConfig(config.config_file_name)
        asyncio.run(run_on_url())


async def upgrade(engine: AsyncEngine, *histories: MigrationHistory) -> None:
    """Upgrade each history in turn to its head, in one transaction that commits only if
    all of them succeed."""
    async with write_transaction(engine) as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK)))
        for history in histories:
            await conn.run_sync(lambda sync, h=history: command.upgrade(h.config(sync), "head"))


async def problems(engine: AsyncEngine, *histories: MigrationHistory) -> list[str]:
    """Where the database is in each history that is not at its heads."""
    async with engine.connect() as conn:
        found = await conn.run_sync(lambda sync: [h.problem(sync) for h in histories])
    return [problem for problem in found if problem is not None]


async def migrate(url: str | sa.URL) -> None:
    """Create or upgrade the checkpoint tables of the database at `url`."""
    engine = create_engine(url)
    try:
        await upgrade(engine, CHECKPOINT)
    finally:
        await engine.dispose()


async def check_schema(url: str | sa.URL) -> str | None:
    """None when the checkpoint tables are at their head revision, else what to do."""
    engine = create_engine(url)
    try:
        found = await problems(engine, CHECKPOINT)
    finally:
        await engine.dispose()
    return f"{found[0]}: upgrade them (`await SQLSaver.setup()`)" if found else None


async def run_alembic(
    url: str | sa.URL,
    operation: Callable[..., Any],
    *args: Any,
    history: MigrationHistory = CHECKPOINT,
) -> None:
    """Run an alembic command (`command.upgrade`, `command.check`, ...) of `history` on
    `url`, in one transaction that commits only if the command succeeds."""
    engine = create_engine(url)
    try:
        async with write_transaction(engine) as conn:
            await conn.run_sync(lambda sync: operation(history.config(sync), *args))
    finally:
        await engine.dispose()
