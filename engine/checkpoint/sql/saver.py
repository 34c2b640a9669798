"""The SQL saver: checkpoints on SQLAlchemy 2 (async), one code path for SQLite and PostgreSQL.

Storage grows with what changed (docs/storage.md): small values live in the checkpoint
row, big values in `checkpoint_blobs` once per version, and list values (the messages of
a chat) in an append-only item log that each version addresses by a few ranges, so a turn
that adds two messages stores two items and not the whole conversation again.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, and_, delete, func, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from engine.checkpoint.base import (
    INTERRUPT,
    SPECIAL_WRITES,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    Config,
    Version,
    checkpoint_config,
    matches_filter,
    thread_key,
)
from engine.checkpoint.serde import JsonSerializer, default_serializer
from engine.checkpoint.sql.models import BlobRow, CheckpointRow, ItemRow, ThreadRow, WriteRow
from engine.checkpoint.sql.url import WRITE_OPTION, create_engine

__all__ = ["SQLSaver", "ThreadDeletedError"]

T = TypeVar("T")
Segments = list[list[int]]  # [[start, end), ...] into one channel's item log, in list order

INLINE_MAX = 128  # serialized bytes up to which a value is kept in the checkpoint row
MAX_SEGMENTS = 16  # ranges a list version may have before it is written out as one range
PAGE_SIZE = 64  # checkpoints per query when listing
_CHUNK = 500  # keys per IN list, well under every driver's parameter limit
# Metadata keys kept in their own (indexed, typed) columns instead of the JSON.
_COLUMN_KEYS: dict[str, type] = {"source": str, "step": int, "run_id": str}
# SQLSTATE classes worth another attempt: connection lost, transaction rolled back by the
# server (deadlock, serialization), out of resources, server shutting down or starting.
_TRANSIENT_SQLSTATES = ("08", "40", "53", "57P")


class ThreadDeletedError(LookupError):
    """A write to a thread that was deleted: a run still finishing must not revive it."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} was deleted; its checkpoints cannot be written")
        self.thread_id = thread_id


@dataclass(slots=True)
class _Known:
    """Where one checkpoint's values live, which is all a child needs to share them."""

    checkpoint_id: str
    channel_versions: dict[str, Version]
    inline: dict[str, bytes]  # channel -> serialized small value
    stored: dict[str, str | Segments]  # channel -> blob version key, or item-log segments
    # Item-log channel -> the element objects of that version (handed to aput, or returned
    # by aget_tuple), so the next put finds the unchanged prefix by identity, not by bytes.
    elements: dict[str, list[Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _ThreadCache:
    """What this saver knows of a thread as of `put_count`; used only while the thread's
    put_count proves nobody else changed it since."""

    key: int
    put_count: int
    known: dict[str, _Known]  # checkpoint_ns -> the last checkpoint put or read
    log_ends: dict[tuple[str, str], int]  # (checkpoint_ns, channel) -> next free seq


@dataclass(slots=True)
class _Plan:
    """A checkpoint's values sorted into the row, blobs and new items."""

    known: _Known
    blobs: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    log_ends: dict[tuple[str, str], int] = field(default_factory=dict)


class SQLSaver(BaseCheckpointSaver):
    """Checkpoints in SQL tables created by the Alembic migrations (`threadline migrate`).

    Safe for many concurrent writers: each write transaction locks only its thread's row
    in `checkpoint_threads`. Transient database errors (dropped connection, server
    restart) are retried for up to `retry_for` seconds; every write is idempotent, so a
    retried commit whose first attempt did land stores nothing twice.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        serializer: JsonSerializer | None = None,
        cache_threads: int = 256,
        retry_for: float = 15.0,
        owns_engine: bool = False,
    ) -> None:
        self.engine = engine
        self.serializer = serializer or default_serializer
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self._dialect = engine.dialect.name
        self._insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        self._cache: OrderedDict[str, _ThreadCache] = OrderedDict()
        self._cache_threads = cache_threads
        self._retry_for = retry_for
        self._owns_engine = owns_engine

    @classmethod
    def from_url(cls, url: str, **engine_options: Any) -> SQLSaver:
        """A saver on its own engine (see `create_engine`); `aclose()` disposes of it."""
        return cls(create_engine(url, **engine_options), owns_engine=True)

    async def aclose(self) -> None:
        if self._owns_engine:
            await self.engine.dispose()

    # Reads.

    async def aget_tuple(self, config: Config) -> CheckpointTuple | None:
        thread_id, ns = thread_key(config)
        checkpoint_id = config["configurable"].get("checkpoint_id")
        query = self._rows().where(
            ThreadRow.thread_id == thread_id, CheckpointRow.checkpoint_ns == ns
        )
        if checkpoint_id:
            query = query.where(CheckpointRow.checkpoint_id == checkpoint_id)
        else:
            query = query.order_by(CheckpointRow.checkpoint_id.desc()).limit(1)

        async def read() -> tuple[Any, CheckpointTuple] | None:
            async with self.engine.connect() as conn:
                row = (await conn.execute(query)).first()
                if row is None:
                    return None
                [loaded] = await self._load(conn, [row])
                return row, loaded

        found = await self._retry(read)
        if found is None:
            return None
        row, loaded = found
        self._remember_read(row, loaded)
        return loaded

    async def alist(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Newest first over every branch; no config means every thread, a config without
        checkpoint_ns every namespace, one with checkpoint_id just that one.

        The filter runs in SQL on the metadata columns; values that SQL cannot compare
        exactly (lists, objects) are checked on the metadata alone, never by loading state.
        """
        conf = (config or {}).get("configurable", {})
        query = self._rows()
        if conf.get("thread_id") is not None:
            query = query.where(ThreadRow.thread_id == str(conf["thread_id"]))
        if conf.get("checkpoint_ns") is not None:
            query = query.where(CheckpointRow.checkpoint_ns == conf["checkpoint_ns"])
        if conf.get("checkpoint_id"):
            query = query.where(CheckpointRow.checkpoint_id == conf["checkpoint_id"])
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        if before_id:
            query = query.where(CheckpointRow.checkpoint_id < before_id)
        conditions, exact = self._filter_conditions(filter or {})
        query = query.where(*conditions)
        order = (CheckpointRow.checkpoint_id, ThreadRow.thread_id, CheckpointRow.checkpoint_ns)
        query = query.order_by(*(column.desc() for column in order))
        page_size = min(limit, PAGE_SIZE) if limit is not None and exact else PAGE_SIZE
        remaining = limit
        cursor: tuple[str, str, str] | None = None
        while remaining is None or remaining > 0:
            page = query if cursor is None else query.where(tuple_(*order) < cursor)
            page = page.limit(page_size if remaining is None else min(page_size, remaining))
            if not exact:
                page = page.limit(page_size)
            rows, loaded = await self._retry(lambda page=page: self._list_page(page, filter))
            for item in loaded[:remaining]:
                yield item
            if remaining is not None:
                remaining -= min(len(loaded), remaining)
            if len(rows) < page_size and (exact or len(rows) < PAGE_SIZE):
                return
            last = rows[-1]
            cursor = (last.checkpoint_id, last.thread_id, last.checkpoint_ns)

    async def _list_page(
        self, page: Select[Any], filter: dict[str, Any] | None
    ) -> tuple[list[Any], list[CheckpointTuple]]:
        async with self.engine.connect() as conn:
            rows = list((await conn.execute(page)).all())
            wanted = [r for r in rows if not filter or matches_filter(self._metadata(r), filter)]
            return rows, await self._load(conn, wanted)

    def _rows(self) -> Select[Any]:
        """Checkpoint rows with their thread id; never the values of big channels."""
        return select(ThreadRow.thread_id, ThreadRow.put_count, CheckpointRow).join(
            ThreadRow, ThreadRow.id == CheckpointRow.thread
        )

    async def _load(self, conn: AsyncConnection, rows: Sequence[Any]) -> list[CheckpointTuple]:
        """Whole checkpoints for `rows`, with one query each for items, blobs and writes."""
        ranges: dict[tuple[int, str, str], list[list[int]]] = {}
        blob_keys: set[tuple[int, str, str, str]] = set()
        for row in rows:
            for channel, ref in (row.stored_values or {}).items():
                if isinstance(ref, str):
                    blob_keys.add((row.thread, row.checkpoint_ns, channel, ref))
                else:
                    ranges.setdefault((row.thread, row.checkpoint_ns, channel), []).extend(ref)
        items = await self._fetch_items(conn, ranges)
        blobs: dict[tuple[int, str, str, str], bytes] = {}
        for chunk in _chunks(sorted(blob_keys)):
            key_columns = tuple_(
                BlobRow.thread, BlobRow.checkpoint_ns, BlobRow.channel, BlobRow.version
            )
            result = await conn.execute(
                select(*key_columns.clauses, BlobRow.data).where(key_columns.in_(chunk))
            )
            blobs.update({tuple(r[:4]): r.data for r in result})
        writes: dict[tuple[int, str, str], list[tuple[str, str, Any]]] = {}
        write_keys = sorted({(r.thread, r.checkpoint_ns, r.checkpoint_id) for r in rows})
        for chunk in _chunks(write_keys):
            key_columns = tuple_(WriteRow.thread, WriteRow.checkpoint_ns, WriteRow.checkpoint_id)
            result = await conn.execute(
                select(*key_columns.clauses, WriteRow.task_id, WriteRow.channel, WriteRow.data)
                .where(key_columns.in_(chunk))
                .order_by(WriteRow.task_id, WriteRow.idx)
            )
            loads = self.serializer.loads
            for r in result:
                writes.setdefault(tuple(r[:3]), []).append((r.task_id, r.channel, loads(r.data)))
        return [self._tuple(row, items, blobs, writes) for row in rows]

    async def _fetch_items(
        self, conn: AsyncConnection, ranges: dict[tuple[int, str, str], list[list[int]]]
    ) -> dict[tuple[int, str, str], dict[int, bytes]]:
        """Item data by log and seq for the union of `ranges`, in one query."""
        if not ranges:
            return {}
        logs = [
            and_(
                ItemRow.thread == thread,
                ItemRow.checkpoint_ns == ns,
                ItemRow.channel == channel,
                _in_ranges(ItemRow.seq, _merge(spans)),
            )
            for (thread, ns, channel), spans in ranges.items()
        ]
        result = await conn.execute(
            select(
                ItemRow.thread, ItemRow.checkpoint_ns, ItemRow.channel, ItemRow.seq, ItemRow.data
            )
            .where(or_(*logs))
            .order_by(ItemRow.seq)
        )
        items: dict[tuple[int, str, str], dict[int, bytes]] = {}
        for r in result:
            items.setdefault((r.thread, r.checkpoint_ns, r.channel), {})[r.seq] = r.data
        return items

    def _tuple(
        self,
        row: Any,
        items: dict[tuple[int, str, str], dict[int, bytes]],
        blobs: dict[tuple[int, str, str, str], bytes],
        writes: dict[tuple[int, str, str], list[tuple[str, str, Any]]],
    ) -> CheckpointTuple:
        loads = self.serializer.loads
        inline = loads(row.inline_values) if row.inline_values else {}
        stored = row.stored_values or {}
        values: dict[str, Any] = {}
        for channel in row.channel_versions:
            if channel in inline:
                values[channel] = inline[channel]
            elif channel in stored:
                ref = stored[channel]
                if isinstance(ref, str):
                    values[channel] = loads(blobs[(row.thread, row.checkpoint_ns, channel, ref)])
                else:
                    log = items.get((row.thread, row.checkpoint_ns, channel), {})
                    values[channel] = loads(_join(log[seq] for a, b in ref for seq in range(a, b)))
        checkpoint: Checkpoint = {
            "v": row.v,
            "id": row.checkpoint_id,
            "ts": row.ts,
            "channel_values": values,
            "channel_versions": row.channel_versions,
            "versions_seen": row.versions_seen,
            "updated_channels": row.updated_channels,
        }
        ns, parent_id = row.checkpoint_ns, row.parent_checkpoint_id
        return CheckpointTuple(
            config=checkpoint_config(row.thread_id, ns, row.checkpoint_id),
            checkpoint=checkpoint,
            metadata=self._metadata(row),
            parent_config=checkpoint_config(row.thread_id, ns, parent_id) if parent_id else None,
            pending_writes=writes.get((row.thread, ns, row.checkpoint_id), []),
        )

    def _metadata(self, row: Any) -> CheckpointMetadata:
        metadata: dict[str, Any] = {
            key: getattr(row, key) for key in _COLUMN_KEYS if getattr(row, key) is not None
        }
        if row.metadata_ is not None:
            metadata.update(self.serializer.loads(json.dumps(row.metadata_).encode()))
        return metadata  # type: ignore[return-value]

    def _filter_conditions(self, filter: dict[str, Any]) -> tuple[list[ColumnElement[bool]], bool]:
        """SQL conditions for `filter`, and whether they are exact (else the caller also
        checks the metadata, and cannot push LIMIT into SQL)."""
        conditions: list[ColumnElement[bool]] = []
        exact = True
        for key, value in filter.items():
            kind = _COLUMN_KEYS.get(key)
            column = getattr(CheckpointRow, key) if kind else None
            if column is not None and type(value) is kind:
                conditions.append(column == value)
                continue
            condition = self._json_condition(key, value)
            if condition is None:
                exact = False
                continue
            if column is not None:  # a None there means: in neither place
                condition = and_(column.is_(None), condition) if value is None else condition
            conditions.append(condition)
        return conditions, exact

    def _json_condition(self, key: str, value: Any) -> ColumnElement[bool] | None:
        column = CheckpointRow.metadata_
        if type(value) not in (str, int, float, bool, type(None)):
            return None
        if self._dialect == "postgresql":
            if value is None:
                return or_(~column.has_key(key), column.contains({key: None}))  # type: ignore[attr-defined]
            return column.contains({key: value})  # type: ignore[attr-defined]
        if '"' in key or "\\" in key:  # cannot be written as a SQLite JSON path
            return None
        extracted = func.json_extract(column, f'$."{key}"')
        return extracted.is_(None) if value is None else extracted == value

    # Writes.

    async def aput(
        self,
        config: Config,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, Version],
    ) -> Config:
        thread_id, ns = thread_key(config)
        parent_id = config["configurable"].get("checkpoint_id")
        columns, rest = self._split_metadata(metadata)
        values = {
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": parent_id,
            "v": checkpoint["v"],
            "ts": checkpoint["ts"],
            "metadata": rest,
            "channel_versions": checkpoint["channel_versions"],
            "versions_seen": checkpoint["versions_seen"],
            "updated_channels": checkpoint.get("updated_channels"),
            **{key: columns.get(key) for key in _COLUMN_KEYS},
        }

        async def put() -> None:
            async with self._writer.begin() as conn:
                key, count = await self._claim(conn, thread_id, bump=True)
                cache = self._current_cache(thread_id, key, count)
                parent = await self._parent(conn, cache, key, ns, parent_id)
                plan = await self._plan(conn, cache, key, ns, checkpoint, new_versions, parent)
                stored = await self._insert_values(conn, key, ns, checkpoint["id"], plan)
                row = {
                    **values,
                    "thread": key,
                    "inline_values": _join_object(plan.known.inline),
                    "stored_values": stored or None,
                }
                upsert = self._insert(CheckpointRow).values(row)
                keys = ("thread", "checkpoint_ns", "checkpoint_id")
                await conn.execute(
                    upsert.on_conflict_do_update(
                        index_elements=list(keys),
                        set_={c: upsert.excluded[c] for c in row if c not in keys},
                    )
                )
            self._remember_put(thread_id, key, count, ns, plan)

        await self._retry(put)
        return checkpoint_config(thread_id, ns, checkpoint["id"])

    async def aput_writes(
        self, config: Config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Ordinary writes keep the first save (a retried save is a no-op); a special
        write (error, interrupt, resume, scheduled) replaces the task's previous one."""
        thread_id, ns = thread_key(config)
        checkpoint_id = config["configurable"].get("checkpoint_id")
        if not checkpoint_id:
            raise ValueError("Writes belong to a checkpoint: the config needs a checkpoint_id")
        dumps = self.serializer.dumps
        rows = [
            {
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
                "task_id": task_id,
                "idx": SPECIAL_WRITES.get(channel, idx),
                "channel": channel,
                "task_path": task_path,
                "data": dumps(value),
            }
            for idx, (channel, value) in enumerate(writes)
        ]
        if not rows:
            return

        async def put_writes() -> None:
            async with self._writer.begin() as conn:
                key = await self._share(conn, thread_id)
                special = [{**r, "thread": key} for r in rows if r["idx"] < 0]
                ordinary = [{**r, "thread": key} for r in rows if r["idx"] >= 0]
                if special:
                    upsert = self._insert(WriteRow)
                    await conn.execute(
                        upsert.on_conflict_do_update(
                            index_elements=[
                                "thread",
                                "checkpoint_ns",
                                "checkpoint_id",
                                "task_id",
                                "idx",
                            ],
                            set_={c: upsert.excluded[c] for c in ("channel", "task_path", "data")},
                        ),
                        special,
                    )
                if ordinary:
                    await conn.execute(self._insert(WriteRow).on_conflict_do_nothing(), ordinary)

        await self._retry(put_writes)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread and leave a tombstone, so that
        a late write from a run that was still finishing raises ThreadDeletedError instead
        of bringing the thread back."""
        thread_id = str(thread_id)

        async def delete_thread() -> None:
            async with self._writer.begin() as conn:
                now = datetime.now(UTC)
                tombstone = self._insert(ThreadRow).values(
                    thread_id=thread_id, put_count=1, last_write_at=now, deleted_at=now
                )
                key = await conn.scalar(
                    tombstone.on_conflict_do_update(
                        index_elements=["thread_id"],
                        set_={"deleted_at": now, "put_count": ThreadRow.put_count + 1},
                    ).returning(ThreadRow.id)
                )
                await _purge(conn, key)

        await self._retry(delete_thread)
        self._cache.pop(thread_id, None)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write under the same ids; metadata that
        records the source thread id is changed to name the target. Checkpoints the target
        already has are kept unless the source has the same id."""
        source_id, target_id = str(source_thread_id), str(target_thread_id)

        async def copy_thread() -> None:
            async with self._writer.begin() as conn:
                keys: dict[str, int] = {}
                for thread_id in sorted({source_id, target_id}):  # one lock order: no deadlock
                    keys[thread_id], _ = await self._claim(conn, thread_id, bump=True)
                await self._copy(conn, keys[source_id], keys[target_id], source_id, target_id)

        await self._retry(copy_thread)
        self._cache.pop(target_id, None)

    async def _copy(
        self, conn: AsyncConnection, source: int, target: int, source_id: str, target_id: str
    ) -> None:
        # The target's own item logs keep their seqs; the source's move past their ends.
        offsets = {
            (r.checkpoint_ns, r.channel): r.end
            for r in await conn.execute(
                select(ItemRow.checkpoint_ns, ItemRow.channel, func.max(ItemRow.seq).label("end"))
                .where(ItemRow.thread == target)
                .group_by(ItemRow.checkpoint_ns, ItemRow.channel)
            )
        }
        logs = await conn.execute(
            select(ItemRow.checkpoint_ns, ItemRow.channel)
            .where(ItemRow.thread == source)
            .distinct()
        )
        for ns, channel in logs.all():
            shift = offsets.get((ns, channel), -1) + 1
            copied = select(
                _literal(target),
                ItemRow.checkpoint_ns,
                ItemRow.channel,
                ItemRow.seq + shift,
                ItemRow.data,
            ).where(
                ItemRow.thread == source, ItemRow.checkpoint_ns == ns, ItemRow.channel == channel
            )
            await conn.execute(
                self._insert(ItemRow).from_select(
                    ["thread", "checkpoint_ns", "channel", "seq", "data"], copied
                )
            )
        for table, columns, keys in (
            (BlobRow, ("checkpoint_ns", "channel", "version", "data"), ("channel", "version")),
            (
                WriteRow,
                (
                    "checkpoint_ns",
                    "checkpoint_id",
                    "task_id",
                    "idx",
                    "channel",
                    "task_path",
                    "data",
                ),
                ("checkpoint_id", "task_id", "idx"),
            ),
        ):
            copied = select(_literal(target), *(getattr(table, c) for c in columns)).where(
                table.thread == source
            )
            upsert = self._insert(table).from_select(["thread", *columns], copied)
            await conn.execute(
                upsert.on_conflict_do_update(
                    index_elements=["thread", "checkpoint_ns", *keys],
                    set_={
                        c: upsert.excluded[c]
                        for c in columns
                        if c not in keys and c != "checkpoint_ns"
                    },
                )
            )
        rows = []
        for row in (
            await conn.execute(select(CheckpointRow).where(CheckpointRow.thread == source))
        ).scalars():
            values = {c.key: getattr(row, c.key) for c in CheckpointRow.__mapper__.column_attrs}
            stored = {
                channel: ref
                if isinstance(ref, str)
                else _shift(ref, offsets.get((row.checkpoint_ns, channel), -1) + 1)
                for channel, ref in (row.stored_values or {}).items()
            }
            metadata = row.metadata_
            if isinstance(metadata, dict) and metadata.get("thread_id") == source_id:
                metadata = {**metadata, "thread_id": target_id}
            rows.append(
                {**values, "thread": target, "metadata_": metadata, "stored_values": stored or None}
            )
        for chunk in _chunks(rows):
            upsert = self._insert(CheckpointRow).values(
                [{("metadata" if k == "metadata_" else k): v for k, v in r.items()} for r in chunk]
            )
            keys = ("thread", "checkpoint_ns", "checkpoint_id")
            await conn.execute(
                upsert.on_conflict_do_update(
                    index_elements=list(keys),
                    set_={
                        c.name: upsert.excluded[c.name]
                        for c in CheckpointRow.__table__.columns
                        if c.name not in keys
                    },
                )
            )

    # Pruning.

    async def aprune(self, thread_ids: Iterable[str] | None = None, *, keep_last_turns: int) -> int:
        """Keep the latest `keep_last_turns` turns of each thread (a turn starts at an
        input checkpoint) and delete older checkpoints, except branch points and
        checkpoints with a pending interrupt; parents are relinked to the nearest kept
        ancestor. No thread_ids means every thread that has more turns. Returns how many
        checkpoints were deleted."""
        if keep_last_turns < 1:
            raise ValueError("keep_last_turns must be at least 1: the latest turn is the state")
        if thread_ids is None:

            async def over() -> list[str]:
                async with self.engine.connect() as conn:
                    query = (
                        select(ThreadRow.thread_id)
                        .join(CheckpointRow, ThreadRow.id == CheckpointRow.thread)
                        .where(CheckpointRow.source == "input")
                        .group_by(ThreadRow.thread_id, CheckpointRow.checkpoint_ns)
                        .having(func.count() > keep_last_turns)
                    )
                    return sorted(set((await conn.execute(query)).scalars()))

            thread_ids = await self._retry(over)
        deleted = 0
        for thread_id in thread_ids:
            deleted += await self._retry(lambda t=str(thread_id): self._prune(t, keep_last_turns))
        return deleted

    async def adelete_idle_threads(self, idle_for: timedelta) -> list[str]:
        """Delete (and tombstone) every thread with no checkpoint written for `idle_for`;
        returns their ids. A thread written to meanwhile is spared."""
        cutoff = datetime.now(UTC) - idle_for

        async def idle() -> list[str]:
            async with self.engine.connect() as conn:
                query = select(ThreadRow.thread_id).where(
                    ThreadRow.deleted_at.is_(None), ThreadRow.last_write_at < cutoff
                )
                return list((await conn.execute(query)).scalars())

        deleted = []
        for thread_id in await self._retry(idle):

            async def delete_if_idle(thread_id: str = thread_id) -> bool:
                async with self._writer.begin() as conn:
                    key = await conn.scalar(
                        update(ThreadRow)
                        .where(
                            ThreadRow.thread_id == thread_id,
                            ThreadRow.deleted_at.is_(None),
                            ThreadRow.last_write_at < cutoff,
                        )
                        .values(deleted_at=datetime.now(UTC), put_count=ThreadRow.put_count + 1)
                        .returning(ThreadRow.id)
                    )
                    if key is None:
                        return False
                    await _purge(conn, key)
                    return True

            if await self._retry(delete_if_idle):
                self._cache.pop(thread_id, None)
                deleted.append(thread_id)
        return deleted

    async def _prune(self, thread_id: str, keep_last_turns: int) -> int:
        async with self._writer.begin() as conn:
            key = await conn.scalar(
                update(ThreadRow)
                .where(ThreadRow.thread_id == thread_id, ThreadRow.deleted_at.is_(None))
                .values(put_count=ThreadRow.put_count + 1)
                .returning(ThreadRow.id)
            )
            if key is None:
                return 0
            rows = (
                await conn.execute(
                    select(
                        CheckpointRow.checkpoint_ns,
                        CheckpointRow.checkpoint_id,
                        CheckpointRow.parent_checkpoint_id,
                        CheckpointRow.source,
                        CheckpointRow.stored_values,
                    ).where(CheckpointRow.thread == key)
                )
            ).all()
            interrupted = set(
                (
                    await conn.execute(
                        select(WriteRow.checkpoint_ns, WriteRow.checkpoint_id)
                        .where(WriteRow.thread == key, WriteRow.channel == INTERRUPT)
                        .distinct()
                    )
                ).all()
            )
            doomed, relinked = _prune_plan(rows, interrupted, keep_last_turns)
            if not doomed:
                return 0
            for chunk in _chunks(sorted(doomed)):
                for table in (CheckpointRow, WriteRow):
                    await conn.execute(
                        delete(table).where(
                            table.thread == key,
                            tuple_(table.checkpoint_ns, table.checkpoint_id).in_(chunk),
                        )
                    )
            for (ns, checkpoint_id), parent_id in relinked.items():
                await conn.execute(
                    update(CheckpointRow)
                    .where(
                        CheckpointRow.thread == key,
                        CheckpointRow.checkpoint_ns == ns,
                        CheckpointRow.checkpoint_id == checkpoint_id,
                    )
                    .values(parent_checkpoint_id=parent_id)
                )
            kept = [r for r in rows if (r.checkpoint_ns, r.checkpoint_id) not in doomed]
            await _collect_garbage(conn, key, kept)
            return len(doomed)

    # Helpers of the write path.

    async def _claim(self, conn: AsyncConnection, thread_id: str, *, bump: bool) -> tuple[int, int]:
        """Lock the thread's row for this transaction (creating it on first write) and
        return its key and put_count; refuse a deleted thread."""
        now = datetime.now(UTC)
        upsert = self._insert(ThreadRow).values(
            thread_id=thread_id, put_count=int(bump), last_write_at=now
        )
        row = (
            await conn.execute(
                upsert.on_conflict_do_update(
                    index_elements=["thread_id"],
                    set_={"last_write_at": now, "put_count": ThreadRow.put_count + int(bump)},
                ).returning(ThreadRow.id, ThreadRow.put_count, ThreadRow.deleted_at)
            )
        ).one()
        if row.deleted_at is not None:
            raise ThreadDeletedError(thread_id)
        return row.id, row.put_count

    async def _share(self, conn: AsyncConnection, thread_id: str) -> int:
        """Like `_claim` without changing the row: writers of pending writes only have to
        exclude a concurrent delete, not each other."""
        row = (
            await conn.execute(
                select(ThreadRow.id, ThreadRow.deleted_at)
                .where(ThreadRow.thread_id == thread_id)
                .with_for_update(read=True)
            )
        ).first()
        if row is None:
            key, _ = await self._claim(conn, thread_id, bump=False)
            return key
        if row.deleted_at is not None:
            raise ThreadDeletedError(thread_id)
        return row.id

    def _current_cache(self, thread_id: str, key: int, put_count: int) -> _ThreadCache | None:
        """The cached thread if no put happened since the cache was last brought up to date
        (this put made put_count exactly one more), else None."""
        cache = self._cache.get(thread_id)
        if cache is None or cache.key != key or cache.put_count != put_count - 1:
            return None
        return cache

    async def _parent(
        self,
        conn: AsyncConnection,
        cache: _ThreadCache | None,
        key: int,
        ns: str,
        parent_id: str | None,
    ) -> _Known | None:
        if parent_id is None:
            return None
        known = cache.known.get(ns) if cache else None
        if known is not None and known.checkpoint_id == parent_id:
            return known
        row = (
            await conn.execute(
                select(
                    CheckpointRow.channel_versions,
                    CheckpointRow.inline_values,
                    CheckpointRow.stored_values,
                ).where(
                    CheckpointRow.thread == key,
                    CheckpointRow.checkpoint_ns == ns,
                    CheckpointRow.checkpoint_id == parent_id,
                )
            )
        ).first()
        if row is None:  # the parent is gone (pruned): store every value the child carries
            return None
        return _Known(
            parent_id,
            row.channel_versions,
            self._inline(row.inline_values),
            row.stored_values or {},
        )

    def _inline(self, data: bytes | None) -> dict[str, bytes]:
        dumps = self.serializer.dumps
        return {c: dumps(v) for c, v in self.serializer.loads(data).items()} if data else {}

    async def _plan(
        self,
        conn: AsyncConnection,
        cache: _ThreadCache | None,
        key: int,
        ns: str,
        checkpoint: Checkpoint,
        new_versions: dict[str, Version],
        parent: _Known | None,
    ) -> _Plan:
        """Sort each channel's value: shared with the parent when its version did not
        change, else inline, a blob, or new items appended to the channel's log."""
        versions = checkpoint["channel_versions"]
        values = checkpoint["channel_values"]
        dumps = self.serializer.dumps
        plan = _Plan(_Known(checkpoint["id"], versions, {}, {}))
        known = plan.known
        for channel, version in versions.items():
            if (
                parent
                and channel not in new_versions
                and parent.channel_versions.get(channel) == version
            ):
                if channel in parent.inline:
                    known.inline[channel] = parent.inline[channel]
                elif channel in parent.stored:
                    known.stored[channel] = parent.stored[channel]
                    if channel in parent.elements:
                        known.elements[channel] = parent.elements[channel]
                continue
            if channel not in values:
                continue  # emptied: no value
            value = values[channel]
            previous = parent.stored.get(channel) if parent else None
            if type(value) is list and (
                isinstance(previous, list) or _size(value, dumps) > INLINE_MAX
            ):
                segments = previous if isinstance(previous, list) else []
                elements = parent.elements.get(channel) if parent else None
                await self._append(conn, cache, key, ns, channel, value, segments, elements, plan)
                continue
            data = dumps(value)
            if len(data) <= INLINE_MAX:
                known.inline[channel] = data
            else:
                known.stored[channel] = str(version)
                plan.blobs.append({"channel": channel, "version": str(version), "data": data})
        return plan

    async def _append(
        self,
        conn: AsyncConnection,
        cache: _ThreadCache | None,
        key: int,
        ns: str,
        channel: str,
        value: list[Any],
        segments: Segments,
        elements: list[Any] | None,
        plan: _Plan,
    ) -> None:
        """Store a list version as the longest prefix shared with the parent's version plus
        the new tail appended to the log: O(new elements) for a growing chat."""
        dumps = self.serializer.dumps
        parent_len = sum(b - a for a, b in segments)
        common = min(len(value), parent_len)
        same = 0
        if elements is not None:
            while same < common and value[same] is elements[same]:
                same += 1
        encoded: dict[int, bytes] = {}
        if same < common:  # identity ran out: compare the stored bytes from there on
            stored = await self._item_data(conn, key, ns, channel, segments, same)
            for data in stored:
                encoded[same] = dumps(value[same])
                if encoded[same] != data:
                    break
                same += 1
                if same == common:
                    break
        kept = _truncate(segments, same)
        tail = range(same, len(value))
        if tail:
            log_key = (ns, channel)
            end = plan.log_ends.get(log_key)
            if end is None:
                end = cache.log_ends.get(log_key) if cache else None
            if end is None:
                last = await conn.scalar(
                    select(func.max(ItemRow.seq)).where(
                        ItemRow.thread == key,
                        ItemRow.checkpoint_ns == ns,
                        ItemRow.channel == channel,
                    )
                )
                end = -1 if last is None else last
                end += 1
            kept = _extend(kept, end, len(tail))
            if len(kept) > MAX_SEGMENTS:  # too fragmented to read fast: write it out whole
                tail, kept = range(len(value)), [[end, end + len(value)]]
            plan.items.extend(
                {"channel": channel, "seq": end + n, "data": encoded.get(i) or dumps(value[i])}
                for n, i in enumerate(tail)
            )
            plan.log_ends[log_key] = end + len(tail)
        plan.known.stored[channel] = kept
        plan.known.elements[channel] = list(value)

    async def _item_data(
        self, conn: AsyncConnection, key: int, ns: str, channel: str, segments: Segments, skip: int
    ) -> list[bytes]:
        """The stored bytes of a list version's elements from position `skip` on."""
        wanted = _drop(segments, skip)
        items = await self._fetch_items(conn, {(key, ns, channel): wanted} if wanted else {})
        log = items.get((key, ns, channel), {})
        return [log[seq] for a, b in wanted for seq in range(a, b)]

    async def _insert_values(
        self, conn: AsyncConnection, key: int, ns: str, checkpoint_id: str, plan: _Plan
    ) -> dict[str, str | Segments]:
        """Insert the plan's items and blobs; returns the row's `stored_values`.

        A blob key is the channel version, which a fork can reuse for a different value
        (versions count up from the parent on every branch). Such a collision is stored
        under a key made unique by the checkpoint id, and the row points there."""
        stored = dict(plan.known.stored)
        if plan.items:
            await conn.execute(
                self._insert(ItemRow),
                [{**r, "thread": key, "checkpoint_ns": ns} for r in plan.items],
            )
        if plan.blobs:
            rows = [{**r, "thread": key, "checkpoint_ns": ns} for r in plan.blobs]
            inserted = set(
                (
                    await conn.execute(
                        self._insert(BlobRow).on_conflict_do_nothing().returning(BlobRow.channel),
                        rows,
                    )
                ).scalars()
            )
            collided = [
                {**r, "version": f"{r['version']}#{checkpoint_id}"}
                for r in rows
                if r["channel"] not in inserted
            ]
            if collided:
                upsert = self._insert(BlobRow)
                await conn.execute(
                    upsert.on_conflict_do_update(
                        index_elements=["thread", "checkpoint_ns", "channel", "version"],
                        set_={"data": upsert.excluded.data},
                    ),
                    collided,
                )
                for r in collided:
                    stored[r["channel"]] = r["version"]
        plan.known.stored = stored
        return stored

    def _split_metadata(self, metadata: CheckpointMetadata) -> tuple[dict[str, Any], Any]:
        """The metadata keys that have columns, and the rest as a JSON tree (None if empty)."""
        columns: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, value in metadata.items():
            if type(value) is _COLUMN_KEYS.get(key):
                columns[key] = value
            else:
                rest[key] = value
        return columns, json.loads(self.serializer.dumps(rest)) if rest else None

    # The cache.

    def _remember_put(self, thread_id: str, key: int, put_count: int, ns: str, plan: _Plan) -> None:
        cache = self._current_cache(thread_id, key, put_count)
        if cache is None:
            cache = _ThreadCache(key, put_count, {}, {})
        cache.put_count = put_count
        cache.known[ns] = plan.known
        cache.log_ends.update(plan.log_ends)
        self._store_cache(thread_id, cache)

    def _remember_read(self, row: Any, loaded: CheckpointTuple) -> None:
        """Keep what a read returned, so that the put of its child (the next step of the
        run that loaded it) needs no read and finds shared elements by identity."""
        cache = self._cache.get(row.thread_id)
        if cache is not None and cache.key == row.thread and cache.put_count > row.put_count:
            return  # an older snapshot than what the cache knows
        if cache is None or cache.key != row.thread or cache.put_count != row.put_count:
            cache = _ThreadCache(row.thread, row.put_count, {}, {})
        values = loaded.checkpoint["channel_values"]
        stored = row.stored_values or {}
        cache.known[row.checkpoint_ns] = _Known(
            row.checkpoint_id,
            row.channel_versions,
            self._inline(row.inline_values),
            stored,
            {c: list(values[c]) for c, ref in stored.items() if not isinstance(ref, str)},
        )
        self._store_cache(row.thread_id, cache)

    def _store_cache(self, thread_id: str, cache: _ThreadCache) -> None:
        self._cache[thread_id] = cache
        self._cache.move_to_end(thread_id)
        while len(self._cache) > self._cache_threads:
            self._cache.popitem(last=False)

    async def _retry(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run `operation` (one whole transaction) again after a transient database error,
        with backoff, for up to `retry_for` seconds."""
        deadline = time.monotonic() + self._retry_for
        delay = 0.05
        while True:
            try:
                return await operation()
            except DBAPIError as exc:
                if not self._is_transient(exc) or time.monotonic() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _is_transient(self, exc: DBAPIError) -> bool:
        if exc.connection_invalidated:
            return True
        sqlstate = getattr(exc.orig, "sqlstate", None)
        if sqlstate:
            return str(sqlstate).startswith(_TRANSIENT_SQLSTATES)
        # No SQLSTATE: the server was not reached at all (refused, reset, starting up). On
        # SQLite these errors are local and final (the busy timeout already waited).
        return self._dialect != "sqlite" and isinstance(exc, OperationalError | InterfaceError)


# Segment arithmetic. Segments are [start, end) ranges into an item log, in list order.


def _truncate(segments: Segments, length: int) -> Segments:
    """The segments of the first `length` elements."""
    kept: Segments = []
    for a, b in segments:
        if length <= 0:
            break
        kept.append([a, min(b, a + length)])
        length -= b - a
    return kept


def _drop(segments: Segments, count: int) -> Segments:
    """The segments after the first `count` elements."""
    rest: Segments = []
    for a, b in segments:
        if count >= b - a:
            count -= b - a
            continue
        rest.append([a + count, b])
        count = 0
    return rest


def _extend(segments: Segments, start: int, count: int) -> Segments:
    """Append `count` log entries from `start`, merging with a range that ends there."""
    if segments and segments[-1][1] == start:
        return [*segments[:-1], [segments[-1][0], start + count]]
    return [*segments, [start, start + count]]


def _shift(segments: Segments, offset: int) -> Segments:
    return [[a + offset, b + offset] for a, b in segments]


def _merge(spans: list[list[int]]) -> Segments:
    """Overlapping or touching ranges merged, so one log is read with few conditions."""
    merged: Segments = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def _in_ranges(column: Any, ranges: Segments) -> ColumnElement[bool]:
    return or_(*(column.between(a, b - 1) for a, b in ranges))


# Serialized values are JSON: a list is its elements' encodings joined by commas, and a
# dict of str keys its keys and value encodings, which lets stored parts be reassembled.


def _join(parts: Iterable[bytes]) -> bytes:
    return b"[" + b",".join(parts) + b"]"


def _join_object(values: dict[str, bytes]) -> bytes | None:
    if not values:
        return None
    return b"{" + b",".join(json.dumps(c).encode() + b":" + v for c, v in values.items()) + b"}"


def _size(value: list[Any], dumps: Callable[[Any], bytes]) -> int:
    return len(dumps(value))


def _literal(value: int) -> Any:
    from sqlalchemy import literal

    return literal(value, ThreadRow.id.type)


def _chunks(items: Sequence[T]) -> Iterable[Sequence[T]]:
    return (items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK))


async def _purge(conn: AsyncConnection, key: int) -> None:
    for table in (CheckpointRow, BlobRow, ItemRow, WriteRow):
        await conn.execute(delete(table).where(table.thread == key))


def _prune_plan(
    rows: Sequence[Any], interrupted: set[tuple[str, str]], keep_last_turns: int
) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str | None]]:
    """Which checkpoints to delete, and the new parent of each kept one whose parent goes."""
    doomed: set[tuple[str, str]] = set()
    by_ns: dict[str, list[Any]] = {}
    for row in rows:
        by_ns.setdefault(row.checkpoint_ns, []).append(row)
    parents: dict[tuple[str, str], str | None] = {}
    for ns, ns_rows in by_ns.items():
        inputs = sorted((r.checkpoint_id for r in ns_rows if r.source == "input"), reverse=True)
        if len(inputs) <= keep_last_turns:
            continue
        cutoff = inputs[keep_last_turns - 1]
        children = Counter(r.parent_checkpoint_id for r in ns_rows)
        for r in ns_rows:
            parents[(ns, r.checkpoint_id)] = r.parent_checkpoint_id
            if (
                r.checkpoint_id < cutoff
                and children[r.checkpoint_id] < 2
                and (ns, r.checkpoint_id) not in interrupted
            ):
                doomed.add((ns, r.checkpoint_id))
    relinked: dict[tuple[str, str], str | None] = {}
    for (ns, checkpoint_id), parent_id in parents.items():
        if (ns, checkpoint_id) in doomed or (ns, parent_id) not in doomed:
            continue
        while parent_id is not None and (ns, parent_id) in doomed:
            parent_id = parents.get((ns, parent_id))
        relinked[(ns, checkpoint_id)] = parent_id
    return doomed, relinked


async def _collect_garbage(conn: AsyncConnection, key: int, kept: Sequence[Any]) -> None:
    """Delete the blobs and items that no remaining checkpoint of the thread refers to."""
    blobs: set[tuple[str, str, str]] = set()
    logs: dict[tuple[str, str], list[list[int]]] = {}
    for row in kept:
        for channel, ref in (row.stored_values or {}).items():
            if isinstance(ref, str):
                blobs.add((row.checkpoint_ns, channel, ref))
            else:
                logs.setdefault((row.checkpoint_ns, channel), []).extend(ref)
    stored = await conn.execute(
        select(BlobRow.checkpoint_ns, BlobRow.channel, BlobRow.version).where(BlobRow.thread == key)
    )
    unused = [tuple(r) for r in stored if tuple(r) not in blobs]
    for chunk in _chunks(unused):
        await conn.execute(
            delete(BlobRow).where(
                BlobRow.thread == key,
                tuple_(BlobRow.checkpoint_ns, BlobRow.channel, BlobRow.version).in_(chunk),
            )
        )
    existing = await conn.execute(
        select(ItemRow.checkpoint_ns, ItemRow.channel).where(ItemRow.thread == key).distinct()
    )
    for ns, channel in existing.all():
        unreferenced = and_(
            ItemRow.thread == key, ItemRow.checkpoint_ns == ns, ItemRow.channel == channel
        )
        spans = logs.get((ns, channel))
        if spans:
            unreferenced = and_(unreferenced, ~_in_ranges(ItemRow.seq, _merge(spans)))
        await conn.execute(delete(ItemRow).where(unreferenced))
