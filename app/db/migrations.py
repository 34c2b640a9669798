"""The server's schema: `threadline migrate` upgrades the checkpoint tables' history, then
the server tables' (the top-level `alembic/`, shipped as `threadline_migrations`), in one
transaction; a server at start migrates a new database and refuses one that is behind.

Why two histories, and how a database migrated before they were two is upgraded:
`engine.checkpoint.sql.migrations`.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import CHECKPOINT, MigrationHistory, problems, upgrade

# The revisions the one history recorded that are the checkpoint tables' now, and the
# server revisions each implies (0002 and 0003 were the server's; 0001 came before them).
LEGACY_SERVER_REVISIONS: dict[str, tuple[str, ...]] = {
    "0001": (),
    "0004": ("0003",),
    "0005": ("0003",),
}


def _legacy_server_revisions(connection: Connection) -> tuple[str, ...] | None:
    """`alembic_version` holding a checkpoint revision: the server revisions it implies."""
    recorded = list(SERVER.current(connection))
    if len(recorded) != 1 or recorded[0] not in LEGACY_SERVER_REVISIONS:
        return None
    if not sa.inspect(connection).has_table(CHECKPOINT.version_table):
        # The checkpoint history reads its own revision from this table: it goes first.
        raise RuntimeError(
            "the database was migrated before the checkpoint tables had a history of their "
            "own: upgrade those first (`threadline migrate` upgrades both, in that order)"
        )
    return LEGACY_SERVER_REVISIONS[recorded[0]]


SERVER = MigrationHistory(
    name="server tables",
    package="threadline_migrations",
    version_table="alembic_version",
    legacy=_legacy_server_revisions,
)
# In the order they are upgraded: on a database migrated before the split, the checkpoint
# history reads its revision from `alembic_version` before the server's rewrites it.
HISTORIES = (CHECKPOINT, SERVER)


async def migrate(url: str | sa.URL) -> None:
    """Create or upgrade every table of the database at `url`: `threadline migrate`."""
    engine = create_engine(url)
    try:
        await upgrade(engine, *HISTORIES)
    finally:
        await engine.dispose()


async def schema_state(url: str | sa.URL) -> tuple[bool, str | None]:
    """Whether the database is new to the server (its history has recorded no revision:
    there are no server tables, whatever a library user's saver created), and None when it
    is at every head, else what is behind and what to run."""
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            new = not await conn.run_sync(SERVER.current)
        behind = await problems(engine, *HISTORIES)
    finally:
        await engine.dispose()
    return new, ("; ".join(behind) + ": run `threadline migrate`") if behind else None
