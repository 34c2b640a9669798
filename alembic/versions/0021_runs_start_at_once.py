"""runs: no start time unless delayed

A run's `not_before`, the time before which it may not start, was its creation time for
every run not asked for with `after_seconds`: 8 bytes a chat turn on PostgreSQL, 26 on
SQLite, that said nothing. It is now null for those (`app.services.runs.admission`).
The upgrade leaves existing rows as they are; the downgrade gives every run its start
time again.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04 05:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    _not_before(nullable=True)


def downgrade() -> None:
    runs = sa.table("runs", sa.column("not_before"), sa.column("created_at"))
    op.execute(
        runs.update().where(runs.c.not_before.is_(None)).values(not_before=runs.c.created_at)
    )
    _not_before(nullable=False)


def _not_before(*, nullable: bool) -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.alter_column(
            "not_before", existing_type=sa.DateTime(timezone=True), nullable=nullable
        )
