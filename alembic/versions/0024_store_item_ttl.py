"""store_items: a time to live

An item put with a `ttl` (minutes) expires `ttl` after it was put or last read: reads skip
it from then on and the sweep deletes it. Items kept until now have none.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("store_items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ttl_minutes", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_store_items_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("store_items", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_store_items_expires_at"))
        batch_op.drop_column("expires_at")
        batch_op.drop_column("ttl_minutes")
