"""run_events: on PostgreSQL, the index on the time of events is a BRIN index

Only retention looks events up by time, and events are written in time order. The
B-tree took an entry per event (about a quarter of what an event's row costs in
indexes); a BRIN index keeps a summary per range of pages. SQLite has no BRIN indexes
and keeps its B-tree.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 05:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_run_events_created_at"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index(INDEX, table_name="run_events")
    op.create_index(INDEX, "run_events", ["created_at"], postgresql_using="brin")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index(INDEX, table_name="run_events")
    op.create_index(INDEX, "run_events", ["created_at"])
