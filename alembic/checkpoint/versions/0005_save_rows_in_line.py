"""Save rows keep their data in the table's pages, up to a page (PostgreSQL).

A digest of a chat graph's 32 records (docs/storage.md, "Digests") is about 4 kB. In a
column of the default storage (EXTENDED), PostgreSQL moves a value of over 2 kB to the
table's TOAST relation, in chunks of 2 kB with an index of their own: for a 200-turn chat
graph a fifth of its message text again. With MAIN storage a value stays in its row until
the row outgrows a page. The data is deflated already, so PostgreSQL's own compression,
tried either way, gains nothing. Rows written before keep their place. SQLite has no such
storage: nothing changes there.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 20:35:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    _set_storage("MAIN")


def downgrade() -> None:
    _set_storage("EXTENDED")


def _set_storage(storage: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE checkpoint_saves ALTER COLUMN data SET STORAGE {storage}")
