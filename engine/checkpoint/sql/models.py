"""Tables of the SQL saver, on their own MetaData: their schema is their own Alembic history
(`engine.checkpoint.sql.migrations`), apart from the server's tables.

A thread is a row in `checkpoint_threads` and its save records in `checkpoint_saves`,
keyed by `thread`, a small integer handed out by `checkpoint_threads`, instead of the
thread id text, which would be repeated in every row and index entry. See
docs/storage.md for what a record holds.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Integer, LargeBinary, MetaData, Table, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

checkpoint_metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# BIGINT on PostgreSQL; INTEGER on SQLite, where only that spelling makes a rowid alias.
ThreadKey = BigInteger().with_variant(Integer(), "sqlite")


class CheckpointBase(DeclarativeBase):
    metadata = checkpoint_metadata


class ThreadRow(CheckpointBase):
    """One row per thread ever written: its key, a write lock, activity, and tombstone.

    Every write transaction updates this row first, so writers of one thread queue here
    while other threads are untouched. `put_count` grows by one with every save record
    (and every other change), and numbers the records; `epoch` grows with every change
    that rewrites or deletes records (delete, prune, rollback, copy), so between two such
    changes a thread's records only grow and what a saver decoded of them stays valid.
    A deleted thread keeps its row with `deleted_at` set, so late writes are refused.
    """

    __tablename__ = "checkpoint_threads"

    id: Mapped[int] = mapped_column(ThreadKey, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(Text, unique=True)
    put_count: Mapped[int] = mapped_column(BigInteger)
    epoch: Mapped[int] = mapped_column(BigInteger)
    last_write_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SaveRow(CheckpointBase):
    """What one write transaction saved for one thread: a compressed record
    (`engine.checkpoint.sql.records`) of its checkpoints, pending writes, new list
    elements and big values. A thread is its records applied in `seq` order; `seq` is the
    thread's `put_count` after the transaction that wrote the record. A digest of the
    records up to `seq` (what a new saver reads a thread's head from) is a row under
    -`seq`. On PostgreSQL `data` has MAIN storage (revision 0005): a row of a few kB,
    a digest, stays in the table's pages rather than in TOAST chunks."""

    __tablename__ = "checkpoint_saves"

    thread: Mapped[int] = mapped_column(ThreadKey, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


# The saver runs Core statements on the tables (column names, no ORM session).
thread_table: Table = ThreadRow.__table__  # type: ignore[assignment]
save_table: Table = SaveRow.__table__  # type: ignore[assignment]
