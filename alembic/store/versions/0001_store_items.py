"""The SQL store's items (engine.store.sql): LangGraph's PostgresStore and SqliteStore
under the engine's names.

Revision ID: store_0001
Revises:
Create Date: 2026-12-05 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "store_0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "engine_store_items",
        sa.Column("prefix", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ttl_minutes", sa.Float(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("vectors", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("prefix", "key", name="pk_engine_store_items"),
    )
    op.create_index(
        "ix_engine_store_items_expires_at", "engine_store_items", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_engine_store_items_expires_at", table_name="engine_store_items")
    op.drop_table("engine_store_items")
