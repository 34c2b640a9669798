"""users, API keys, and an owner on every user's row

Rows made before users existed belong to the local user, `local` (the user of
THREADLINE_AUTH=none); a graph's system assistant stays ownerless, visible to all.
Store items are keyed by owner first, so each user has their own namespaces.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 14:03:26.303941
"""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOCAL_USER = "local"
# `app.graphs.SYSTEM_NAMESPACE`, copied: a migration must not change when the app does.
SYSTEM_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
OWNED = ("threads", "runs", "store_items")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("user_id", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(length=36), nullable=False),
        sa.Column("prefix", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=200), nullable=False),
        sa.Column("salt", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.user_id"]),
        sa.PrimaryKeyConstraint("key_id"),
        sa.UniqueConstraint("prefix"),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_user_id"), ["user_id"], unique=False)

    for table in OWNED:
        op.execute(
            sa.text(f"UPDATE {table} SET owner = :local WHERE owner IS NULL").bindparams(
                local=LOCAL_USER
            )
        )
    _own_user_assistants()

    for table in ("runs", "threads"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("owner", existing_type=sa.String(length=200), nullable=False)

    with op.batch_alter_table("store_items", copy_from=_store_items(before=True)) as batch:
        batch.alter_column("owner", existing_type=sa.String(length=200), nullable=False)
        batch.drop_index("ix_store_items_owner")
        batch.drop_constraint("store_items_pkey", type_="primary")
        batch.create_primary_key("store_items_pkey", ["owner", "namespace", "key"])


def _store_items(*, before: bool) -> sa.Table:
    """The store table before this revision (or after it), its key named as PostgreSQL
    names it, so that SQLite's table copy swaps the key the way PostgreSQL alters it."""
    key = ("namespace", "key") if before else ("owner", "namespace", "key")
    return sa.Table(
        "store_items",
        sa.MetaData(),
        sa.Column("namespace", sa.String(length=1000), nullable=False),
        sa.Column("key", sa.String(length=1000), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=before, index=before),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(*key, name="store_items_pkey"),
    )


def _own_user_assistants() -> None:
    """Assistants made by clients become the local user's; system ones stay ownerless."""
    bind = op.get_bind()
    rows = bind.execute(
        sa.text("SELECT assistant_id, graph_id FROM assistants WHERE owner IS NULL")
    )
    for assistant_id, graph_id in list(rows):
        if assistant_id != str(uuid.uuid5(SYSTEM_NAMESPACE, graph_id)):
            bind.execute(
                sa.text("UPDATE assistants SET owner = :local WHERE assistant_id = :id"),
                {"local": LOCAL_USER, "id": assistant_id},
            )


def downgrade() -> None:
    with op.batch_alter_table("store_items", copy_from=_store_items(before=False)) as batch:
        batch.drop_constraint("store_items_pkey", type_="primary")
        batch.create_primary_key("store_items_pkey", ["namespace", "key"])
        batch.alter_column("owner", existing_type=sa.String(length=200), nullable=True)
        batch.create_index("ix_store_items_owner", ["owner"], unique=False)

    for table in ("threads", "runs"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("owner", existing_type=sa.String(length=200), nullable=True)

    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_user_id"))
    op.drop_table("api_keys")
    op.drop_table("users")
