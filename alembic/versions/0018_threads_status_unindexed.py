"""threads: no index on status, so that a run's admission updates the row in place

A chat turn updated its thread's row twice: the admission marks it busy (and merges the
run's graph and assistant into its metadata), the end records the head. Each changed an
indexed column (`status`, `updated_at`), so PostgreSQL wrote a new entry in all five
indexes of the table each time, dead until a vacuum: 80 of the 140 bytes a turn that the
table and its indexes grew by. The admission no longer sets `updated_at` (the end does),
and without the index on `status` it changes no indexed column: a HOT update, in the
row's page. A search by status reads the owner's index, or the table.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03 18:10:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_threads_status"))


def downgrade() -> None:
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_threads_status"), ["status"], unique=False)
