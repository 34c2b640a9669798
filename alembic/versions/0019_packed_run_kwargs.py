"""runs: kwargs deflated

A run's kwargs repeat the user's message: some 250 bytes a chat turn, which neither
database compresses (PostgreSQL compresses only rows over 2 kB). They are now stored
deflated against a dictionary of what kwargs hold (`app.db.models.PackedJSON`), about 150
bytes for a turn. The upgrade keeps each existing row's JSON text, as bytes, which the
type reads as well; the downgrade turns every row back into JSON text.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03 18:30:00.000000
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op
from app.db.packed import unpack_json

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    _retype("bytea USING convert_to(kwargs::text, 'UTF8')", "BLOB", sa.JSON(), sa.LargeBinary())


def downgrade() -> None:
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("run_id"), sa.column("kwargs", sa.LargeBinary))
    found = conn.execute(sa.select(runs.c.run_id, runs.c.kwargs)).all()
    for run_id, kwargs in found:
        text = json.dumps(unpack_json(kwargs)).encode()  # ASCII, as the JSON type wrote it
        conn.execute(runs.update().where(runs.c.run_id == run_id).values(kwargs=text))
    _retype("json USING convert_from(kwargs, 'UTF8')::json", "TEXT", sa.LargeBinary(), sa.JSON())


def _retype(
    postgresql: str, sqlite: str, old: sa.types.TypeEngine, new: sa.types.TypeEngine
) -> None:
    """`runs.kwargs` as `new`: PostgreSQL rewrites the column (`postgresql`: its type and
    USING clause); SQLite casts each value to the storage class `sqlite`, then recreates
    the table with the column's declared type."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE runs ALTER COLUMN kwargs TYPE {postgresql}")
        return
    op.execute(f"UPDATE runs SET kwargs = CAST(kwargs AS {sqlite})")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.alter_column("kwargs", existing_type=old, type_=new, existing_nullable=False)
