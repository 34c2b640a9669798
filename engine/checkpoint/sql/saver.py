"""The SQL saver: checkpoints on SQLAlchemy 2 (async), one code path for SQLite and PostgreSQL.

Storage grows with what changed (docs/storage.md): small values live in the checkpoint
row, big values in `checkpoint_blobs` once per version, and list values (the messages of
a chat) in an append-only item log that each version addresses by a few ranges, so a turn
that adds two messages stores two items and not the whole conversation again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    exists,
    func,
    literal,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
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
    PendingWrite,
    PutCheckpoint,
    PutWrites,
    SaveOp,
    Version,
    VersionInfo,
    checkpoint_config,
    matches_filter,
    thread_key,
)
from engine.checkpoint.serde import JsonSerializer, default_serializer
from engine.checkpoint.sql.logs import (
    MAX_SEGMENTS,
    SEP,
    UNPREPARED,
    Chunks,
    ItemCache,
    Segments,
    array,
    extend,
    merge,
    missing,
    parts,
    pick,
    place,
    rows,
    truncate,
    unprepared,
)
from engine.checkpoint.sql.models import (
    blob_table,
    checkpoint_table,
    item_table,
    thread_table,
    write_table,
)
from engine.checkpoint.sql.url import create_engine, write_transaction

__all__ = ["SQLSaver", "ThreadDeletedError"]

T = TypeVar("T")
# Called in each write transaction before its saves, with them. It may raise to refuse
# them (their writer lost the right to write: another process took its run over), and
# may lock what decides that right until the commit, so the check cannot go stale.
Fence = Callable[[AsyncConnection, Sequence[SaveOp]], Awaitable[None]]
LogKey = tuple[int, str, str]  # (thread, checkpoint_ns, channel)

INLINE_MAX = 128  # characters of JSON up to which a value is kept in the checkpoint row
PAGE_SIZE = 64  # checkpoints per query when listing
_CHUNK = 500  # keys per IN list or insert batch, under every driver's parameter limit
# Metadata keys kept in their own typed columns instead of the JSON.
_COLUMN_KEYS: dict[str, type] = {"source": str, "step": int, "run_id": str}
_ROW_KEY = ("thread", "checkpoint_ns", "checkpoint_id")
# What a change other than a put does to its thread's row: every cache of it goes stale.
_CHANGED = {"put_count": thread_table.c.put_count + 1, "epoch": thread_table.c.epoch + 1}
# SQLSTATE classes worth another attempt: connection lost, transaction rolled back by the
# server (deadlock, serialization), out of resources, server shutting down or starting.
_TRANSIENT_SQLSTATES = ("08", "40", "53", "57P")


class ThreadDeletedError(LookupError):
    """A write to a deleted thread: a run still finishing must not bring it back."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} was deleted; its checkpoints cannot be written")
        self.thread_id = thread_id


@dataclass(slots=True)
class _Known:
    """Where one checkpoint's values live: all that a child needs to share them."""

    checkpoint_id: str
    channel_versions: dict[str, Version]
    inline: dict[str, str]  # channel -> serialized small value
    stored: dict[str, str | Segments]  # channel -> blob version key, or item-log segments
    # Item-log channel -> the element objects of that version (handed to aput, or returned
    # by aget_tuple), so the next put finds the unchanged prefix by identity, not by text.
    elements: dict[str, list[Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _ThreadCache:
    """What this saver knows of a thread as of `put_count`; trusted only while the
    thread's put_count proves that nobody changed the thread since."""

    key: int
    put_count: int
    known: dict[str, _Known]  # checkpoint_ns -> the last checkpoint put or read
    log_ends: dict[tuple[str, str], int]  # (checkpoint_ns, channel) -> next free seq


@dataclass(slots=True)
class _Plan:
    """A checkpoint's values sorted into its row, new blobs and new items."""

    known: _Known
    blobs: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    log_ends: dict[tuple[str, str], int] = field(default_factory=dict)


class _Vanished(Exception):
    """A read found its checkpoint's rows deleted meanwhile (rollback, prune): read again."""


# One save inside a batch's transaction; what it returns runs after the commit.
@dataclass(slots=True)
class _Txn:
    """What a write transaction did so far, for its later saves: the threads whose row
    it locked (thread id -> key), and what its puts left each thread as (the shared cache
    learns that only at the commit). `puts` counts the puts it holds per thread: the
    first save of such a thread claims its row once for all of them."""

    puts: Counter[str] = field(default_factory=Counter)
    locked: dict[str, int] = field(default_factory=dict)
    claims: dict[str, _Holding] = field(default_factory=dict)
    caches: dict[str, _ThreadCache] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Holding:
    """A thread row as one put sees it: its key, the put_count that put made, its epoch."""

    id: int
    put_count: int
    epoch: int


# A save inside a write transaction; it returns what to remember once the transaction
# commits.
_Step = Callable[[AsyncConnection, _Txn], Awaitable[Callable[[], None] | None]]


class SQLSaver(BaseCheckpointSaver):
    """Checkpoints in the tables of the Alembic migrations (`threadline migrate`).

    Many writers can work at once: a write transaction locks only its own thread's row
    in `checkpoint_threads`. Transient database errors (a dropped connection, a server
    restart) are retried for up to `retry_for` seconds; every write is an upsert, so a
    retried commit whose first attempt did land stores nothing twice.

    Two per-process caches, both checked against the thread row on every use: where the
    values of the last `cache_threads` threads' latest checkpoints live (so a put needs
    no read), and up to `cache_text` characters of item rows (so a read fetches only new
    rows).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        serializer: JsonSerializer | None = None,
        cache_threads: int = 256,
        cache_text: int = 64 * 1024 * 1024,
        retry_for: float = 15.0,
        owns_engine: bool = False,
        fence: Fence | None = None,
    ) -> None:
        self.engine = engine
        self.fence = fence
        self.serializer = serializer or default_serializer
        # Reads need no transaction (each statement sees committed data), which saves the
        # BEGIN and ROLLBACK round trips on every read.
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._dialect = engine.dialect.name
        self._insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        # The write path's statements, built once: building one (and its cache key) costs
        # 0.1-0.25 ms, several times per checkpoint.
        insert = self._insert
        now, bump = bindparam("now"), bindparam("bump")
        self._claim_thread = (
            insert(thread_table)
            .values(thread_id=bindparam("thread_id"), put_count=bump, epoch=0, last_write_at=now)
            .on_conflict_do_update(
                index_elements=["thread_id"],
                set_={"last_write_at": now, "put_count": thread_table.c.put_count + bump},
            )
            .returning(
                thread_table.c.id,
                thread_table.c.put_count,
                thread_table.c.epoch,
                thread_table.c.deleted_at,
            )
        )
        self._replace = {
            table.name: _on_conflict_replace(insert(table), table)
            for table in (checkpoint_table, blob_table, write_table)
        }
        self._add_blobs = (
            insert(blob_table).on_conflict_do_nothing().returning(blob_table.c.channel)
        )
        self._add_writes = insert(write_table).on_conflict_do_nothing()
        self._add_items = item_table.insert()
        self._cache: OrderedDict[str, _ThreadCache] = OrderedDict()
        self._cache_threads = cache_threads
        self._items = ItemCache(cache_text)
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
        params = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
        query = _BY_ID if checkpoint_id else _LATEST
        rows, loaded = await self._retry(lambda: self._read(query, lambda rows: rows, params))
        if not rows:
            return None
        self._remember_read(rows[0], loaded[0])
        return loaded[0]

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

        The filter runs in SQL on the metadata columns; values SQL cannot compare exactly
        (lists, objects) are checked on the row's metadata, never by loading state.
        """
        conf = (config or {}).get("configurable", {})
        c = checkpoint_table.c
        thread_id = None if conf.get("thread_id") is None else str(conf["thread_id"])
        query = _rows(None if thread_id is None else literal(thread_id))
        if conf.get("checkpoint_ns") is not None:
            query = query.where(c.checkpoint_ns == conf["checkpoint_ns"])
        if conf.get("checkpoint_id"):
            query = query.where(c.checkpoint_id == conf["checkpoint_id"])
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        if before_id:
            query = query.where(c.checkpoint_id < before_id)
        conditions, exact = self._filter_conditions(filter or {})
        order = [c.checkpoint_id, thread_table.c.thread_id, c.checkpoint_ns]
        if thread_id is not None:
            del order[1]
        query = query.where(*conditions).order_by(*(column.desc() for column in order))

        def matching(rows: list[Row[Any]]) -> list[Row[Any]]:
            return [r for r in rows if not filter or matches_filter(self._metadata(r), filter)]

        remaining = limit
        cursor: tuple[str, ...] | None = None
        while remaining is None or remaining > 0:
            size = PAGE_SIZE if remaining is None or not exact else min(PAGE_SIZE, remaining)
            page = (query if cursor is None else query.where(tuple_(*order) < cursor)).limit(size)
            rows, loaded = await self._retry(
                lambda page=page, left=remaining: self._read(
                    page, lambda found, left=left: matching(found)[:left]
                )
            )
            for item in loaded:
                yield item
            if remaining is not None:
                remaining -= len(loaded)
            if len(rows) < size:
                return
            cursor = tuple(getattr(rows[-1], column.name) for column in order)

    async def _read(
        self,
        query: Select[Any],
        pick: Callable[[list[Row[Any]]], list[Row[Any]]],
        params: dict[str, Any] | None = None,
    ) -> tuple[list[Row[Any]], list[CheckpointTuple]]:
        """The rows of `query`, and the checkpoints of those `pick` chooses. Rows deleted
        between the two statements (by a rollback or prune) make it read again."""
        async with self._reader.connect() as conn:
            for _ in range(3):
                rows = list((await conn.execute(query, params)).all())
                with contextlib.suppress(_Vanished):
                    return rows, await self._load(conn, pick(rows))
        raise RuntimeError("Stored values of the checkpoints being read are missing")

    async def _load(self, conn: AsyncConnection, rows: Sequence[Row[Any]]) -> list[CheckpointTuple]:
        """Whole checkpoints for `rows`: one query per item log, and one for the blobs and
        one for the pending writes where any row has some."""
        spans: dict[LogKey, Segments] = {}
        blob_keys: set[tuple[int, str, str, str]] = set()
        for row in rows:
            for channel, ref in (row.stored_values or {}).items():
                if isinstance(ref, str):
                    blob_keys.add((row.thread, row.checkpoint_ns, channel, ref))
                else:
                    spans.setdefault((row.thread, row.checkpoint_ns, channel), []).extend(ref)
        logs = await self._fetch_chunks(conn, spans, {row.thread: row.epoch for row in rows})
        blob_data: dict[tuple[Any, ...], str] = {}
        blob_columns = (
            blob_table.c.thread,
            blob_table.c.checkpoint_ns,
            blob_table.c.channel,
            blob_table.c.version,
        )
        for chunk in _chunks(sorted(blob_keys)):
            result = await conn.execute(
                select(*blob_columns, blob_table.c.data).where(tuple_(*blob_columns).in_(chunk))
            )
            blob_data.update({tuple(r[:4]): r.data for r in result})
        pending: dict[tuple[Any, ...], list[PendingWrite]] = {}
        write_columns = (
            write_table.c.thread,
            write_table.c.checkpoint_ns,
            write_table.c.checkpoint_id,
        )
        parse = self._parse
        with_writes = {tuple(getattr(r, k) for k in _ROW_KEY) for r in rows if r.has_writes}
        for chunk in _chunks(sorted(with_writes)):
            result = await conn.execute(
                select(
                    *write_columns, write_table.c.task_id, write_table.c.channel, write_table.c.data
                )
                .where(tuple_(*write_columns).in_(chunk))
                .order_by(write_table.c.task_id, write_table.c.idx)
            )
            for r in result:
                pending.setdefault(tuple(r[:3]), []).append((r.task_id, r.channel, parse(r.data)))
        return [self._tuple(row, logs, blob_data, pending) for row in rows]

    def _tuple(
        self,
        row: Row[Any],
        logs: dict[LogKey, Chunks],
        blob_data: dict[tuple[Any, ...], str],
        pending: dict[tuple[Any, ...], list[PendingWrite]],
    ) -> CheckpointTuple:
        parse = self._parse
        inline = parse(row.inline_values) if row.inline_values else {}
        stored = row.stored_values or {}
        thread, ns = row.thread, row.checkpoint_ns
        values: dict[str, Any] = {}
        for channel in row.channel_versions:
            if channel in inline:
                values[channel] = inline[channel]
            elif channel in stored:
                ref = stored[channel]
                try:
                    values[channel] = (
                        parse(blob_data[(thread, ns, channel, ref)])
                        if isinstance(ref, str)
                        else self._list(row, channel, logs[(thread, ns, channel)], ref)
                    )
                except KeyError as gone:  # deleted after the row was read
                    raise _Vanished from gone
        checkpoint: Checkpoint = {
            "v": row.v,
            "id": row.checkpoint_id,
            "ts": row.ts,
            "channel_values": values,
            "channel_versions": row.channel_versions,
            "versions_seen": row.versions_seen,
            "updated_channels": row.updated_channels,
        }
        parent_id = row.parent_checkpoint_id
        return CheckpointTuple(
            config=checkpoint_config(row.thread_id, ns, row.checkpoint_id),
            checkpoint=checkpoint,
            metadata=self._metadata(row),
            parent_config=checkpoint_config(row.thread_id, ns, parent_id) if parent_id else None,
            pending_writes=pending.get((thread, ns, row.checkpoint_id), []),
        )

    def _list(self, row: Row[Any], channel: str, chunks: Chunks, segments: Segments) -> list[Any]:
        """A version of a list channel: the elements its rows' preparation kept are
        rebuilt, the others parsed together (fresh containers for every read)."""
        key = (row.thread, row.epoch, row.checkpoint_ns, channel)
        elements = pick(self._items.elements(*key), segments)
        if len(elements) != sum(b - a for a, b in segments) or UNPREPARED in elements:
            elements = self._prepare(key, chunks, segments)
        texts = [e for e in elements if type(e) is str]
        if len(texts) == len(elements):  # plain JSON values (dicts): parsed all at once
            return self._parse(array(texts))
        parsed = iter(self._parse(array(texts)) if texts else ())
        try:
            return [next(parsed) if type(e) is str else e.build() for e in elements]
        except (TypeError, ValueError):
            # A stored message its class refuses: the serializer says what is wrong.
            return self._parse(array(parts(chunks, segments)))

    def _prepare(
        self, key: tuple[int, int, str, str], chunks: Chunks, segments: Segments
    ) -> list[Any]:
        """The prepared elements of a list version whose rows are not all prepared yet:
        those that are not are prepared now, all in one parse, and kept in the item cache
        by runs of consecutive rows (a chat's rows hold a message or two each)."""
        kept = self._items.elements(*key)
        runs: list[tuple[int, int]] = []  # (first position, elements)
        texts: list[str] = []  # of their elements
        end = -1
        for seq, count, _, data in rows(chunks, unprepared(kept, segments)):
            if seq < len(kept) and kept[seq] is not UNPREPARED:
                continue
            if seq == end:
                runs[-1] = (runs[-1][0], runs[-1][1] + count)
            else:
                runs.append((seq, count))
            end = seq + count
            if count == 1:
                texts.append(data)
            else:
                texts += data.split(SEP)
        fresh = self.serializer.prepare(texts)
        made: list[tuple[int, list[Any]]] = []
        offset = 0
        for start, count in runs:
            made.append((start, fresh[offset : offset + count]))
            offset += count
            self._items.keep_prepared(*key, *made[-1])
        # Put together here: the cache may not have kept them, or have dropped the thread
        # to make room for them (it drops the list of those kept before, never empties it).
        flat = list(kept)
        for start, prepared in made:
            place(flat, start, prepared)
        return pick(flat, segments)

    def _metadata(self, row: Row[Any]) -> CheckpointMetadata:
        metadata = {key: row._mapping[key] for key in _COLUMN_KEYS}
        metadata = {key: value for key, value in metadata.items() if value is not None}
        if row.metadata is not None:
            metadata.update(self._parse(json.dumps(row.metadata)))
        return metadata  # type: ignore[return-value]

    def _filter_conditions(self, filter: dict[str, Any]) -> tuple[list[ColumnElement[bool]], bool]:
        """SQL conditions for `filter`, and whether they are exact; if not, the caller also
        checks each row's metadata and cannot push LIMIT into SQL."""
        conditions: list[ColumnElement[bool]] = []
        exact = True
        for key, value in filter.items():
            kind = _COLUMN_KEYS.get(key)
            if kind is not None and type(value) is kind:
                conditions.append(checkpoint_table.c[key] == value)
                continue
            condition = self._json_condition(key, value)
            if condition is None:
                exact = False
            elif kind is not None and value is None:  # None there means: in neither place
                conditions.append(and_(checkpoint_table.c[key].is_(None), condition))
            else:
                conditions.append(condition)
        return conditions, exact

    def _json_condition(self, key: str, value: Any) -> ColumnElement[bool] | None:
        if type(value) not in (str, int, float, bool, type(None)):
            return None
        if self._dialect == "postgresql":
            document = cast(checkpoint_table.c.metadata, JSONB)
            if value is None:
                return or_(~document.has_key(key), document.contains({key: None}))
            return document.contains({key: value})
        if '"' in key or "\\" in key:  # cannot be written as a SQLite JSON path
            return None
        extracted = func.json_extract(checkpoint_table.c.metadata, f'$."{key}"')
        return extracted.is_(None) if value is None else extracted == value

    # Writes.

    async def aput(
        self,
        config: Config,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, Version],
    ) -> Config:
        await self.abatch([PutCheckpoint(config, checkpoint, metadata, new_versions)])
        thread_id, ns = thread_key(config)
        return checkpoint_config(thread_id, ns, checkpoint["id"])

    async def aput_writes(
        self, config: Config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Ordinary writes keep the first save (a retried save is a no-op); a special
        write (error, interrupt, resume, scheduled) replaces the task's previous one."""
        await self.abatch([PutWrites(config, writes, task_id, task_path)])

    async def abatch(self, ops: Sequence[SaveOp]) -> None:
        """Every save in one transaction (serialized up front, outside it)."""
        steps = [
            self._put_step(op) if isinstance(op, PutCheckpoint) else self._writes_step(op)
            for op in ops
        ]
        steps = [step for step in steps if step is not None]
        if not steps:
            return
        puts = Counter(thread_key(op.config)[0] for op in ops if isinstance(op, PutCheckpoint))

        async def run() -> None:
            done: list[Callable[[], None]] = []
            txn = _Txn(puts)
            async with write_transaction(self.engine) as conn:
                if self.fence is not None:
                    await self.fence(conn, ops)
                for step in steps:
                    remember = await step(conn, txn)
                    if remember is not None:
                        done.append(remember)
            for remember in done:
                remember()

        await self._retry(run)

    def _put_step(self, op: PutCheckpoint) -> _Step:
        thread_id, ns = thread_key(op.config)
        checkpoint, new_versions = op.checkpoint, op.new_versions
        parent_id = op.config["configurable"].get("checkpoint_id")
        columns, rest = self._split_metadata(op.metadata)
        row = {
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": parent_id,
            "v": checkpoint["v"],
            "ts": checkpoint["ts"],
            **{key: columns.get(key) for key in _COLUMN_KEYS},
            "metadata": rest,
            "channel_versions": checkpoint["channel_versions"],
            "versions_seen": checkpoint["versions_seen"],
            "updated_channels": checkpoint.get("updated_channels"),
        }

        async def put(conn: AsyncConnection, txn: _Txn) -> Callable[[], None]:
            thread = await self._hold(conn, txn, thread_id)
            key = thread.id
            cache = self._current_cache(thread_id, key, thread.put_count, txn)
            parent = await self._parent(conn, cache, key, ns, parent_id)
            plan = await self._plan(conn, cache, thread, ns, checkpoint, new_versions, parent)
            base = cache or _ThreadCache(key, thread.put_count, {}, {})
            txn.caches[thread_id] = _ThreadCache(
                key,
                thread.put_count,
                {**base.known, ns: plan.known},
                {**base.log_ends, **plan.log_ends},
            )
            await self._insert_values(conn, key, ns, checkpoint["id"], plan)
            stored = plan.known.stored
            await self._upsert(
                conn,
                checkpoint_table,
                [
                    {
                        **row,
                        "thread": key,
                        "inline_values": _join_object(plan.known.inline),
                        "stored_values": stored or None,
                    }
                ],
            )
            return lambda: self._remember_put(thread_id, thread, ns, plan)

        return put

    def _writes_step(self, op: PutWrites) -> _Step | None:
        thread_id, ns = thread_key(op.config)
        checkpoint_id = op.config["configurable"].get("checkpoint_id")
        if not checkpoint_id:
            raise ValueError("Writes belong to a checkpoint: the config needs a checkpoint_id")
        dump = self._dump
        rows = [
            {
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
                "task_id": op.task_id,
                "idx": SPECIAL_WRITES.get(channel, idx),
                "channel": channel,
                "task_path": op.task_path,
                "data": dump(value),
            }
            for idx, (channel, value) in enumerate(op.writes)
        ]
        if not rows:
            return None

        async def put_writes(conn: AsyncConnection, txn: _Txn) -> None:
            # A put of the transaction holds, or is about to hold, the thread's row.
            key = txn.locked.get(thread_id)
            if key is None and txn.puts[thread_id]:
                key = (await self._hold(conn, txn, thread_id, put=False)).id
            elif key is None:
                key = txn.locked[thread_id] = await self._share(conn, thread_id)
            special = [{**r, "thread": key} for r in rows if r["idx"] < 0]
            ordinary = [{**r, "thread": key} for r in rows if r["idx"] >= 0]
            if special:
                await self._upsert(conn, write_table, special)
            if ordinary:
                await conn.execute(self._add_writes, ordinary)

        return put_writes

    async def alist_versions(self, thread_id: str, checkpoint_ns: str = "") -> list[VersionInfo]:
        """From the checkpoint rows' own columns: no value is read."""
        c, t = checkpoint_table.c, thread_table.c
        query = (
            select(c.checkpoint_id, c.parent_checkpoint_id, c.source, c.run_id, c.ts)
            .join(thread_table, t.id == c.thread)
            .where(
                t.thread_id == str(thread_id),
                t.deleted_at.is_(None),
                c.checkpoint_ns == checkpoint_ns,
            )
        )

        async def read() -> list[VersionInfo]:
            async with self.engine.connect() as conn:
                return [VersionInfo(*row) for row in await conn.execute(query)]

        return await self._retry(read)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread and leave a tombstone, so a
        late write from a run that was still finishing raises ThreadDeletedError instead
        of bringing the thread back."""
        thread_id = str(thread_id)

        async def delete_thread() -> None:
            async with write_transaction(self.engine) as conn:
                now = datetime.now(UTC)
                tombstone = self._insert(thread_table).values(
                    thread_id=thread_id, put_count=1, epoch=1, last_write_at=now, deleted_at=now
                )
                key = await conn.scalar(
                    tombstone.on_conflict_do_update(
                        index_elements=["thread_id"], set_={"deleted_at": now, **_CHANGED}
                    ).returning(thread_table.c.id)
                )
                await _purge(conn, key)

        await self._retry(delete_thread)
        self._cache.pop(thread_id, None)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write to a thread that has no checkpoints, under
        the same ids; metadata that records the source thread id names the target instead.
        Raises ValueError if the target has checkpoints (a copy never merges histories)."""
        source_id, target_id = str(source_thread_id), str(target_thread_id)

        async def copy_thread() -> None:
            async with write_transaction(self.engine) as conn:
                locked = {}
                for thread_id in sorted({source_id, target_id}):  # one lock order: no deadlock
                    locked[thread_id] = await (
                        self._claim(conn, thread_id, bump=1)
                        if thread_id == target_id
                        else self._shared(conn, thread_id)
                    )
                source = locked[source_id]
                if source is not None and source.deleted_at is None:
                    await self._copy(conn, source.id, locked[target_id].id, source_id, target_id)

        await self._retry(copy_thread)
        self._cache.pop(target_id, None)

    async def _copy(
        self, conn: AsyncConnection, source: int, target: int, source_id: str, target_id: str
    ) -> None:
        c = checkpoint_table.c
        if await conn.scalar(select(exists().where(c.thread == target))):
            raise ValueError(f"Thread {target_id!r} has checkpoints: copy into a new thread")
        await conn.execute(update(thread_table).where(thread_table.c.id == target).values(_CHANGED))
        await _purge(conn, target)
        for table in (item_table, blob_table, write_table):
            rows_of_target = select(
                *(literal(target, col.type) if col.name == "thread" else col for col in table.c)
            ).where(table.c.thread == source)
            await conn.execute(table.insert().from_select(list(table.c.keys()), rows_of_target))
        rows = []
        for row in await conn.execute(select(checkpoint_table).where(c.thread == source)):
            metadata = row.metadata
            if isinstance(metadata, dict) and metadata.get("thread_id") == source_id:
                metadata = {**metadata, "thread_id": target_id}
            rows.append({**row._asdict(), "thread": target, "metadata": metadata})
        for chunk in _chunks(rows):
            await conn.execute(checkpoint_table.insert(), list(chunk))

    async def _upsert(self, conn: AsyncConnection, table: Any, rows: list[dict[str, Any]]) -> None:
        """Insert rows, replacing those with the same primary key."""
        for chunk in _chunks(rows):
            await conn.execute(self._replace[table.name], list(chunk))

    # Pruning.

    async def aprune(self, thread_ids: Iterable[str] | None = None, *, keep_last_turns: int) -> int:
        """Keep the latest `keep_last_turns` turns of each thread (a turn starts at an input
        checkpoint) and delete the older checkpoints except branch points, branch tips
        (the last state of an abandoned branch) and checkpoints with an interrupt, so every
        branch stays visible and pruning again changes nothing. A kept checkpoint whose
        parent goes is linked to its nearest kept ancestor; values no kept checkpoint uses
        are deleted. No thread_ids means every thread with more turns. Returns how many
        checkpoints were deleted."""
        if keep_last_turns < 1:
            raise ValueError("keep_last_turns must be at least 1: the latest turn is the state")
        if thread_ids is None:
            query = (
                select(thread_table.c.thread_id)
                .join(checkpoint_table, thread_table.c.id == checkpoint_table.c.thread)
                .where(checkpoint_table.c.source == "input")
                .group_by(thread_table.c.thread_id, checkpoint_table.c.checkpoint_ns)
                .having(func.count() > keep_last_turns)
            )
            thread_ids = sorted(set(await self._retry(lambda: self._scalars(query))))
        deleted = 0
        for thread_id in thread_ids:
            deleted += await self._retry(lambda t=str(thread_id): self._prune(t, keep_last_turns))
            self._cache.pop(str(thread_id), None)
        return deleted

    async def adelete_idle_threads(self, idle_for: timedelta) -> list[str]:
        """Delete (and tombstone) every thread with no checkpoint written for `idle_for`;
        returns their ids. A thread written to meanwhile is spared."""
        cutoff = datetime.now(UTC) - idle_for
        idle = and_(thread_table.c.deleted_at.is_(None), thread_table.c.last_write_at < cutoff)
        candidates = await self._retry(
            lambda: self._scalars(select(thread_table.c.thread_id).where(idle))
        )
        deleted = []
        for thread_id in candidates:

            async def delete_if_idle(thread_id: str = thread_id) -> bool:
                async with write_transaction(self.engine) as conn:
                    key = await conn.scalar(
                        update(thread_table)
                        .where(thread_table.c.thread_id == thread_id, idle)
                        .values(deleted_at=datetime.now(UTC), **_CHANGED)
                        .returning(thread_table.c.id)
                    )
                    if key is not None:
                        await _purge(conn, key)
                    return key is not None

            if await self._retry(delete_if_idle):
                self._cache.pop(thread_id, None)
                deleted.append(thread_id)
        return deleted

    async def _scalars(self, query: Select[Any]) -> list[Any]:
        async with self._reader.connect() as conn:
            return list((await conn.execute(query)).scalars())

    async def _prune(self, thread_id: str, keep_last_turns: int) -> int:
        c = checkpoint_table.c
        async with write_transaction(self.engine) as conn:
            key = await _change(conn, thread_id)
            if key is None:
                return 0
            rows = await conn.execute(
                select(c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.source).where(
                    c.thread == key
                )
            )
            interrupted = await conn.execute(
                select(write_table.c.checkpoint_ns, write_table.c.checkpoint_id)
                .where(write_table.c.thread == key, write_table.c.channel == INTERRUPT)
                .distinct()
            )
            doomed, relinked = _prune_plan(
                rows.all(), {tuple(r) for r in interrupted}, keep_last_turns
            )
            for (ns, checkpoint_id), parent_id in relinked.items():
                await conn.execute(
                    update(checkpoint_table)
                    .where(c.thread == key, c.checkpoint_ns == ns, c.checkpoint_id == checkpoint_id)
                    .values(parent_checkpoint_id=parent_id)
                )
            await _delete_checkpoints(conn, key, doomed)
            return len(doomed)

    async def adelete_run(self, thread_id: str, run_id: str) -> None:
        """Remove the checkpoints whose metadata names `run_id`, with their pending writes
        and the values only they used: what a rolled-back run wrote. Writes it saved on a
        checkpoint it did not create (a resume's answers) stay."""
        thread_id = str(thread_id)
        c = checkpoint_table.c

        async def delete_run() -> None:
            async with write_transaction(self.engine) as conn:
                key = await _change(conn, thread_id)
                if key is not None:
                    doomed = await conn.execute(
                        select(c.checkpoint_ns, c.checkpoint_id).where(
                            c.thread == key, c.run_id == run_id
                        )
                    )
                    await _delete_checkpoints(conn, key, {tuple(r) for r in doomed})

        await self._retry(delete_run)
        self._cache.pop(thread_id, None)

    async def arevive_thread(self, thread_id: str) -> None:
        """Let a deleted thread's id be written again, for a client that deliberately
        creates a new thread under the old id. (Until then its tombstone refuses writes,
        so a run of the deleted thread that is still finishing cannot bring it back.)"""
        thread_id = str(thread_id)

        async def revive() -> None:
            async with write_transaction(self.engine) as conn:
                await conn.execute(
                    update(thread_table)
                    .where(thread_table.c.thread_id == thread_id)
                    .values(deleted_at=None, **_CHANGED)
                )

        await self._retry(revive)

    # The write path.

    async def _claim(self, conn: AsyncConnection, thread_id: str, *, bump: int) -> Row[Any]:
        """Lock the thread's row for this transaction (creating it on the first write) and
        return its id (the thread's key), put_count and epoch; refuse a deleted thread."""
        params = {"thread_id": thread_id, "bump": bump, "now": datetime.now(UTC)}
        row = (await conn.execute(self._claim_thread, params)).one()
        if row.deleted_at is not None:
            raise ThreadDeletedError(thread_id)
        return row

    async def _hold(
        self, conn: AsyncConnection, txn: _Txn, thread_id: str, *, put: bool = True
    ) -> _Holding:
        """The thread's row as the transaction's next put of it sees it. Its first save
        claims the row for every put of the thread in the transaction at once, and each
        put then counts one up from where the row was."""
        claim = txn.claims.get(thread_id)
        if claim is None:
            puts = txn.puts[thread_id]
            row = await self._claim(conn, thread_id, bump=puts)
            txn.locked[thread_id] = row.id
            claim = _Holding(row.id, row.put_count - puts, row.epoch)
        if put:
            claim = _Holding(claim.id, claim.put_count + 1, claim.epoch)
        txn.claims[thread_id] = claim
        return claim

    async def _shared(self, conn: AsyncConnection, thread_id: str) -> Row[Any] | None:
        """The thread's row (id, deleted_at), locked against a concurrent delete but not
        against other writers that only share it; None if the thread was never written."""
        return (
            await conn.execute(
                select(thread_table.c.id, thread_table.c.deleted_at)
                .where(thread_table.c.thread_id == thread_id)
                .with_for_update(read=True)
            )
        ).first()

    async def _share(self, conn: AsyncConnection, thread_id: str) -> int:
        """Like `_claim` without changing the row: pending writes only have to exclude a
        concurrent delete, not each other (parallel tasks of one step save at once)."""
        row = await self._shared(conn, thread_id)
        if row is None:
            return (await self._claim(conn, thread_id, bump=0)).id
        if row.deleted_at is not None:
            raise ThreadDeletedError(thread_id)
        return row.id

    def _current_cache(
        self, thread_id: str, key: int, put_count: int, txn: _Txn | None = None
    ) -> _ThreadCache | None:
        """The cached thread if no put happened since the cache was last brought up to date
        (this put made put_count exactly one more), else None. An earlier put of the same
        transaction counts, though the shared cache learns of it only at the commit."""
        cache = txn.caches.get(thread_id) if txn is not None else None
        if cache is None or cache.put_count != put_count - 1:
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
        c = checkpoint_table.c
        row = (
            await conn.execute(
                select(c.channel_versions, c.inline_values, c.stored_values).where(
                    c.thread == key, c.checkpoint_ns == ns, c.checkpoint_id == parent_id
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

    async def _fetch_chunks(
        self, conn: AsyncConnection, spans: dict[LogKey, Segments], epochs: dict[int, int]
    ) -> dict[LogKey, Chunks]:
        """The item rows of each log that start within its `spans`, read from the database
        only where the item cache lacks them. (Ranges always start where a row starts:
        appends start new rows, and versions only ever cut ranges short.)"""
        logs: dict[LogKey, Chunks] = {}
        c = item_table.c
        for (thread, ns, channel), ranges in spans.items():
            cached = self._items.get(thread, epochs[thread], ns, channel)
            gaps = missing(cached, merge(ranges))
            logs[(thread, ns, channel)] = found = dict(cached)
            if gaps:
                result = await conn.execute(
                    select(c.seq, c.count, c.data).where(
                        c.thread == thread,
                        c.checkpoint_ns == ns,
                        c.channel == channel,
                        _in_ranges(c.seq, gaps),
                    )
                )  # in no order: rows are looked up by seq (a sort would copy them all)
                fetched = {seq: (count, data) for seq, count, data in result}
                self._items.add(thread, epochs[thread], ns, channel, fetched)
                found.update(fetched)
        return logs

    def _inline(self, data: str | None) -> dict[str, str]:
        return {c: self._dump(v) for c, v in self._parse(data).items()} if data else {}

    def _dump(self, value: Any) -> str:
        return self.serializer.dumps(value).decode()

    def _parse(self, data: str) -> Any:
        return self.serializer.loads(data)

    async def _plan(
        self,
        conn: AsyncConnection,
        cache: _ThreadCache | None,
        thread: _Holding,
        ns: str,
        checkpoint: Checkpoint,
        new_versions: dict[str, Version],
        parent: _Known | None,
    ) -> _Plan:
        """Sort each channel: shared with the parent when its version did not change, else
        inline, a blob, or new items appended to the channel's log."""
        values = checkpoint["channel_values"]
        dump = self._dump
        plan = _Plan(_Known(checkpoint["id"], checkpoint["channel_versions"], {}, {}))
        known = plan.known
        for channel, version in known.channel_versions.items():
            unchanged = channel not in new_versions
            if parent and unchanged and parent.channel_versions.get(channel) == version:
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
            data = None if isinstance(previous, list) else dump(value)
            if type(value) is list and (data is None or len(data) > INLINE_MAX):
                segments = previous if isinstance(previous, list) else []
                elements = parent.elements.get(channel) if parent else None
                log = (thread.id, ns, channel)
                await self._append(conn, cache, thread.epoch, log, value, segments, elements, plan)
            elif data is None or len(data) > INLINE_MAX:
                known.stored[channel] = str(version)
                plan.blobs.append(
                    {"channel": channel, "version": str(version), "data": data or dump(value)}
                )
            else:
                known.inline[channel] = data
        return plan

    async def _append(
        self,
        conn: AsyncConnection,
        cache: _ThreadCache | None,
        epoch: int,
        log: LogKey,
        value: list[Any],
        segments: Segments,
        elements: list[Any] | None,
        plan: _Plan,
    ) -> None:
        """Store a list version as the longest prefix it shares with the parent's version
        plus its new tail appended to the log: O(new elements) for a growing chat."""
        dump = self._dump
        common = min(len(value), sum(b - a for a, b in segments))
        same = 0
        if elements is not None:
            while same < common and value[same] is elements[same]:
                same += 1
        encoded: dict[int, str] = {}
        if same < common:  # no identity (fresh objects): compare with the stored text
            shared = truncate(segments, common)
            logs = await self._fetch_chunks(conn, {log: shared}, {log[0]: epoch})
            stored = [e for part in parts(logs[log], shared) for e in part.split(SEP)]
            while same < common:
                encoded[same] = dump(value[same])
                if encoded[same] != stored[same]:
                    break
                same += 1
        kept = truncate(segments, same)
        tail = range(same, len(value))
        if tail:
            end = await self._log_end(conn, cache, log, plan)
            kept = extend(kept, end, len(tail))
            if len(kept) > MAX_SEGMENTS:  # too fragmented to read fast: write it out whole
                tail, kept = range(len(value)), [[end, end + len(value)]]
            data = SEP.join(encoded.get(i) or dump(value[i]) for i in tail)
            plan.items.append({"channel": log[2], "seq": end, "count": len(tail), "data": data})
            plan.log_ends[log[1:]] = end + len(tail)
        plan.known.stored[log[2]] = kept
        plan.known.elements[log[2]] = list(value)

    async def _log_end(
        self, conn: AsyncConnection, cache: _ThreadCache | None, log: LogKey, plan: _Plan
    ) -> int:
        """The next free seq of a channel's log (the cache knows it on the hot path)."""
        end = plan.log_ends.get(log[1:])
        if end is None and cache is not None:
            end = cache.log_ends.get(log[1:])
        if end is None:
            thread, ns, channel = log
            last = await conn.scalar(
                select(func.max(item_table.c.seq + item_table.c.count)).where(
                    item_table.c.thread == thread,
                    item_table.c.checkpoint_ns == ns,
                    item_table.c.channel == channel,
                )
            )
            end = last or 0
        return end

    async def _insert_values(
        self, conn: AsyncConnection, key: int, ns: str, checkpoint_id: str, plan: _Plan
    ) -> None:
        """Insert the plan's items and blobs.

        A blob is keyed by its channel version, which a fork reuses for a different value
        (versions count up from the parent on every branch). A colliding blob is stored
        under a key made unique by the checkpoint id, and the row points there."""
        place = {"thread": key, "checkpoint_ns": ns}
        for chunk in _chunks(plan.items):
            await conn.execute(self._add_items, [{**r, **place} for r in chunk])
        if not plan.blobs:
            return
        rows = [{**r, **place} for r in plan.blobs]
        inserted = await conn.execute(self._add_blobs, rows)
        done = set(inserted.scalars())
        collided = [
            {**r, "version": f"{r['version']}#{checkpoint_id}"}
            for r in rows
            if r["channel"] not in done
        ]
        if collided:
            await self._upsert(conn, blob_table, collided)
            plan.known.stored = {
                **plan.known.stored,
                **{r["channel"]: r["version"] for r in collided},
            }

    def _split_metadata(self, metadata: CheckpointMetadata) -> tuple[dict[str, Any], Any]:
        """The metadata values that have columns, and the rest as a JSON tree (or None)."""
        columns: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, value in metadata.items():
            if type(value) is _COLUMN_KEYS.get(key):
                columns[key] = value
            else:
                rest[key] = value
        return columns, json.loads(self.serializer.dumps(rest)) if rest else None

    # The cache.

    def _remember_put(self, thread_id: str, thread: _Holding, ns: str, plan: _Plan) -> None:
        key, put_count = thread.id, thread.put_count
        cache = self._current_cache(thread_id, key, put_count) or _ThreadCache(
            key, put_count, {}, {}
        )
        cache.put_count = put_count
        cache.known[ns] = plan.known
        cache.log_ends.update(plan.log_ends)
        self._store_cache(thread_id, cache)
        for item in plan.items:
            row = {item["seq"]: (item["count"], item["data"])}
            self._items.add(key, thread.epoch, ns, item["channel"], row)

    def _remember_read(self, row: Row[Any], loaded: CheckpointTuple) -> None:
        """Keep what a read returned, so the put of its child (the next step of the run
        that loaded it) needs no read and finds shared elements by identity."""
        cache = self._cache.get(row.thread_id)
        if cache is not None and cache.key == row.thread and cache.put_count > row.put_count:
            return  # the cache knows a newer state than this read saw
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
            except (DBAPIError, OSError) as exc:
                if not self._is_transient(exc) or time.monotonic() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _is_transient(self, exc: DBAPIError | OSError) -> bool:
        if isinstance(exc, OSError):
            # asyncpg raises the socket's error when it cannot connect at all.
            return self._dialect != "sqlite"
        if exc.connection_invalidated:
            return True
        sqlstate = getattr(exc.orig, "sqlstate", None)
        if sqlstate:
            return str(sqlstate).startswith(_TRANSIENT_SQLSTATES)
        # No SQLSTATE: the server was not reached at all (refused, reset, starting up). On
        # SQLite such errors are local and final (the busy timeout already waited).
        return self._dialect != "sqlite" and isinstance(exc, OperationalError | InterfaceError)


def _rows(thread_id: ColumnElement[str] | None) -> Select[Any]:
    """Checkpoint rows with their thread's id, put_count and epoch: bookkeeping, never big
    values.

    For one thread, its key is looked up first, so PostgreSQL walks the primary key and
    stops at the newest row; through a join it would sort all of the thread's rows.
    """
    t, c, w = thread_table.c, checkpoint_table.c, write_table.c
    # Most checkpoints have no pending writes: this saves their query (a round trip).
    # A probe with LIMIT rather than EXISTS, which PostgreSQL may plan as a hash of every
    # pending write in the table (it costs the subquery for every row of the scan, not
    # the one the LIMIT keeps), built on each head read.
    has_writes = func.coalesce(
        select(literal(True))
        .where(
            w.thread == c.thread,
            w.checkpoint_ns == c.checkpoint_ns,
            w.checkpoint_id == c.checkpoint_id,
        )
        .limit(1)
        .scalar_subquery(),
        False,
    ).label("has_writes")
    if thread_id is None:
        return select(t.thread_id, t.put_count, t.epoch, has_writes, checkpoint_table).join(
            thread_table, t.id == c.thread
        )
    key = select(t.id).where(t.thread_id == thread_id).scalar_subquery()
    return select(
        thread_id.label("thread_id"),
        select(t.put_count).where(t.id == c.thread).scalar_subquery().label("put_count"),
        select(t.epoch).where(t.id == c.thread).scalar_subquery().label("epoch"),
        has_writes,
        checkpoint_table,
    ).where(c.thread == key)


# The head reads, built once: building a statement costs more than running this one.
_ONE_THREAD = _rows(bindparam("thread_id", type_=Text())).where(
    checkpoint_table.c.checkpoint_ns == bindparam("checkpoint_ns")
)
_LATEST = _ONE_THREAD.order_by(checkpoint_table.c.checkpoint_id.desc()).limit(1)
_BY_ID = _ONE_THREAD.where(checkpoint_table.c.checkpoint_id == bindparam("checkpoint_id"))


def _on_conflict_replace(insert: Any, table: Any) -> Any:
    key = [c.name for c in table.primary_key]
    return insert.on_conflict_do_update(
        index_elements=key,
        set_={c.name: insert.excluded[c.name] for c in table.c if c.name not in key},
    )


async def _purge(conn: AsyncConnection, key: int) -> None:
    for table in (checkpoint_table, blob_table, item_table, write_table):
        await conn.execute(delete(table).where(table.c.thread == key))


def _prune_plan(
    rows: Sequence[Row[Any]], interrupted: set[tuple[Any, ...]], keep_last_turns: int
) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str | None]]:
    """Which checkpoints to delete, and the new parent of each kept one whose parent goes."""
    by_ns: dict[str, list[Row[Any]]] = {}
    for row in rows:
        by_ns.setdefault(row.checkpoint_ns, []).append(row)
    doomed: set[tuple[str, str]] = set()
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
                and children[r.checkpoint_id] == 1  # neither a branch point nor a tip
                and (ns, r.checkpoint_id) not in interrupted
            ):
                doomed.add((ns, r.checkpoint_id))
    relinked: dict[tuple[str, str], str | None] = {}
    for (ns, checkpoint_id), parent_id in parents.items():
        if (ns, checkpoint_id) in doomed or (ns, parent_id) not in doomed:
            continue
        while parent_id is not None and (ns, parent_id) in doomed:
            parent_id = parents[(ns, parent_id)]
        relinked[(ns, checkpoint_id)] = parent_id
    return doomed, relinked


async def _change(conn: AsyncConnection, thread_id: str) -> int | None:
    """Lock a live thread's row for a change other than a put that makes every cache of
    the thread stale; returns its key, None if there is no such thread or it was deleted."""
    return await conn.scalar(
        update(thread_table)
        .where(thread_table.c.thread_id == thread_id, thread_table.c.deleted_at.is_(None))
        .values(**_CHANGED)
        .returning(thread_table.c.id)
    )


async def _delete_checkpoints(
    conn: AsyncConnection, key: int, doomed: set[tuple[str, str]]
) -> None:
    """Delete checkpoints (checkpoint_ns, checkpoint_id) of a thread with their pending
    writes, then the blobs and items that no remaining checkpoint refers to."""
    if not doomed:
        return
    for chunk in _chunks(sorted(doomed)):
        for table in (checkpoint_table, write_table):
            await conn.execute(
                delete(table).where(
                    table.c.thread == key,
                    tuple_(table.c.checkpoint_ns, table.c.checkpoint_id).in_(chunk),
                )
            )
    c = checkpoint_table.c
    used_blobs: set[tuple[Any, ...]] = set()
    used_spans: dict[tuple[str, str], Segments] = {}
    for ns, stored in await conn.execute(
        select(c.checkpoint_ns, c.stored_values).where(c.thread == key)
    ):
        for channel, ref in (stored or {}).items():
            if isinstance(ref, str):
                used_blobs.add((ns, channel, ref))
            else:
                used_spans.setdefault((ns, channel), []).extend(ref)
    blob_key = (blob_table.c.checkpoint_ns, blob_table.c.channel, blob_table.c.version)
    existing = await conn.execute(select(*blob_key).where(blob_table.c.thread == key))
    for chunk in _chunks([tuple(r) for r in existing if tuple(r) not in used_blobs]):
        await conn.execute(
            delete(blob_table).where(blob_table.c.thread == key, tuple_(*blob_key).in_(chunk))
        )
    logs = await conn.execute(
        select(item_table.c.checkpoint_ns, item_table.c.channel)
        .where(item_table.c.thread == key)
        .distinct()
    )
    for ns, channel in logs.all():
        unused = and_(
            item_table.c.thread == key,
            item_table.c.checkpoint_ns == ns,
            item_table.c.channel == channel,
        )
        spans = used_spans.get((ns, channel))
        if spans:
            unused = and_(unused, ~_in_ranges(item_table.c.seq, merge(spans)))
        await conn.execute(delete(item_table).where(unused))


def _in_ranges(column: Any, ranges: Segments) -> ColumnElement[bool]:
    return or_(*(column.between(a, b - 1) for a, b in ranges))


def _chunks(rows: Sequence[T]) -> Iterable[Sequence[T]]:
    return (rows[i : i + _CHUNK] for i in range(0, len(rows), _CHUNK))


def _join_object(values: dict[str, str]) -> str | None:
    """The JSON object of serialized values (what serializing the dict would give)."""
    if not values:
        return None
    return "{" + ",".join(f"{json.dumps(c)}:{v}" for c, v in values.items()) + "}"
