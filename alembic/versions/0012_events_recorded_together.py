"""run_events: the events a run records together take one row

A row records its own event and, in `more`, the events recorded with it (a JSON array of
[event, checkpoint_id, data], from seq + 1 to `last_seq`). A chat turn's three events
(its metadata and two `values` events) took three rows, each paying a tuple header, the
run's id, a primary-key entry and a line pointer: about 200 bytes a turn. Rows written
before are single events (`more` and `last_seq` null) and read as they were. The
downgrade writes every recorded event back as a row of its own.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 12:30:00.000000
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _columns() -> list[sa.ColumnClause[object]]:
    """A single event's columns (new objects: a column belongs to one table)."""
    return [
        sa.column("run_id", sa.String),
        sa.column("seq", sa.Integer),
        sa.column("event", sa.String),
        sa.column("checkpoint_id", sa.String),
        sa.column("data", sa.Text),
        sa.column("created_at", sa.DateTime(timezone=True)),
    ]


def upgrade() -> None:
    with op.batch_alter_table("run_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_seq", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("more", sa.Text(), nullable=True))


def downgrade() -> None:
    conn = op.get_bind()
    events = sa.table("run_events", *_columns(), sa.column("more", sa.Text))
    together = conn.execute(
        sa.select(events.c.run_id, events.c.seq, events.c.created_at, events.c.more).where(
            events.c.more.is_not(None)
        )
    )
    rows = [
        {
            "run_id": run_id,
            "seq": seq + n,
            "event": event,
            "checkpoint_id": checkpoint_id,
            "data": data,
            "created_at": created_at,
        }
        for run_id, seq, created_at, more in together
        for n, (event, checkpoint_id, data) in enumerate(json.loads(more), start=1)
    ]
    with op.batch_alter_table("run_events", schema=None) as batch_op:
        batch_op.drop_column("more")
        batch_op.drop_column("last_seq")
    if rows:
        conn.execute(sa.insert(sa.table("run_events", *_columns())), rows)
