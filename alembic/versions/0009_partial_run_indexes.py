"""runs: the indexes that find active runs hold active runs only

`runs_pending` (status, created_at) and `ix_runs_owner` held every run, and a run's
every status change added an entry to both. They become partial indexes over the runs
that are pending (by thread and run id: the claim's order and its older-run check) and
active (by owner: the queue limit and cancel by owner), which ended runs never enter.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 04:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PENDING = sa.text("status = 'pending'")
ACTIVE = sa.text("status IN ('pending', 'running')")


def upgrade() -> None:
    op.drop_index("runs_pending", table_name="runs")
    op.drop_index("ix_runs_owner", table_name="runs")
    op.create_index(
        "runs_pending",
        "runs",
        ["thread_id", "run_id"],
        postgresql_where=PENDING,
        sqlite_where=PENDING,
    )
    op.create_index(
        "runs_active_by_owner",
        "runs",
        ["owner"],
        postgresql_where=ACTIVE,
        sqlite_where=ACTIVE,
    )


def downgrade() -> None:
    op.drop_index("runs_active_by_owner", table_name="runs")
    op.drop_index("runs_pending", table_name="runs")
    op.create_index("ix_runs_owner", "runs", ["owner"])
    op.create_index("runs_pending", "runs", ["status", "created_at"])
