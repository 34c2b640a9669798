"""threads, runs, run_events, reminders: ids as PostgreSQL's own uuid type

An id kept as text takes 37 bytes in a row and 40 in an index entry; as `uuid`, 16.
Every chat turn writes a run row (its id, thread, assistant and checkpoint), its events
(the run's id) and a thread row, and index entries for most of them: about a sixth of
what a turn adds to the database. Values read back are the same text (lowercase, with
dashes), as every id was written that way. SQLite keeps the text: nothing changes there.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 05:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = {
    "threads": ("thread_id", "checkpoint_id"),
    "runs": ("run_id", "thread_id", "assistant_id", "checkpoint_id"),
    "run_events": ("run_id", "checkpoint_id"),
    "reminders": ("thread_id", "run_id"),
}


def upgrade() -> None:
    _retype("uuid")


def downgrade() -> None:
    _retype("varchar(36)")


def _retype(kind: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in COLUMNS.items():
        # One statement a table: PostgreSQL rewrites it, and rebuilds its indexes, once.
        changes = ", ".join(f"ALTER COLUMN {c} TYPE {kind} USING {c}::{kind}" for c in columns)
        op.execute(f"ALTER TABLE {table} {changes}")
