"""Save records: a thread's checkpoints, writes, items and blobs in compressed rows.

A row per checkpoint, write, list segment and blob costs PostgreSQL 60 to 100 bytes of
header and index entry before any content, and it compresses nothing in rows that small;
one compressed record per save costs a fraction of that (docs/storage.md,
`engine.checkpoint.sql.records`). Upgrading turns each thread's rows into one record,
numbered by the thread's `put_count`; downgrading replays a thread's records in order back
into rows. Both bump the thread's `epoch`, so a process still running with what it cached
of the other format drops it. One thread is converted at a time.

Revision ID: 0004
Revises: 0001
Create Date: 2026-12-01 06:05:12.518203
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from alembic import op
from engine.checkpoint.sql.records import CheckpointEntry, Record, decode_thread, encode

revision: str = "0004"
# 0003 (the server's) while both histories were one; nothing here depends on it.
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# BIGINT on PostgreSQL; INTEGER on SQLite, where only that spelling makes a rowid alias.
THREAD_KEY = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# The metadata values the old `checkpoints` table lifted into columns, with their type.
METADATA_COLUMNS: dict[str, type] = {"source": str, "step": int, "run_id": str}
OLD_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_items", "checkpoint_writes")

# The tables as the data is moved, Core only: a migration must not change when the models do.
_json = sa.JSON(none_as_null=True)
threads = sa.table(
    "checkpoint_threads",
    sa.column("id", THREAD_KEY),
    sa.column("put_count", sa.BigInteger()),
    sa.column("epoch", sa.BigInteger()),
)
saves = sa.table(
    "checkpoint_saves",
    sa.column("thread", THREAD_KEY),
    sa.column("seq", sa.BigInteger()),
    sa.column("data", sa.LargeBinary()),
)
checkpoints = sa.table(
    "checkpoints",
    sa.column("thread", THREAD_KEY),
    sa.column("checkpoint_ns", sa.Text()),
    sa.column("checkpoint_id", sa.Text()),
    sa.column("parent_checkpoint_id", sa.Text()),
    sa.column("v", sa.Integer()),
    sa.column("ts", sa.Text()),
    sa.column("source", sa.Text()),
    sa.column("step", sa.Integer()),
    sa.column("run_id", sa.Text()),
    sa.column("metadata", _json),
    sa.column("channel_versions", _json),
    sa.column("versions_seen", _json),
    sa.column("updated_channels", _json),
    sa.column("inline_values", sa.Text()),
    sa.column("stored_values", _json),
)
blobs = sa.table(
    "checkpoint_blobs",
    sa.column("thread", THREAD_KEY),
    sa.column("checkpoint_ns", sa.Text()),
    sa.column("channel", sa.Text()),
    sa.column("version", sa.Text()),
    sa.column("data", sa.Text()),
)
items = sa.table(
    "checkpoint_items",
    sa.column("thread", THREAD_KEY),
    sa.column("checkpoint_ns", sa.Text()),
    sa.column("channel", sa.Text()),
    sa.column("seq", sa.Integer()),
    sa.column("count", sa.Integer()),
    sa.column("data", sa.Text()),
)
writes = sa.table(
    "checkpoint_writes",
    sa.column("thread", THREAD_KEY),
    sa.column("checkpoint_ns", sa.Text()),
    sa.column("checkpoint_id", sa.Text()),
    sa.column("task_id", sa.Text()),
    sa.column("idx", sa.Integer()),
    sa.column("channel", sa.Text()),
    sa.column("task_path", sa.Text()),
    sa.column("data", sa.Text()),
)
WRITE_COLUMNS = ("checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "task_path")
ITEM_COLUMNS = ("checkpoint_ns", "channel", "seq", "count", "data")
BLOB_COLUMNS = ("checkpoint_ns", "channel", "version", "data")


def upgrade() -> None:
    op.create_table(
        "checkpoint_saves",
        sa.Column("thread", THREAD_KEY, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("thread", "seq", name=op.f("pk_checkpoint_saves")),
    )
    bind = op.get_bind()
    with_rows = sa.union(
        *(sa.select(table.c.thread) for table in (checkpoints, blobs, items, writes))
    )
    for thread in sorted(bind.execute(with_rows).scalars()):
        _save_thread(bind, thread)
    for table in OLD_TABLES:
        op.drop_table(table)


def _save_thread(bind: sa.Connection, thread: int) -> None:
    """The thread's rows as one record, numbered by its put_count (at least 1)."""
    record = Record(
        checkpoints=sorted(
            (_entry(row) for row in bind.execute(_of(checkpoints, thread))),
            key=lambda c: (c.ns, c.id),
        ),
        writes=sorted(
            (_fields(row, *WRITE_COLUMNS, "data") for row in bind.execute(_of(writes, thread))),
            key=lambda w: w[:4],
        ),
        items=sorted(
            (_fields(row, *ITEM_COLUMNS) for row in bind.execute(_of(items, thread))),
            key=lambda i: i[:3],
        ),
        blobs=sorted(
            (_fields(row, *BLOB_COLUMNS) for row in bind.execute(_of(blobs, thread))),
            key=lambda b: b[:3],
        ),
    )
    put_count = bind.execute(
        sa.select(threads.c.put_count).where(threads.c.id == thread)
    ).scalar_one_or_none()
    # A put_count below 1 (or no thread row) still numbers the record 1, and the thread's
    # put_count follows, so the next save gets a number of its own.
    seq = max(put_count or 0, 1)
    bind.execute(sa.insert(saves).values(thread=thread, seq=seq, data=encode(record).data))
    bind.execute(
        sa.update(threads)
        .where(threads.c.id == thread)
        .values(put_count=seq, epoch=threads.c.epoch + 1)
    )


def _of(table: sa.TableClause, thread: int) -> sa.Select[Any]:
    return sa.select(*(c for c in table.c if c.name != "thread")).where(table.c.thread == thread)


def _fields(row: sa.Row[Any], *names: str) -> Any:
    return tuple(row._mapping[name] for name in names)


def _parsed(value: Any) -> Any:
    """A JSON column's value as Python values: drivers hand some of them over as text."""
    return json.loads(value) if isinstance(value, str) else value


def _entry(row: sa.Row[Any]) -> CheckpointEntry:
    """A `checkpoints` row as an entry, its metadata put back together: the values lifted
    into columns first, then the rest."""
    m = row._mapping
    metadata = {key: m[key] for key in METADATA_COLUMNS if m[key] is not None}
    metadata.update(_parsed(m["metadata"]) or {})
    return CheckpointEntry(
        ns=m["checkpoint_ns"],
        id=m["checkpoint_id"],
        parent=m["parent_checkpoint_id"],
        metadata=metadata,
        v=m["v"],
        ts=m["ts"],
        channel_versions=_parsed(m["channel_versions"]),
        versions_seen=_parsed(m["versions_seen"]),
        updated_channels=_parsed(m["updated_channels"]),
        inline=m["inline_values"],
        stored=_parsed(m["stored_values"]) or {},
    )


def downgrade() -> None:
    _create_old_tables()
    bind = op.get_bind()
    with_records = sa.select(saves.c.thread).distinct().order_by(saves.c.thread)
    for thread in list(bind.execute(with_records).scalars()):
        _restore_thread(bind, thread)
    op.drop_table("checkpoint_saves")


def _restore_thread(bind: sa.Connection, thread: int) -> None:
    """The thread's records replayed in order into rows: a checkpoint, item or blob saved
    again replaces the earlier one; a task's write keeps its first value, except a special
    write (idx < 0), which keeps its last, as the old saver's upserts did. Digests (rows of
    negative seq, which repeat part of the records before them) are left out."""
    found: dict[tuple[Any, ...], CheckpointEntry] = {}
    written: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    logged: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    stored: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    records = sa.select(saves.c.data).where(saves.c.thread == thread, saves.c.seq > 0)
    datas = bind.execute(records.order_by(saves.c.seq)).scalars()
    for record in decode_thread(bytes(data) for data in datas):
        for entry in record.checkpoints:
            found[entry.ns, entry.id] = entry
        for write in record.writes:
            if write[3] < 0 or write[:4] not in written:
                written[write[:4]] = write
        logged.update((item[:3], item) for item in record.items)
        stored.update((blob[:3], blob) for blob in record.blobs)

    rows = [{"thread": thread, **_row(entry)} for entry in found.values()]
    for table, names, values in (
        (writes, (*WRITE_COLUMNS, "data"), written.values()),
        (items, ITEM_COLUMNS, logged.values()),
        (blobs, BLOB_COLUMNS, stored.values()),
    ):
        many = [{"thread": thread, **dict(zip(names, value, strict=True))} for value in values]
        if many:
            bind.execute(sa.insert(table), many)
    if rows:
        bind.execute(sa.insert(checkpoints), rows)
    bind.execute(sa.update(threads).where(threads.c.id == thread).values(epoch=threads.c.epoch + 1))


def _row(entry: CheckpointEntry) -> dict[str, Any]:
    """A checkpoint entry as a `checkpoints` row: the metadata values that have columns
    lifted out of the metadata, the rest left in it (NULL when nothing is left)."""
    columns: dict[str, Any] = dict.fromkeys(METADATA_COLUMNS)
    rest: dict[str, Any] = {}
    for key, value in entry.metadata.items():
        if type(value) is METADATA_COLUMNS.get(key):
            columns[key] = value
        else:
            rest[key] = value
    return {
        "checkpoint_ns": entry.ns,
        "checkpoint_id": entry.id,
        "parent_checkpoint_id": entry.parent,
        "v": entry.v,
        "ts": entry.ts,
        **columns,
        "metadata": rest or None,
        "channel_versions": entry.channel_versions,
        "versions_seen": entry.versions_seen,
        "updated_channels": entry.updated_channels,
        "inline_values": entry.inline,
        "stored_values": entry.stored or None,
    }


def _create_old_tables() -> None:
    """The tables of revision 0001 but `checkpoint_threads`, which this revision keeps."""
    op.create_table(
        "checkpoint_blobs",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "thread", "checkpoint_ns", "channel", "version", name=op.f("pk_checkpoint_blobs")
        ),
    )
    op.create_table(
        "checkpoint_items",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "thread", "checkpoint_ns", "channel", "seq", name=op.f("pk_checkpoint_items")
        ),
    )
    op.create_table(
        "checkpoint_writes",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("task_path", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "thread",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            name=op.f("pk_checkpoint_writes"),
        ),
    )
    op.create_table(
        "checkpoints",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", sa.Text(), nullable=False),
        sa.Column("parent_checkpoint_id", sa.Text(), nullable=True),
        sa.Column("v", sa.Integer(), nullable=False),
        sa.Column("ts", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("channel_versions", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("versions_seen", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("updated_channels", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("inline_values", sa.Text(), nullable=True),
        sa.Column("stored_values", sa.JSON(none_as_null=True), nullable=True),
        sa.PrimaryKeyConstraint(
            "thread", "checkpoint_ns", "checkpoint_id", name=op.f("pk_checkpoints")
        ),
    )
