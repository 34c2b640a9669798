"""runs: a `values` event of the checkpoint a run ended at, kept as "" in its row

A run row's `events` (revision 0017) keeps a chat turn's two `values` events as their
checkpoints' ids, 24 characters each. The last is the checkpoint the run ended at, which
the row keeps in `checkpoint_id` anyway: it is now the item `""`, which readers turn
back into that id. Rows written before read as they did, so the upgrade changes nothing;
the downgrade writes the ids back, as the code before reads them.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03 22:30:00.000000
"""

import json
from base64 import urlsafe_b64encode
from collections.abc import Sequence
from uuid import UUID

import sqlalchemy as sa

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    conn = op.get_bind()
    # PostgreSQL keeps the ids as `uuid` (revision 0014), SQLite as text.
    ids = sa.Uuid(as_uuid=False) if conn.dialect.name == "postgresql" else sa.String()
    runs = sa.table(
        "runs",
        sa.column("run_id", ids),
        sa.column("checkpoint_id", ids),
        sa.column("events", sa.Text),
    )
    found = conn.execute(
        sa.select(runs.c.run_id, runs.c.checkpoint_id, runs.c.events).where(
            runs.c.events.contains('""'), runs.c.checkpoint_id.is_not(None)
        )
    ).all()
    for run_id, checkpoint_id, events in found:
        items = json.loads(events)
        header = 4 if items and type(items[0]) is int else 0  # the first event's fields
        end = urlsafe_b64encode(UUID(str(checkpoint_id)).bytes)[:-2].decode()
        items[header:] = [end if item == "" else item for item in items[header:]]
        text = json.dumps(items, separators=(",", ":"), ensure_ascii=False)
        conn.execute(runs.update().where(runs.c.run_id == run_id).values(events=text))
