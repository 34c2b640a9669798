"""Tables of the SQL saver, on their own MetaData so the app's tables can join Alembic later.

Every per-thread table is keyed by `thread`, a small integer handed out by
`checkpoint_threads`, instead of the thread id text: it is repeated in every row and index
entry, and a 36-character UUID there would cost more than the bookkeeping it keys.
Serialized values are JSON text (UTF-8) and stored as TEXT, which drivers hand over as
is; BYTEA would travel hex-encoded. See docs/storage.md for how values are laid out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Integer, MetaData, Table, Text
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
# Plain JSON text: smaller than JSONB for the short documents stored here.
Json = JSON(none_as_null=True)


class CheckpointBase(DeclarativeBase):
    metadata = checkpoint_metadata


class ThreadRow(CheckpointBase):
    """One row per thread ever written: its key, a write lock, activity, and tombstone.

    Every write transaction updates or locks this row first, so writers of one thread
    queue here while other threads are untouched. `put_count` grows with every change
    to the thread's checkpoints, which tells a saver whether its cache is still current;
    `epoch` grows with every change that deletes rows (delete, prune, rollback), so
    between two such changes the item logs only grow and cached item rows stay valid.
    A deleted thread keeps its row with `deleted_at` set, so late writes are refused.
    """

    __tablename__ = "checkpoint_threads"

    id: Mapped[int] = mapped_column(ThreadKey, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(Text, unique=True)
    put_count: Mapped[int] = mapped_column(BigInteger)
    epoch: Mapped[int] = mapped_column(BigInteger)
    last_write_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class CheckpointRow(CheckpointBase):
    """A checkpoint's bookkeeping and where each channel's value lives, never the values
    of big channels themselves.

    `source`, `step` and `run_id` are lifted out of the metadata into columns (and not
    repeated in `metadata`) so the usual filters need no JSON. `inline_values` holds the
    small values of the checkpoint, serialized as one object; `stored_values` maps each
    other channel to its `checkpoint_blobs` version key or to its item-log segments.
    """

    __tablename__ = "checkpoints"

    thread: Mapped[int] = mapped_column(ThreadKey, primary_key=True)
    checkpoint_ns: Mapped[str] = mapped_column(Text, primary_key=True)
    checkpoint_id: Mapped[str] = mapped_column(Text, primary_key=True)
    parent_checkpoint_id: Mapped[str | None] = mapped_column(Text)
    v: Mapped[int] = mapped_column(Integer)
    ts: Mapped[str] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)
    step: Mapped[int | None] = mapped_column(Integer)
    run_id: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[Any | None] = mapped_column("metadata", Json)
    channel_versions: Mapped[Any] = mapped_column(Json)
    versions_seen: Mapped[Any] = mapped_column(Json)
    updated_channels: Mapped[Any | None] = mapped_column(Json)
    inline_values: Mapped[str | None] = mapped_column(Text)
    stored_values: Mapped[Any | None] = mapped_column(Json)


class BlobRow(CheckpointBase):
    """A channel value too big to inline and not a list: stored once per version."""

    __tablename__ = "checkpoint_blobs"

    thread: Mapped[int] = mapped_column(ThreadKey, primary_key=True)
    checkpoint_ns: Mapped[str] = mapped_column(Text, primary_key=True)
    channel: Mapped[str] = mapped_column(Text, primary_key=True)
    version: Mapped[str] = mapped_column(Text, primary_key=True)
    data: Mapped[str] = mapped_column(Text)


class ItemRow(CheckpointBase):
    """An append-only log per list channel, so each element is stored once: a row holds
    the `count` elements a put appended from position `seq` on, joined by ",\\n" (which
    compact JSON never contains, so a row splices into a JSON array as it is). A version
    of the list is a few ranges of positions into this log."""

    __tablename__ = "checkpoint_items"

    thread: Mapped[int] = mapped_column(ThreadKey, primary_key=True)
    checkpoint_ns: Mapped[str] = mapped_column(Text, primary_key=True)
    channel: Mapped[str] = mapped_column(Text, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer)
    data: Mapped[str] = mapped_column(Text)


class WriteRow(CheckpointBase):
    """Pending writes of tasks, against the checkpoint their step started from."""

    __tablename__ = "checkpoint_writes"

    thread: Mapped[int] = mapped_column(ThreadKey, primary_key=True)
    checkpoint_ns: Mapped[str] = mapped_column(Text, primary_key=True)
    checkpoint_id: Mapped[str] = mapped_column(Text, primary_key=True)
    task_id: Mapped[str] = mapped_column(Text, primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    channel: Mapped[str] = mapped_column(Text)
    task_path: Mapped[str] = mapped_column(Text)
    data: Mapped[str] = mapped_column(Text)


# The saver runs Core statements on the tables (column names, no ORM session).
thread_table: Table = ThreadRow.__table__  # type: ignore[assignment]
checkpoint_table: Table = CheckpointRow.__table__  # type: ignore[assignment]
blob_table: Table = BlobRow.__table__  # type: ignore[assignment]
item_table: Table = ItemRow.__table__  # type: ignore[assignment]
write_table: Table = WriteRow.__table__  # type: ignore[assignment]
