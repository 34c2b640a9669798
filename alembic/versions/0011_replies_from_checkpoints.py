"""runs: no copy of the last message; the conversation tree reads each turn's reply from
its last checkpoint

A run's row kept the last message of the values it ended with (about 400 bytes a turn,
a second copy of the reply that the checkpoint holds). The tree now asks the saver for
the last message at each turn's last checkpoint, one message a turn, for rows of every
age. The downgrade brings the column back empty: the tree of an earlier version then
shows no reply for runs recorded since, until they run again.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("last_message")


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_message", sa.JSON(), nullable=True))
