"""run_events: what every run records, kept short

Every run records a `metadata` event (`{"run_id": ..., "attempt": n}`) and, in a chat
turn, two `values` events that are their checkpoints' ids. A row now keeps the metadata
event as its attempt alone (the run's id is the row's), and a `values` event with nothing
after its values, in `more`, as its checkpoint's id in 22 characters of base64: about 110
bytes less a turn, read back to the same text (`app.runs.broker`). The schema does not
change: rows written before are read as they were, and are left as they are. The
downgrade writes the short forms out again, as the code before this revision reads them.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03 10:00:00.000000
"""

import json
from base64 import urlsafe_b64decode
from collections.abc import Sequence
from uuid import UUID

import sqlalchemy as sa

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    conn = op.get_bind()
    # PostgreSQL keeps the ids as `uuid` (revision 0014), SQLite as text.
    ids = sa.Uuid(as_uuid=False) if conn.dialect.name == "postgresql" else sa.String()
    events = sa.table(
        "run_events",
        sa.column("run_id", ids),
        sa.column("seq", sa.Integer),
        sa.column("event", sa.String),
        sa.column("data", sa.Text),
        sa.column("more", sa.Text),
    )
    rows = conn.execute(
        sa.select(
            events.c.run_id,
            events.c.seq,
            events.c.event,
            events.c.data,
            events.c.more,
        ).where(sa.or_(events.c.event == "metadata", events.c.more.is_not(None)))
    )
    for rid, seq, event, data, more in list(rows):
        long_data = data
        if event == "metadata" and data.isdigit():
            long_data = f'{{"run_id":"{rid}","attempt":{data}}}'
        items = json.loads(more) if more else []
        long_items = [_long(item) for item in items]
        if long_data == data and long_items == items:
            continue
        long_more = json.dumps(long_items, separators=(",", ":"), ensure_ascii=False)
        conn.execute(
            events.update()
            .where(events.c.run_id == rid, events.c.seq == seq)
            .values(data=long_data, more=long_more if more else None)
        )


def _long(item: object) -> object:
    """A `more` item as the code before this revision wrote it."""
    if type(item) is str:
        return ["values", str(UUID(bytes=urlsafe_b64decode(item + "=="))), ""]
    return item
