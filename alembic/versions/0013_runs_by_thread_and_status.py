"""runs: a thread's runs indexed by thread and status

A turn looks for its thread's active runs twice (its admission and its end). With the
runs indexed by `thread_id` alone, SQLite, which keeps no statistics here, found them
through that index: every run the thread ever had, so a turn on a long thread cost more
with every turn. An index on (thread_id, status) replaces it; it still serves every
lookup of a thread's runs.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 23:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("runs_by_thread_status", "runs", ["thread_id", "status"])
    op.drop_index("ix_runs_thread_id", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_thread_id", "runs", ["thread_id"])
    op.drop_index("runs_by_thread_status", table_name="runs")
