"""runs: a run's last events in its own row

A run's end records the events it has not recorded yet. A chat turn's are all of them (a
`metadata` event and two `values` events, one row of `run_events` in its short form): a
row of 140 bytes, its index entry of 30 and a second insert in the end's statement,
every turn. They are now kept in the run's row (`events`), which the end updates anyway:
a JSON array of the row's fields and `more`, or of `more` alone when the first event is
the run's `metadata` event (the row has the run's id and attempt), 50 bytes for a turn.
Rows written before stay in `run_events`; readers read both. The downgrade moves what
the run rows keep to `run_events`, as the code before reads it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03 15:00:00.000000
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("events", sa.Text(), nullable=True))


def downgrade() -> None:
    conn = op.get_bind()
    # PostgreSQL keeps the ids as `uuid` (revision 0014), SQLite as text.
    ids = sa.Uuid(as_uuid=False) if conn.dialect.name == "postgresql" else sa.String()
    runs = sa.table(
        "runs",
        sa.column("run_id", ids),
        sa.column("attempt", sa.Integer),
        sa.column("updated_at", sa.DateTime(timezone=True)),
        sa.column("events", sa.Text),
    )
    events = sa.table(
        "run_events",
        sa.column("run_id", ids),
        sa.column("seq", sa.Integer),
        sa.column("event", sa.String),
        sa.column("data", sa.Text),
        sa.column("checkpoint_id", ids),
        sa.column("last_seq", sa.Integer),
        sa.column("more", sa.Text),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    found = conn.execute(
        sa.select(runs.c.run_id, runs.c.attempt, runs.c.updated_at, runs.c.events).where(
            runs.c.events.is_not(None)
        )
    )
    rows = [_row(*run) for run in found]
    if rows:
        conn.execute(events.insert(), rows)
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("events")


def _row(run_id: str, attempt: int, at: object, folded: str) -> dict[str, object]:
    """The row of `run_events` that a run row's `events` stands for: the first event's
    fields and the rest (`more`), or those alone after the attempt's `metadata` event."""
    items = json.loads(folded)
    if items and type(items[0]) is int:
        seq, event, data, checkpoint_id, *more = items
    else:
        seq, event, data, checkpoint_id, more = 0, "metadata", str(attempt), None, items
    return {
        "run_id": run_id,
        "seq": seq,
        "event": event,
        "data": data,
        "checkpoint_id": checkpoint_id,
        "last_seq": seq + len(more) if more else None,
        "more": json.dumps(more, separators=(",", ":"), ensure_ascii=False) if more else None,
        "created_at": at,
    }
