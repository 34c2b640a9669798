"""The SQL saver: checkpoints on SQLAlchemy 2 (async), one code path for SQLite and PostgreSQL.

Storage grows with what changed (docs/storage.md): each write transaction stores one
compressed record per thread it saved to, holding its checkpoints' bookkeeping, their
pending writes, small values inline, big values once per version, and the elements that
list values (the messages of a chat) added to an append-only item log, which each
version addresses by a few ranges. A turn that adds two messages stores two messages,
also when a subgraph answers: its lists, and the values that carry them in and out,
refer to its graph's log.
Every few dozen records, a save also stores their digest, so that a saver new to a long
thread reads its head from a few digests instead of decoding every record.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import time
import weakref
from collections import ChainMap, Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, TypeVar

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Executable,
    Row,
    ScalarSelect,
    String,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    exists,
    func,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from engine.checkpoint.base import (
    SPECIAL_WRITES,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    Config,
    PutCheckpoint,
    PutWrites,
    SaveOp,
    VersionInfo,
    checkpoint_config,
    matches_filter,
    thread_key,
)
from engine.checkpoint.serde.jsonplus import (
    TAG,
    JsonSerializer,
    Prepared,
    default_serializer,
    holds_repeats,
    own_format,
)
from engine.checkpoint.sql.connect import create_engine, write_transaction
from engine.checkpoint.sql.direct import direct_statements, fetch_alone, fetch_on
from engine.checkpoint.sql.item_log import (
    MAX_SEGMENTS,
    SEP,
    UNPREPARED,
    ElementTexts,
    Segments,
    at_positions,
    enclosing,
    extend,
    json_array,
    pieces,
    place_prepared,
    rebase,
    spanned_rows,
    truncate,
    unprepared,
    version_runs,
)
from engine.checkpoint.sql.journal import (
    Held,
    Journal,
    Journals,
    Known,
    Log,
    Place,
    Stored,
    Tip,
    latest_plan,
    prune_plan,
)
from engine.checkpoint.sql.migrations import CHECKPOINT, upgrade
from engine.checkpoint.sql.models import save_table, thread_table
from engine.checkpoint.sql.records import (
    CheckpointEntry,
    JsonText,
    Record,
    Shared,
    Summary,
    chained,
    decode,
    decode_thread,
    encode,
    thread_summaries,
)
from engine.checkpoint.sql.storage import ThreadStorage, thread_storage

__all__ = ["SQLSaver", "ThreadDeletedError"]

T = TypeVar("T")


class Fence(Protocol):
    """What may refuse saves whose writer lost the right to write (another process took
    its run over), locking what decides that right until they commit, so that the check
    cannot go stale."""

    async def __call__(self, conn: AsyncConnection, ops: Sequence[SaveOp]) -> None:
        """Called in each write transaction before its saves, with them: raises to refuse
        them."""

    def condition(self, ops: Sequence[SaveOp]) -> tuple[ColumnElement[bool], dict[str, Any]] | None:
        """The same check as a condition of the one statement that makes a save on
        PostgreSQL (see `SQLSaver._save_alone`), with its parameters for these saves; the
        condition is one of a few objects built once (`UNFENCED` for saves it does not
        concern), as the statement that holds it is kept. None when the check cannot be
        one condition: the saves take a transaction."""


# The condition of saves that nothing fences (no fence, or none of the fence's concern):
# a fence's `condition` gives it, so that they share one kept statement.
UNFENCED = true()
INLINE_MAX = 128  # characters of JSON up to which a value is kept in the checkpoint entry
# The save that makes this many records of a thread after its last digest also stores
# their digest: a saver new to the thread decodes its digests and fewer records than this
# (docs/storage.md, "Digests"), and every record is digested once.
DIGEST_EVERY = 32
# What a change other than a save does to its thread's row: every journal of it is stale.
_CHANGED = {"put_count": thread_table.c.put_count + 1, "epoch": thread_table.c.epoch + 1}
# How long a thread's head that a caller's statement saw (`SQLSaver.expect_head`) stands
# for the thread's head: a moment, the time between admitting a run and its first read.
HEAD_TRUSTED_S = 1.0
# More heads expected than runs would read in that time: the rest were never read.
_HEADS_MAX = 1024
# SQLSTATE classes worth another attempt: connection lost, transaction rolled back by the
# server (deadlock, serialization), out of resources, server shutting down or starting.
TRANSIENT_SQLSTATES = ("08", "40", "53", "57P")

# A thread's row with the records after :after, in order: what a saver needs to bring
# its journal of the thread up to date, in one statement. (Digests are rows under the
# negative of the last record they digest, so records are the rows of positive seq.) The
# digests of those records come without their data, each after the last record it
# digests: the journal learns where the last digest is (`Journal.chain`).
_t, _s = thread_table.c, save_table.c
_THREAD_ID = bindparam("thread_id", type_=Text())
_AFTER = bindparam("after", type_=_s.seq.type)
_CATCH_UP = (
    select(_t.id, _t.epoch, _t.deleted_at, _s.seq, case((_s.seq > 0, _s.data)).label("data"))
    .outerjoin(save_table, and_(_s.thread == _t.id, or_(_s.seq > _AFTER, _s.seq < -_AFTER)))
    .where(_t.thread_id == _THREAD_ID)
    .order_by(func.abs(_s.seq), _s.seq.desc())
)


# Every row of a live thread, records and digests, in seq order: what it takes.
_ROWS = (
    select(_s.seq, _s.data)
    .select_from(thread_table)
    .join(save_table, _s.thread == _t.id)
    .where(_t.thread_id == _THREAD_ID, _t.deleted_at.is_(None))
    .order_by(_s.seq)
)


def _digested(thread: Callable[[Any], ColumnElement[bool]]) -> ScalarSelect[Any]:
    """The seq of the last record that the digests of the thread (`thread`: a condition
    on the columns of its `checkpoint_threads` row) cover; 0 without digests. It does not
    depend on the row of the statement around it, so PostgreSQL computes it once."""
    digest, of = save_table.alias("digest"), thread_table.alias("digest_thread")
    return (
        select(func.coalesce(-func.min(digest.c.seq), 0))
        .join(of, of.c.id == digest.c.thread)
        .where(thread(of.c), digest.c.seq < 0)
        .scalar_subquery()
    )


# For a journal new to the thread: the row, its digests and the records after them, in
# the order of the records they hold.
_FIRST_READ = (
    select(_t.id, _t.epoch, _t.deleted_at, _s.seq, _s.data)
    .select_from(thread_table)
    .outerjoin(
        save_table,
        and_(
            _s.thread == _t.id,
            or_(_s.seq < 0, _s.seq > _digested(lambda of: of.thread_id == _THREAD_ID)),
        ),
    )
    .where(_t.thread_id == _THREAD_ID)
    .order_by(func.abs(_s.seq))
)
# What the next digest of a thread (by key) covers: its records after the last digest.
_UNDIGESTED = (
    select(_s.seq, _s.data)
    .where(
        _s.thread == bindparam("thread"),
        _s.seq > _digested(lambda of: of.id == bindparam("thread")),
    )
    .order_by(_s.seq)
)
_SUMMARIES = (
    select(_t.thread_id, _s.data)
    .join(save_table, and_(_s.thread == _t.id, _s.seq > 0))
    .where(_t.deleted_at.is_(None))
    .order_by(_s.thread, _s.seq)
)


class ThreadDeletedError(LookupError):
    """A write to a deleted thread (a run still finishing must not bring it back), or a
    copy of one (a copy made as its thread goes is whole, or this)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} was deleted")
        self.thread_id = thread_id


@dataclass(slots=True)
class _Draft:
    """The record a write transaction is building for one thread, over the thread's
    journal: later saves of the transaction see what earlier ones added, while the
    journal (which readers use) learns of it only at the commit."""

    journal: Journal
    seq: int
    record: Record = field(default_factory=Record)
    known: dict[str, Known] = field(default_factory=dict)
    tips: dict[Log, Tip] = field(default_factory=dict)
    undigested: int = 0  # the thread's records after its last digest, once committed
    stream: bytes | None = None  # the record's (`records.Encoded`), once encoded
    # The list versions this draft stored, by id (kept alive here): the saves of a draft
    # run back to back, with no node in between, so their elements are as stored still.
    stored_now: dict[int, Held] = field(default_factory=dict)

    def prefix(
        self, held: Held, value: list[Any], limit: int, dump: Callable[[Any], str], start: int = 0
    ) -> int:
        """`held.prefix`, comparing no states for a version this draft stored."""
        if self.stored_now.get(id(held)) is held:
            return held.identical(value, limit, start)
        return held.prefix(value, limit, dump, start)

    def checkpoint(self, ns: str, checkpoint_id: str) -> CheckpointEntry | None:
        for entry in reversed(self.record.checkpoints):
            if (entry.ns, entry.id) == (ns, checkpoint_id):
                return entry
        return self.journal.checkpoints.get((ns, checkpoint_id))

    def chunks(self, log: Log) -> Mapping[int, tuple[int, str]]:
        """The log's rows, the journal's and those added here (without copying either)."""
        added = {at: (n, data) for ns, ch, at, n, data in self.record.items if (ns, ch) == log}
        return ChainMap(added, self.journal.logs.get(log, {}))

    def version_runs(self, log: Log, segments: Segments) -> list[str]:
        """`Journal.runs` over the journal's rows and those added here."""
        ns, channel = log
        return version_runs(lambda owner: self.chunks((owner, channel)), segments, ns)

    def log_end(self, log: Log) -> int:
        ends = [at + n for ns, ch, at, n, _ in self.record.items if (ns, ch) == log]
        return max(ends, default=self.journal.log_ends.get(log, 0))

    def blob(self, key: tuple[str, str, str]) -> JsonText | None:
        for ns, channel, version, data in reversed(self.record.blobs):
            if (ns, channel, version) == key:
                return data
        return self.journal.blobs.get(key)

    def encode(self) -> bytes:
        """The record's data, chained to the thread's record before it where it may be:
        not if the journal moved on meanwhile (a writer of another event loop, such as
        a sync `invoke()` in a node, saved or read since), as a record alone is always
        readable."""
        at, before = self.journal.chain
        data, self.stream = encode(self.record, before if at == self.seq - 1 else None)
        return data

    def commit(self) -> None:
        journal = self.journal
        with journal.lock:
            if self.seq > journal.seq:  # else another loop's writer read it, and more
                journal.apply(self.seq, self.record)
                journal.undigested = self.undigested
                journal.stream = self.stream
                journal.chain = (self.seq, self.stream if self.undigested else None)
        journal.known.update(self.known)
        journal.tips.update(self.tips)


class SQLSaver(BaseCheckpointSaver):
    """Checkpoints in tables of their own, which `setup()` creates and upgrades.

    Many writers can work at once: a write transaction locks only its own threads' rows
    in `checkpoint_threads`. Transient database errors (a dropped connection, a server
    restart) are retried for up to `retry_for` seconds; a retried save whose first
    attempt did land stores its record again, which changes nothing when applied.

    Each saver keeps the threads it serves decoded in memory (`Journals`: up to
    `cache_threads` threads and `cache_text` characters), checked against the thread's
    row on every use: a read fetches only the records it has not seen, and a put needs
    no read at all. The save that makes a thread's records after its last digest
    `digest_every` also stores their digest.

    With `reuse_objects`, the first read of the checkpoint a put saved gives a new list
    of the objects that put was handed, each checked to be still as stored, instead of
    building the list's elements again: a chat's next turn then does not build its
    history. For a host whose callers keep none of a run's objects once it is over (the
    server): a caller that keeps a run's result would see a later node's change in
    place of one of them, where LangGraph's savers give every read objects of its own,
    as this saver does by default.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        serde: JsonSerializer | None = None,
        cache_threads: int = 256,
        cache_text: int = 64 * 1024 * 1024,
        retry_for: float = 15.0,
        owns_engine: bool = False,
        fence: Fence | None = None,
        digest_every: int = DIGEST_EVERY,
        reuse_objects: bool = False,
    ) -> None:
        self.engine = engine
        self.reuse_objects = reuse_objects
        self.fence = fence
        if serde is not None and not own_format(serde):
            raise TypeError(
                "SQLSaver's serde must be a JsonSerializer (or JsonPlusSerializer) of the "
                f"engine's, not {type(serde).__qualname__}: its queries read the JSON "
                "that serializer writes"
            )
        self.serde = serde or default_serializer
        # Reads need no transaction (each statement sees committed data), which saves the
        # BEGIN and ROLLBACK round trips on every read.
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._dialect = engine.dialect.name
        # A turn's reads and saves alone go around SQLAlchemy's execution on asyncpg.
        self._direct = direct_statements(engine)
        self._insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        now = bindparam("now")
        # Built once: building a statement (and its cache key) costs 0.1-0.25 ms.
        self._claim_thread = (
            self._insert(thread_table)
            .values(thread_id=bindparam("thread_id"), put_count=1, epoch=0, last_write_at=now)
            .on_conflict_do_update(
                index_elements=["thread_id"],
                set_={"last_write_at": now, "put_count": thread_table.c.put_count + 1},
            )
            .returning(
                thread_table.c.id,
                thread_table.c.put_count,
                thread_table.c.epoch,
                thread_table.c.deleted_at,
            )
        )
        self._add_save = save_table.insert()
        # The one-statement save (PostgreSQL), by whether it adds the thread's row and
        # by the fence condition it holds.
        self._alone: dict[tuple[bool, int], tuple[ColumnElement[bool], Any]] = {}
        self._digest_every = digest_every
        self._journals = Journals(cache_text, cache_threads)
        # Heads that callers' statements saw (`expect_head`): thread id -> head, until.
        self._heads: dict[str, tuple[str | None, bytes | None, float]] = {}
        # Each thread's writers in this process, one at a time (`_in_turn`), by event loop.
        self._turns: weakref.WeakValueDictionary[
            tuple[asyncio.AbstractEventLoop, str], asyncio.Lock
        ] = weakref.WeakValueDictionary()
        self._retry_for = retry_for
        self._owns_engine = owns_engine

    @classmethod
    def from_url(cls, url: str, **engine_options: Any) -> SQLSaver:
        """A saver on its own engine (see `create_engine`); `aclose()` disposes of it."""
        return cls(create_engine(url, **engine_options), owns_engine=True)

    async def setup(self) -> None:
        """Create the checkpoint tables, or upgrade them to this version's schema: once
        before first use, as with LangGraph's Postgres saver. Safe to call from every
        process at start (upgrades take turns; one at head changes nothing). A server
        needs none: `threadline migrate` upgrades these tables with its own."""
        await upgrade(self.engine, CHECKPOINT)

    async def aclose(self) -> None:
        if self._owns_engine:
            await self.engine.dispose()

    # Reads.

    async def aget_tuple(self, config: Config) -> CheckpointTuple | None:
        thread_id, ns = thread_key(config)
        checkpoint_id = config["configurable"].get("checkpoint_id")
        journal = await self._retry(lambda: self._read_journal(thread_id))
        if journal is not None and not journal.knows(ns, checkpoint_id):
            journal = await self._retry(lambda: self._read_journal(thread_id, whole=True))
        if journal is None:
            return None
        entry = (
            journal.checkpoints.get((ns, checkpoint_id)) if checkpoint_id else journal.latest(ns)
        )
        if entry is None:
            return None
        loaded, lists = self._read(thread_id, journal, entry, journal.known.get(entry.ns))
        # Kept as a copy: the caller owns the lists it got.
        held = {channel: Held(list(h.objects), h.stamps) for channel, h in lists.items()}
        journal.known[entry.ns] = Known(
            entry.id, entry.channel_versions, self._inline(entry.inline), entry.stored, held
        )
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

        The filter is checked on each checkpoint's metadata, never by decoding values:
        for one thread on its journal, for every thread on the records' summaries.
        """
        conf = (config or {}).get("configurable", {})
        thread_id = None if conf.get("thread_id") is None else str(conf["thread_id"])
        ns, checkpoint_id = conf.get("checkpoint_ns"), conf.get("checkpoint_id")
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")

        def wanted(found_ns: str, found_id: str, metadata: Any) -> bool:
            return (
                (ns is None or found_ns == ns)
                and (not checkpoint_id or found_id == checkpoint_id)
                and (not before_id or found_id < before_id)
                and self._matches(metadata, filter)
            )

        if thread_id is not None:
            journal = await self._retry(lambda: self._read_journal(thread_id, whole=True))
            if journal is None:
                return
            # Newest first over the namespaces asked for, stopping at the limit; the id
            # lists are copied, as records may be applied while the caller iterates.
            newest_first = heapq.merge(
                *(
                    [(i, n) for i in reversed(journal.ids.get(n, []))]
                    for n in ([ns] if ns is not None else sorted(journal.ids))
                ),
                reverse=True,
            )
            entries = (journal.checkpoints[(n, i)] for i, n in newest_first)
            matching = (e for e in entries if wanted(e.ns, e.id, e.metadata))
            for entry in itertools.islice(matching, limit):
                yield self._tuple(thread_id, journal, entry)
            return
        journals: dict[str, Journal] = {}
        candidates = sorted(
            (
                (summary.id, found_thread, summary.ns)
                for found_thread, summary in await self._retry(self._summaries)
                if wanted(summary.ns, summary.id, summary.metadata)
            ),
            reverse=True,
        )
        for checkpoint_id_, found_thread, found_ns in candidates[:limit]:
            found = journals.get(found_thread)
            if found is None:
                found = await self._retry(lambda t=found_thread: self._read_journal(t, True))
                if found is None:
                    continue
                journals[found_thread] = found
            entry = found.checkpoints.get((found_ns, checkpoint_id_))
            if entry is not None:
                yield self._tuple(found_thread, found, entry)

    async def alist_versions(self, thread_id: str, checkpoint_ns: str = "") -> list[VersionInfo]:
        """From the checkpoints' bookkeeping: no value is decoded."""
        journal = await self._retry(lambda: self._read_journal(str(thread_id), whole=True))
        if journal is None:
            return []
        versions = []
        for checkpoint_id in journal.ids.get(checkpoint_ns, []):
            entry = journal.checkpoints[(checkpoint_ns, checkpoint_id)]
            source, run_id = entry.metadata.get("source"), entry.metadata.get("run_id")
            versions.append(VersionInfo(entry.id, entry.parent, source, run_id, entry.ts))
        return versions

    async def astorage(self, thread_id: str) -> ThreadStorage:
        """The bytes the thread's rows take, as stored, and what they hold
        (`engine.checkpoint.sql.storage`); all zero for a thread with no checkpoint."""

        async def read() -> list[Any]:
            async with self._reader.connect() as conn:
                return list(await conn.execute(_ROWS, {"thread_id": str(thread_id)}))

        return thread_storage((row.seq, row.data) for row in await self._retry(read))

    async def alast_elements(
        self, thread_id: str, channel: str, checkpoint_ids: Sequence[str], checkpoint_ns: str = ""
    ) -> dict[str, Any]:
        """A list kept in an item log gives the text of its last element alone, and the
        texts of all the checkpoints are parsed in one go; a list kept otherwise (short
        enough to be inline) is read whole."""
        thread_id = str(thread_id)
        journal = await self._retry(lambda: self._read_journal(thread_id, whole=True))
        if journal is None:
            return {}
        found: dict[str, Any] = {}
        texts: dict[str, str] = {}
        logs: dict[Log, ElementTexts] = {}
        for checkpoint_id in checkpoint_ids:
            entry = journal.checkpoints.get((checkpoint_ns, checkpoint_id))
            if entry is None or channel not in entry.channel_versions:
                continue
            ref = entry.stored.get(channel)
            if type(ref) is list:
                if ref:
                    _, end, *owner = ref[-1]
                    log = (owner[0] if owner else checkpoint_ns, channel)
                    if log not in logs:
                        logs[log] = ElementTexts(journal.logs[log])
                    texts[checkpoint_id] = logs[log].at(end - 1)
                continue
            value = self._tuple(thread_id, journal, entry).checkpoint["channel_values"].get(channel)
            if isinstance(value, list) and value:
                found[checkpoint_id] = value[-1]
        found.update(zip(texts, self._parse(json_array(list(texts.values()))), strict=True))
        return found

    def head_of(self, thread_id: ColumnElement[Any]) -> ScalarSelect[Any]:
        """The head of the thread whose id `thread_id` gives (a column or parameter of a
        caller's statement), as that statement sees it, for `expect_head`; null for a
        thread without checkpoints, or deleted."""
        t = thread_table.c
        head = cast(t.id, String) + ":" + cast(t.epoch, String) + ":" + cast(t.put_count, String)
        return (
            select(head)
            .where(t.thread_id == cast(thread_id, Text), t.deleted_at.is_(None))
            .scalar_subquery()
        )

    def last_record_of(self, thread_id: ColumnElement[Any]) -> ScalarSelect[Any]:
        """The record that the head of the thread (`head_of`) counts last, for
        `expect_head`: a saver one record behind that head applies it instead of reading.
        Null when a digest was saved with it: the saver reads, to learn of the digest
        (`Journal.chain`)."""
        t, r = thread_table.c, save_table.c
        digest = save_table.alias("digest")
        digested = exists().where(digest.c.thread == t.id, digest.c.seq == -t.put_count)
        return (
            select(r.data)
            .join(thread_table, r.thread == t.id)
            .where(t.thread_id == cast(thread_id, Text), r.seq == t.put_count, ~digested)
            .scalar_subquery()
        )

    def expect_head(self, thread_id: str, head: str | None, last: bytes | None = None) -> None:
        """The thread's head as a caller's statement saw it a moment ago (`head_of`), and
        optionally the record it counts last (`last_record_of`). The thread's next read,
        within `HEAD_TRUSTED_S`, trusts it: when this saver's journal of the thread is at
        that head, one record behind it (with `last`), or the caller saw none (a thread
        without checkpoints), the read sends no statement. A server that admits a run in
        one statement thus spares the run's first read its round trip; a write from
        elsewhere in between counts as one made while the run went on."""
        if len(self._heads) >= _HEADS_MAX:
            self._heads.clear()
        self._heads[thread_id] = (head, last, time.monotonic() + HEAD_TRUSTED_S)

    def _expected(self, thread_id: str) -> tuple[bool, Journal | None]:
        """Whether a head a caller expected (once) answers the thread's read, and with
        what: the journal at that head, or None for a thread without checkpoints."""
        expected = self._heads.pop(thread_id, None)
        if expected is None or time.monotonic() > expected[2]:
            return False, None
        head, last, _ = expected
        if head is None:
            self._journals.drop(thread_id)
            return True, None
        journal = self._journals.get(thread_id)
        if journal is None:
            return False, None
        stamp = f"{journal.key}:{journal.epoch}:"
        if head == f"{stamp}{journal.seq}":
            return True, journal
        if last is not None and head == f"{stamp}{journal.seq + 1}":
            journal.add(journal.seq + 1, last)  # as the read would have
            self._journals.keep(thread_id, journal)
            return True, journal
        return False, None

    async def _read_journal(self, thread_id: str, whole: bool = False) -> Journal | None:
        if self._heads and not whole:
            trusted, journal = self._expected(thread_id)
            if trusted:
                return journal
        if self._direct is not None:  # each statement alone, sent by asyncpg
            return await self._journal(None, thread_id, whole=whole)
        async with self._reader.connect() as conn:
            return await self._journal(conn, thread_id, whole=whole)

    async def _journal(
        self,
        conn: AsyncConnection | None,
        thread_id: str,
        *,
        keep: bool = True,
        whole: bool = False,
    ) -> Journal | None:
        """The thread's journal brought up to date with the records this process has not
        applied yet (one statement; two when the thread's epoch moved on), read on `conn`
        or (None) each statement alone; None if the thread has no row or was deleted. A
        journal new to the thread starts from its digests (partial), unless it is to be
        `whole`. With `keep=False` it is decoded anew, whole, and not cached (a
        transaction that is about to rewrite the records)."""

        async def fetch(query: Executable, after: int) -> list[Any]:
            params = {"thread_id": thread_id, "after": after}
            if conn is None:
                return await fetch_alone(self._direct, self._reader, query, params)
            return await fetch_on(conn, query, params)

        cached = self._journals.get(thread_id) if keep else None
        found = None
        if cached is not None and not (whole and cached.partial):
            found = await fetch(_CATCH_UP, cached.seq)
            if found and (found[0].id, found[0].epoch) != (cached.key, cached.epoch):
                found = None  # rewritten or deleted meanwhile: decode it anew
        if found is None:
            found = await fetch(_CATCH_UP if whole or not keep else _FIRST_READ, 0)
            cached = None
        if not found or found[0].deleted_at is not None:
            self._journals.drop(thread_id)
            return None
        journal = cached or self._new_journal(thread_id, found[0].id, found[0].epoch, keep)
        for row in found:
            if row.seq is not None:
                journal.add(row.seq, row.data)
        if keep:
            self._journals.keep(thread_id, journal)
        return journal

    def _new_journal(self, thread_id: str, key: int, epoch: int, keep: bool) -> Journal:
        """A journal to decode the thread into; one that replaces a journal of the same
        epoch (partial) keeps its prepared elements and what was last put or read."""
        journal = Journal(key, epoch)
        replaced = self._journals.get(thread_id) if keep else None
        if replaced is not None and (replaced.key, replaced.epoch) == (key, epoch):
            journal.elements, journal.known = replaced.elements, replaced.known
            journal.tips = replaced.tips
            journal.prepared = journal.size = replaced.prepared
        return journal

    async def _summaries(self) -> list[tuple[str, Summary]]:
        async with self._reader.connect() as conn:
            found = await conn.execute(_SUMMARIES)
        return [
            (thread_id, summary)
            for thread_id, rows in itertools.groupby(found, key=lambda row: row[0])
            for summary in thread_summaries(data for _, data in rows)
        ]

    def _tuple(self, thread_id: str, journal: Journal, entry: CheckpointEntry) -> CheckpointTuple:
        return self._read(thread_id, journal, entry)[0]

    def _read(
        self,
        thread_id: str,
        journal: Journal,
        entry: CheckpointEntry,
        known: Known | None = None,
    ) -> tuple[CheckpointTuple, dict[str, Held]]:
        """A checkpoint, and the lists of its item-log channels with what each element
        was stored as (kept by `aget_tuple`, so that the put of its child, the next step
        of the run that loaded it, finds their unchanged elements by identity). `known`:
        what the namespace's last put was handed, whose lists this read gives again
        where they are still as stored (`_kept`)."""
        parse = self._parse
        ns = entry.ns
        inline = parse(entry.inline) if entry.inline else {}
        values: dict[str, Any] = {}
        held: dict[str, Held] = {}
        for channel in entry.channel_versions:
            if channel in inline:
                values[channel] = inline[channel]
            elif channel in entry.stored:
                ref = entry.stored[channel]
                if isinstance(ref, str):
                    values[channel] = parse(journal.text(ns, journal.blobs[(ns, channel, ref)]))
                else:
                    found = _kept(known, entry, channel, self._dumper)
                    found = held[channel] = found or self._list(journal, ns, channel, ref)
                    values[channel] = found.objects
        checkpoint: Checkpoint = {
            "v": entry.v,
            "id": entry.id,
            "ts": entry.ts,
            "channel_values": values,
            "channel_versions": dict(entry.channel_versions),
            "versions_seen": {node: dict(seen) for node, seen in entry.versions_seen.items()},
            "updated_channels": _copy(entry.updated_channels),
        }
        parent = entry.parent
        loaded = CheckpointTuple(
            config=checkpoint_config(thread_id, ns, entry.id),
            checkpoint=checkpoint,
            metadata=self._metadata(entry.metadata),
            parent_config=checkpoint_config(thread_id, ns, parent) if parent else None,
            pending_writes=[
                (task_id, channel, parse(data))
                for task_id, channel, data in journal.pending(ns, entry.id)
            ],
        )
        return loaded, held

    def _list(self, journal: Journal, ns: str, channel: str, segments: Segments) -> Held:
        """A version of a list channel: prepared elements are rebuilt, the others parsed
        together (fresh containers for every read). Elements are prepared at their first
        read, as a put compares with their prepared form what it is handed back."""
        elements: list[Prepared | Stored] = []
        for owner, plain in pieces(segments, ns):
            log = (owner, channel)
            found = at_positions(journal.elements.get(log, []), plain)
            if len(found) != sum(b - a for a, b in plain) or UNPREPARED in found:
                found = self._prepare(journal, log, plain)
            elements += found
        texts = [e.text for e in elements if type(e) is Stored]
        if len(texts) == len(elements):  # plain JSON values (dicts): parsed all at once
            return Held(self._parse(json_array(texts)), elements)
        parsed = iter(self._parse(json_array(texts)) if texts else ())
        try:
            built = [next(parsed) if type(e) is Stored else e.build() for e in elements]
            return Held(built, elements)
        except (TypeError, ValueError):
            # A stored message its class refuses: the serializer says what is wrong.
            runs = journal.version_runs(ns, channel, segments)
            stamps = [Stored(text) for run in runs for text in run.split(SEP)]
            return Held(self._parse(json_array(runs)), stamps)

    def _prepare(self, journal: Journal, log: Log, segments: Segments) -> list[Any]:
        """Prepare the elements of a list version in one log (plain ranges) whose rows are
        not all prepared yet, all in one parse, and keep them by position: an element that
        holds no mutable container but itself (a chat message, a plain dict of scalars) is
        kept as its class and fields, any other as its text, parsed on every read."""
        kept = journal.elements.setdefault(log, [])
        runs: list[list[int]] = []  # [first position, elements] of each run of rows
        found: list[str] = []
        for seq, count, _, _, data in spanned_rows(journal.logs[log], unprepared(kept, segments)):
            if seq < len(kept) and kept[seq] is not UNPREPARED:
                continue
            if runs and sum(runs[-1]) == seq:  # a new saver's first read: a run of 1,000s
                runs[-1][1] += count
            else:
                runs.append([seq, count])
            found.append(data)
        texts = SEP.join(found).split(SEP)
        fresh = self._stamps(texts)
        offset, slots = 0, 0
        for start, count in runs:
            slots += place_prepared(kept, start, fresh[offset : offset + count])
            offset += count
        # A message's class and fields take about 1.6 times its JSON; a slot 8 bytes.
        prepared = 8 * slots + 2 * sum(map(len, texts))
        journal.size += prepared
        journal.prepared += prepared
        return at_positions(kept, segments)

    def _stamps(self, texts: list[str]) -> list[Prepared | Stored]:
        """Stored elements, prepared where they can be, else kept as their text."""
        return [Stored(p) if type(p) is str else p for p in self.serde.prepare(texts)]

    def _metadata(self, metadata: Any) -> CheckpointMetadata:
        return self._parse(json.dumps(metadata))  # type: ignore[no-any-return]

    def _matches(self, metadata: Any, filter: dict[str, Any] | None) -> bool:
        """Whether stored metadata (the serializer's JSON tree) matches `filter`. Plain
        JSON values are compared on the tree as it is; others need it decoded."""
        if not filter:
            return True
        plain = all(type(v) in (str, int, float, bool, type(None)) for v in filter.values())
        if plain and not matches_filter(metadata, filter):
            return False
        return matches_filter(self._metadata(metadata), filter)

    # Writes.

    async def aput(
        self,
        config: Config,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
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
        """Every save in one transaction, one record per thread (pending writes' values
        serialized up front, outside it, but lists: see `_writes`)."""
        saves: dict[str, list[Callable[[_Draft], None]]] = {}
        parents: dict[str, list[Place]] = {}  # the puts' parents that the batch did not put
        put_ids = {op.checkpoint["id"] for op in ops if isinstance(op, PutCheckpoint)}
        # Puts first: a write of a list (a subgraph's output, saved with its graph's next
        # step) then shares the version that step stored (`_splice`).
        for op in sorted(ops, key=lambda op: not isinstance(op, PutCheckpoint)):
            thread_id, ns = thread_key(op.config)
            save = self._put(op) if isinstance(op, PutCheckpoint) else self._writes(op)
            if save is not None:
                saves.setdefault(thread_id, []).append(save)
            parent = op.config["configurable"].get("checkpoint_id")
            if isinstance(op, PutCheckpoint) and parent and parent not in put_ids:
                parents.setdefault(thread_id, []).append((ns, parent))
        if not saves:
            return

        async def run() -> None:
            alone = await self._save_alone(saves, parents, ops)
            if alone is not None:
                alone.commit()
                return
            drafts = []
            async with write_transaction(self.engine) as conn:
                if self.fence is not None:
                    await self.fence(conn, ops)
                for thread_id in sorted(saves):  # one lock order: no deadlock
                    todo, known = saves[thread_id], parents.get(thread_id, ())
                    drafts.append(await self._save(conn, thread_id, todo, known))
            for draft in drafts:
                draft.commit()

        async with self._in_turn(saves):
            await self._retry(run)

    @contextlib.asynccontextmanager
    async def _in_turn(self, thread_ids: Iterable[str]) -> AsyncIterator[None]:
        """Take this process's turn to write each of the threads (sorted: one lock order).
        Writers of a thread take turns at its row's lock anyway; taking turns here too,
        until the journal has learned of the save, lets each find there what the one
        before it stored (the lists and log tips the next saves share by identity),
        where it could otherwise claim the row between that save's commit and the
        journal's update, and find only the record."""
        loop = asyncio.get_running_loop()  # a lock is one loop's: a sync call runs its own
        async with contextlib.AsyncExitStack() as turns:
            for thread_id in sorted(thread_ids):
                turn = self._turns.setdefault((loop, thread_id), asyncio.Lock())
                await turns.enter_async_context(turn)
            yield

    async def _save_alone(
        self,
        saves: dict[str, list[Callable[[_Draft], None]]],
        parents: dict[str, list[Place]],
        ops: Sequence[SaveOp],
    ) -> _Draft | None:
        """The saves of one thread as one statement in autocommit mode (PostgreSQL): the
        record made from the journal as this process knows it, added with the claim of
        the thread's row only if no other process wrote since (its key, epoch and next
        seq), the thread is not deleted and the fence's condition holds. The draft, or
        None when the saves cannot be one statement, or it changed nothing: they then
        take a transaction, which says why (a deleted thread, a refusing fence) or
        catches up under the row's lock."""
        if self._dialect != "postgresql" or len(saves) != 1:
            return None
        [(thread_id, todo)] = saves.items()
        journal = self._journals.get(thread_id)
        # A thread this process holds no journal of, saved from no earlier checkpoint: a
        # new thread, whose row the statement adds (and adds nothing if it has one).
        new = journal is None and not parents.get(thread_id)
        if not new and (
            journal is None
            or journal.undigested + 1 >= self._digest_every
            or not all(journal.knows(*parent) for parent in parents.get(thread_id, ()))
        ):
            return None
        fenced = (UNFENCED, {}) if self.fence is None else self.fence.condition(ops)
        if fenced is None:
            return None
        condition, fence_params = fenced
        kept = self._alone.get((new, id(condition)))
        if kept is None:
            statement = _create_alone(condition) if new else _add_alone(condition)
            kept = self._alone[(new, id(condition))] = (condition, statement)
        if journal is None:
            journal = Journal(0, 0)  # its key comes back from the statement
        draft = self._draft(journal, journal.seq + 1, todo)
        params = {
            "now": datetime.now(UTC),
            "data": draft.encode(),
            "key": journal.key,
            # The seq the draft was made on, not the journal's now: a writer in another
            # thread (a sync `invoke()` in a node) may have moved the journal meanwhile,
            # and the record must then not go in after the one that writer added.
            "last_seq": draft.seq - 1,
            "known_epoch": journal.epoch,
            "thread_id": thread_id,
            **fence_params,
        }
        added = await fetch_alone(self._direct, self._reader, kept[1], params)
        if not added:
            return None
        if new:
            journal.key = added[0].thread
            self._journals.keep(thread_id, journal)
        return draft

    async def _save(
        self,
        conn: AsyncConnection,
        thread_id: str,
        saves: list[Callable[[_Draft], None]],
        parents: Iterable[Place],
    ) -> _Draft:
        """The save in steps: claim the thread, bring the journal up to date under the
        lock, make the record from it and add it (and a digest when one is due)."""
        claim = await self._claim(conn, thread_id)
        journal = self._journals.get(thread_id)
        if claim.put_count == 1:  # the claim made the row: nothing to read or carry over
            journal = Journal(claim.id, claim.epoch)
            self._journals.keep(thread_id, journal)
        elif journal is None or (journal.key, journal.epoch, journal.seq) != (
            claim.id,
            claim.epoch,
            claim.put_count - 1,
        ):  # another process wrote since: catch up (the lock holds it back now)
            journal = await self._journal(conn, thread_id)
        if journal is not None and not all(journal.knows(*parent) for parent in parents):
            # a put from a checkpoint that a partial journal does not know
            journal = await self._journal(conn, thread_id, whole=True)
        if journal is None or journal.seq >= claim.put_count:
            raise RuntimeError(f"Thread {thread_id!r} changed under its lock")
        draft = self._draft(journal, claim.put_count, saves)
        await conn.execute(self._add_save, await self._rows(conn, claim.id, draft))
        return draft

    def _draft(self, journal: Journal, seq: int, saves: list[Callable[[_Draft], None]]) -> _Draft:
        draft = _Draft(journal, seq, undigested=journal.undigested + 1)
        for save in saves:
            save(draft)
        return draft

    async def _rows(self, conn: AsyncConnection, key: int, draft: _Draft) -> list[dict[str, Any]]:
        """The rows a save stores: its record, and when the thread then has `digest_every`
        records after its last digest, their digest, under the negative of the seq."""
        rows = [{"thread": key, "seq": draft.seq, "data": draft.encode()}]
        if draft.undigested >= self._digest_every:
            found = await conn.execute(_UNDIGESTED, {"thread": key})
            tail = [(seq, data) for seq, data in found]
            draft.undigested = len(tail) + 1  # another process may have digested some
            if draft.undigested >= self._digest_every:
                digest = draft.journal.digest(tail, draft.seq, draft.record)
                rows.append({"thread": key, "seq": -draft.seq, "data": encode(digest).data})
                draft.undigested = 0
        return rows

    def _put(self, op: PutCheckpoint) -> Callable[[_Draft], None]:
        _, ns = thread_key(op.config)
        checkpoint, new_versions = op.checkpoint, op.new_versions
        parent_id = op.config["configurable"].get("checkpoint_id")
        metadata = json.loads(self.serde.dumps(op.metadata))
        parents = metadata.get("parents")  # the enclosing graphs' checkpoints, by namespace

        def put(draft: _Draft) -> None:
            known = self._plan(
                draft,
                ns,
                checkpoint,
                new_versions,
                self._parent(draft, ns, parent_id),
                parents if isinstance(parents, dict) else {},
            )
            entry = CheckpointEntry(
                ns=ns,
                id=checkpoint["id"],
                parent=parent_id,
                metadata=metadata,
                v=checkpoint["v"],
                ts=checkpoint["ts"],
                # Copies: the journal keeps them, the caller keeps its checkpoint.
                channel_versions=dict(checkpoint["channel_versions"]),
                versions_seen={n: dict(v) for n, v in checkpoint["versions_seen"].items()},
                updated_channels=_copy(checkpoint.get("updated_channels")),
                inline=_join_object(known.inline),
                stored=known.stored,
            )
            draft.record.checkpoints.append(entry)
            draft.known[ns] = known

        return put

    def _writes(self, op: PutWrites) -> Callable[[_Draft], None] | None:
        _, ns = thread_key(op.config)
        checkpoint_id = op.config["configurable"].get("checkpoint_id")
        if not checkpoint_id:
            raise ValueError("Writes belong to a checkpoint: the config needs a checkpoint_id")
        dump = self._dumper()
        # A list may be the thread's history (what a subgraph hands back): it is written
        # in the transaction, which knows the lists it may share (`_splice`).
        texts = [None if type(value) is list and value else dump(value) for _, value in op.writes]
        if not texts:
            return None

        def save(draft: _Draft) -> None:
            draft.record.writes.extend(
                (
                    ns,
                    checkpoint_id,
                    op.task_id,
                    SPECIAL_WRITES.get(channel, idx),
                    channel,
                    op.task_path,
                    self._splice(draft, ns, channel, value, dump) or dump(value)
                    if text is None
                    else text,
                )
                for idx, ((channel, value), text) in enumerate(zip(op.writes, texts, strict=True))
            )

        return save

    def _parent(self, draft: _Draft, ns: str, parent_id: str | None) -> Known | None:
        if parent_id is None:
            return None
        known = draft.known.get(ns) or draft.journal.known.get(ns)
        if known is not None and known.checkpoint_id == parent_id:
            return known
        entry = draft.checkpoint(ns, parent_id)
        if entry is None:  # the parent is gone (pruned): store every value the child carries
            return None
        return Known(parent_id, entry.channel_versions, self._inline(entry.inline), entry.stored)

    def _plan(
        self,
        draft: _Draft,
        ns: str,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        parent: Known | None,
        parents: Mapping[str, Any],
    ) -> Known:
        """Sort each channel: shared with the parent when its version did not change, else
        inline, a blob, or new items appended to the channel's log (`parents`: the
        checkpoints of the enclosing graphs, by namespace, as in the metadata)."""
        values = checkpoint["channel_values"]
        dump = self._dumper()
        known = Known(
            checkpoint["id"], checkpoint["channel_versions"], {}, {}, lendable=self.reuse_objects
        )
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
            data: JsonText | None
            if isinstance(previous, list):
                data = None
            elif type(value) is list:
                data = _small_array(value, dump)  # a long list is not dumped whole
            else:
                data = self._splice(draft, ns, channel, value, dump) or dump(value)
            if type(value) is list and (data is None or len(data) > INLINE_MAX):
                if parent and isinstance(previous, list):
                    base = previous, parent.elements.get(channel)
                else:
                    base = self._enclosing(draft, ns, channel, value, parents)
                self._append(draft, (ns, channel), value, *base, known, dump)
            elif data is None or type(data) is not str or len(data) > INLINE_MAX:
                known.stored[channel] = self._add_blob(
                    draft, (ns, channel, str(version)), data or dump(value), checkpoint["id"]
                )
            else:
                known.inline[channel] = data
        return known

    def _add_blob(
        self, draft: _Draft, key: tuple[str, str, str], data: JsonText, checkpoint_id: str
    ) -> str:
        """Store a big value under its channel version, the key of the blob (a fork
        counts versions up from its parent, so another branch may have taken it with a
        different value: then the key is made unique with the checkpoint id; so it is
        when the journal is partial, as it may not hold that branch)."""
        taken = draft.blob(key)
        if taken == data:
            return key[2]
        if taken is not None or draft.journal.partial:
            key = (key[0], key[1], f"{key[2]}#{checkpoint_id}")
        draft.record.blobs.append((*key, data))
        return key[2]

    def _append(
        self,
        draft: _Draft,
        log: Log,
        value: list[Any],
        segments: Segments,
        held: Held | None,
        known: Known,
        dump: Callable[[Any], str],
    ) -> None:
        """Store a list version as the longest prefix it shares with the parent's version
        (`segments`, or the enclosing namespace's: see `_enclosing`) plus its new tail:
        O(new elements) for a growing chat. The tail goes to the log the prefix ends in
        (a subgraph's own log only if it shares nothing with its graph's list), and when
        the version that log got last holds the same objects after the same prefix (what
        a subgraph added, which its graph's next version holds too), they are shared."""
        common = min(len(value), sum(span[1] - span[0] for span in segments))
        same = 0 if held is None else draft.prefix(held, value, common, dump)
        stamps: list[Prepared | Stored] = [] if held is None else held.stamps[:same]
        encoded: dict[int, str] = {}
        if same < common:  # fresh objects, or one changed in place: compare stored text
            shared = truncate(segments, common)
            stored = [e for part in draft.version_runs(log, shared) for e in part.split(SEP)]
            while same < common:
                encoded[same] = dump(value[same])
                if encoded[same] != stored[same]:
                    break
                stamps.append(Stored(stored[same]))
                same += 1
        kept = truncate(segments, same)
        elements = Held(list(value), stamps)
        draft.stored_now[id(elements)] = elements
        if same < len(value):
            ns, channel = log
            owner = kept[-1][2] if kept and len(kept[-1]) > 2 else ns
            target = (owner, channel)
            kept = rebase(kept, ns, owner)
            tip = draft.tips.get(target) or draft.journal.tips.get(target)
            if tip is not None and truncate(tip[0], same) == kept:
                shared_to = draft.prefix(tip[1], value, len(value), dump, same)
                stamps += tip[1].stamps[same:shared_to]
                same = shared_to
                kept = truncate(tip[0], same)
            tail = range(same, len(value))
            if tail:
                end = draft.log_end(target)
                kept = extend(kept, end, len(tail))
                if len(kept) > MAX_SEGMENTS:  # too fragmented to read fast: write it out whole
                    tail, kept = range(len(value)), [[end, end + len(value)]]
                texts = [encoded.get(i) or dump(value[i]) for i in tail]
                stamps[tail.start :] = self._stamps(texts)  # compared in C by later puts
                draft.record.items.append((*target, end, len(tail), SEP.join(texts)))
                draft.tips[target] = (kept, elements)
            kept = rebase(kept, owner, ns)
        known.stored[log[1]] = kept
        known.elements[log[1]] = elements

    def _enclosing(
        self, draft: _Draft, ns: str, channel: str, value: list[Any], parents: Mapping[str, Any]
    ) -> tuple[Segments, Held | None]:
        """What the first version of a list in namespace `ns` may share its prefix with:
        the channel's version in the enclosing namespace (a subgraph's first checkpoint
        holds the history its graph passed in, and a subgraph run per call starts a new
        namespace every turn), and its elements when the loop holds the same objects;
        else the version of the enclosing graph's checkpoint (`parents`), to compare with
        the stored text."""
        if not ns:
            return [], None
        owner = enclosing(ns)
        for known in (draft.known.get(owner), draft.journal.known.get(owner)):
            held = known.elements.get(channel) if known else None
            if held and held.objects and value and held.objects[0] is value[0]:
                return rebase(known.stored[channel], owner, ns), held
        entry = draft.checkpoint(owner, parents[owner]) if parents.get(owner) else None
        segments = entry.stored.get(channel) if entry else None
        return (rebase(segments, owner, ns), None) if isinstance(segments, list) else ([], None)

    def _shared(
        self, draft: _Draft, ns: str, channel: str, value: list[Any], dump: Callable[[Any], str]
    ) -> tuple[Segments, int] | None:
        """The longest prefix of `value` that is, object for object, a version of list
        channel `channel` that the loop put or read last in `ns` or a namespace enclosing
        it, each element still as stored: its segments as `ns` holds them, and its
        length. None if it starts otherwise."""
        owner: str | None = ns
        while owner is not None:
            for known in (draft.known.get(owner), draft.journal.known.get(owner)):
                held = known.elements.get(channel) if known else None
                if held and held.objects and value and held.objects[0] is value[0]:
                    same = draft.prefix(held, value, len(value), dump)
                    if same:
                        return rebase(truncate(known.stored[channel], same), owner, ns), same
            owner = enclosing(owner) if owner else None
        return None

    def _splice(
        self, draft: _Draft, ns: str, channel: str, value: Any, dump: Callable[[Any], str]
    ) -> tuple[str | Shared, ...] | None:
        """The JSON of a value to store in namespace `ns` with the lists it shares with
        the item logs (`_shared`) as references to their elements: a list written to a
        list channel (a subgraph's output, the history it got and its new messages), or
        such lists in a dict under their channels' names (a subgraph's input). Without
        them every turn of a graph whose reply comes from a subgraph would store the
        whole history again, three times. None if it shares none."""
        if type(value) is list:
            found = self._shared(draft, ns, channel, value, dump)
            if found is None:
                return None
            segments, same = found
            tail = "".join("," + dump(element) for element in value[same:])
            return ("[", Shared(channel, segments), tail + "]")
        if type(value) is not dict or TAG in value or any(type(k) is not str for k in value):
            return None
        lists = {
            k: self._shared(draft, ns, k, v, dump) for k, v in value.items() if type(v) is list
        }
        if not any(lists.values()):
            return None
        parts: list[str | Shared] = []
        text = "{"
        for key, item in value.items():
            text += json.dumps(key) + ":"
            found = lists.get(key)
            if found is None:
                text += dump(item) + ","
                continue
            segments, same = found
            parts += [text + "[", Shared(key, segments)]
            text = "".join("," + dump(element) for element in item[same:]) + "],"
        parts.append(text[:-1] + "}")
        return tuple(parts)

    def _inline(self, data: str | None) -> dict[str, str]:
        return {c: self._dump(v) for c, v in self._parse(data).items()} if data else {}

    def _dump(self, value: Any) -> str:
        return self.serde.dumps(value).decode()

    def _dumper(self) -> Callable[[Any], str]:
        """`_dump` for the values of one save, each object dumped once: a state built by
        reducers holds the same elements in many lists, and many times in one. The
        objects stay alive, so their ids stay theirs, while the save is planned."""
        dumps = self.serde.dumps
        memo: dict[int, str] = {}

        def dump(value: Any) -> str:
            text = memo.get(id(value))
            if text is None:
                if type(value) is list and holds_repeats(value):
                    text = "[" + ",".join(map(dump, value)) + "]"
                else:
                    text = dumps(value).decode()
                memo[id(value)] = text
            return text

        return dump

    def _parse(self, data: str) -> Any:
        return self.serde.loads(data)

    # Deleting, copying and pruning.

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread and leave a tombstone, so a
        late write from a run that was still finishing raises ThreadDeletedError instead
        of bringing the thread back, until a new thread takes the id (`revive`)."""
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
                await conn.execute(delete(save_table).where(save_table.c.thread == key))

        await self._retry(delete_thread)
        self._journals.drop(thread_id)

    async def acopy_thread(
        self,
        source_thread_id: str,
        target_thread_id: str,
        *,
        along: Callable[[AsyncConnection], Awaitable[None]] | None = None,
    ) -> None:
        """Copy every checkpoint, value and write to a thread that has no checkpoints, under
        the same ids; metadata that records the source thread id names the target instead.
        Raises ValueError if the target has checkpoints (a copy never merges histories),
        ThreadDeletedError if the source was deleted. `along` runs in the copy's
        transaction: what its caller writes with the copy (a server's thread row) is
        committed with it or not at all, whatever stops the process."""
        source_id, target_id = str(source_thread_id), str(target_thread_id)

        async def copy_thread() -> None:
            async with write_transaction(self.engine) as conn:
                if along is not None:
                    await along(conn)
                locked = {}
                for thread_id in sorted({source_id, target_id}):  # one lock order: no deadlock
                    locked[thread_id] = await (
                        self._claim(conn, thread_id)
                        if thread_id == target_id
                        else self._locked(conn, thread_id)
                    )
                source, target = locked[source_id], locked[target_id]
                if source is None:  # no checkpoints: nothing to copy
                    return
                if source.deleted_at is not None:
                    raise ThreadDeletedError(source_id)
                if await conn.scalar(select(exists().where(save_table.c.thread == target.id))):
                    raise ValueError(
                        f"Thread {target_id!r} has checkpoints: copy into a new thread"
                    )
                rows = await conn.execute(
                    select(save_table.c.seq, save_table.c.data)
                    .where(save_table.c.thread == source.id)
                    .order_by(save_table.c.seq)
                )
                copies = _renamed(list(rows), source_id, target_id)
                for copy in copies:
                    copy["thread"] = target.id
                if copies:
                    await conn.execute(save_table.insert(), copies)
                await conn.execute(
                    update(thread_table)
                    .where(thread_table.c.id == target.id)
                    .values(
                        put_count=max(source.put_count, target.put_count),
                        epoch=thread_table.c.epoch + 1,
                    )
                )

        await self._retry(copy_thread)
        self._journals.drop(target_id)

    async def aprune(
        self,
        thread_ids: Iterable[str] | None = None,
        *,
        keep_last_turns: int | None = None,
        strategy: Literal["keep_latest", "delete"] | None = None,
    ) -> int:
        """Keep the latest `keep_last_turns` turns of each thread (a turn starts at an input
        checkpoint) and delete the older checkpoints except branch points, branch tips
        (the last state of an abandoned branch) and checkpoints with an interrupt, so every
        branch stays visible and pruning again changes nothing. A kept checkpoint whose
        parent goes is linked to its nearest kept ancestor; values no kept checkpoint uses
        are deleted. No thread_ids means every thread with more turns. Returns how many
        checkpoints were deleted.

        Or LangGraph's `strategy`, for the threads named: "keep_latest" keeps only each
        namespace's latest checkpoint, "delete" deletes the threads."""
        if strategy is not None:
            return await self._prune_as_langgraph(thread_ids, keep_last_turns, strategy)
        if keep_last_turns is None:
            raise TypeError("aprune() needs keep_last_turns, or LangGraph's strategy")
        if keep_last_turns < 1:
            raise ValueError("keep_last_turns must be at least 1: the latest turn is the state")
        if thread_ids is None:
            turns = Counter(
                (thread_id, summary.ns)
                for thread_id, summary in await self._retry(self._summaries)
                if summary.metadata.get("source") == "input"
            )
            thread_ids = sorted({t for (t, _), n in turns.items() if n > keep_last_turns})
        deleted = 0
        for thread_id in thread_ids:
            deleted += await self._rewrite(
                str(thread_id), lambda journal: prune_plan(journal, keep_last_turns)
            )
        return deleted

    async def _prune_as_langgraph(
        self, thread_ids: Iterable[str] | None, keep_last_turns: int | None, strategy: str
    ) -> int:
        if keep_last_turns is not None or thread_ids is None:
            raise TypeError("aprune(thread_ids, strategy=...) takes thread ids, and no turns")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"Unknown prune strategy {strategy!r}: 'keep_latest' or 'delete'")
        deleted = 0
        for thread_id in thread_ids:
            if strategy == "delete":
                deleted += await self._count(str(thread_id))
                await self.adelete_thread(str(thread_id))
            else:
                deleted += await self._rewrite(str(thread_id), latest_plan)
        return deleted

    async def _count(self, thread_id: str) -> int:
        journal = await self._retry(lambda: self._read_journal(thread_id, whole=True))
        return 0 if journal is None else len(journal.checkpoints)

    def prune(
        self,
        thread_ids: Iterable[str] | None = None,
        *,
        keep_last_turns: int | None = None,
        strategy: Literal["keep_latest", "delete"] | None = None,
    ) -> int:  # type: ignore[override]
        return self._sync(
            self.aprune(thread_ids, keep_last_turns=keep_last_turns, strategy=strategy)
        )

    async def adelete_run(self, thread_id: str, run_id: str) -> None:
        """Remove the checkpoints whose metadata names `run_id`, with their pending writes
        and the values only they used: what a rolled-back run wrote. Writes it saved on a
        checkpoint it did not create (a resume's answers) stay."""

        def plan(journal: Journal) -> tuple[set[Place], dict[Place, str | None]]:
            doomed = {
                place
                for place, entry in journal.checkpoints.items()
                if entry.metadata.get("run_id") == run_id
            }
            return doomed, {}

        await self._rewrite(str(thread_id), plan)

    async def _rewrite(
        self,
        thread_id: str,
        plan: Callable[[Journal], tuple[set[Place], dict[Place, str | None]]],
    ) -> int:
        """Delete the checkpoints `plan` picks from the thread: its records are replaced by
        one holding what is kept (a new epoch, which every saver's journal follows).
        Returns how many were deleted."""

        async def rewrite() -> int:
            async with write_transaction(self.engine) as conn:
                t = thread_table.c
                seq = await conn.scalar(
                    update(thread_table)
                    .where(t.thread_id == thread_id, t.deleted_at.is_(None))
                    .values(**_CHANGED)
                    .returning(t.put_count)
                )
                journal = None if seq is None else await self._journal(conn, thread_id, keep=False)
                if journal is None:
                    return 0
                doomed, relinked = plan(journal)
                if doomed:
                    data = encode(journal.without(doomed, relinked)).data
                    key = journal.key
                    await conn.execute(delete(save_table).where(save_table.c.thread == key))
                    await conn.execute(self._add_save, {"thread": key, "seq": seq, "data": data})
                return len(doomed)

        try:
            return await self._retry(rewrite)
        finally:
            self._journals.drop(thread_id)

    async def adelete_idle_threads(self, idle_for: timedelta) -> list[str]:
        """Delete (and tombstone) every thread with no checkpoint written for `idle_for`;
        returns their ids. A thread written to meanwhile is spared."""
        cutoff = datetime.now(UTC) - idle_for
        idle = and_(thread_table.c.deleted_at.is_(None), thread_table.c.last_write_at < cutoff)

        async def candidates() -> list[str]:
            async with self._reader.connect() as conn:
                found = await conn.execute(select(thread_table.c.thread_id).where(idle))
                return list(found.scalars())

        deleted = []
        for thread_id in await self._retry(candidates):

            async def delete_if_idle(thread_id: str = thread_id) -> bool:
                async with write_transaction(self.engine) as conn:
                    key = await conn.scalar(
                        update(thread_table)
                        .where(thread_table.c.thread_id == thread_id, idle)
                        .values(deleted_at=datetime.now(UTC), **_CHANGED)
                        .returning(thread_table.c.id)
                    )
                    if key is not None:
                        await conn.execute(delete(save_table).where(save_table.c.thread == key))
                    return key is not None

            if await self._retry(delete_if_idle):
                self._journals.drop(thread_id)
                deleted.append(thread_id)
        return deleted

    async def arevive_thread(self, thread_id: str) -> None:
        """Let a deleted thread's id be written again, for a client that deliberately
        creates a new thread under the old id. (Until then its tombstone refuses writes,
        so a run of the deleted thread that is still finishing cannot bring it back.)"""
        thread_id = str(thread_id)
        revive = self.revive(bindparam("revived", type_=Text))

        async def revive_thread() -> None:
            async with write_transaction(self.engine) as conn:
                await conn.execute(revive, {"revived": thread_id})

        await self._retry(revive_thread)

    def deleted_before(
        self, thread_id: ColumnElement[Any], before: datetime
    ) -> ColumnElement[bool]:
        """Whether the thread `thread_id` names was deleted before `before` (its tombstone),
        as a condition of a caller's query: a server finds the threads whose delete a
        crash cut short, between their checkpoints and their own row."""
        t = thread_table.c
        return exists().where(t.thread_id == cast(thread_id, Text), t.deleted_at < before)

    def revive(self, thread_id: ColumnElement[Any]) -> Executable:
        """`arevive_thread` as a statement (`thread_id`: a parameter of it), for the
        caller's transaction that makes the new thread: it is writable from the moment
        it exists. A thread not deleted is left as it is. Once revived, the saver no
        longer tells the old thread's late writers from the new one's: whoever revives
        fences them (the server: a deleted thread's runs lost their rows, and their
        fence refuses their saves)."""
        t = thread_table.c
        return (
            update(thread_table)
            .where(t.thread_id == cast(thread_id, Text), t.deleted_at.is_not(None))
            .values(deleted_at=None, **_CHANGED)
        )

    # Transactions.

    async def _claim(self, conn: AsyncConnection, thread_id: str) -> Row[Any]:
        """Lock the thread's row for this transaction (creating it on the first write),
        counting one more record, and return its id (the thread's key), put_count (the
        new record's seq) and epoch; refuse a deleted thread."""
        params = {"thread_id": thread_id, "now": datetime.now(UTC)}
        row = (await conn.execute(self._claim_thread, params)).one()
        if row.deleted_at is not None:
            raise ThreadDeletedError(thread_id)
        return row

    async def _locked(self, conn: AsyncConnection, thread_id: str) -> Row[Any] | None:
        """The thread's row, locked for this transaction without changing it; None if the
        thread was never written."""
        t = thread_table.c
        query = select(t.id, t.put_count, t.deleted_at).where(t.thread_id == thread_id)
        return (await conn.execute(query.with_for_update())).first()

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
            return str(sqlstate).startswith(TRANSIENT_SQLSTATES)
        # No SQLSTATE: the server was not reached at all (refused, reset, starting up). On
        # SQLite such errors are local and final (the busy timeout already waited).
        return self._dialect != "sqlite" and isinstance(exc, OperationalError | InterfaceError)


def _renamed(rows: list[Any], source_id: str, target_id: str) -> list[dict[str, Any]]:
    """A thread's rows (by seq: digests, then records) for a copy of it, where metadata
    that names the source names the target: each decoded and encoded again, a record
    chained to the one before it as it was (`records.chained`)."""

    def rename(record: Record) -> Record:
        for entry in record.checkpoints:
            if entry.metadata.get("thread_id") == source_id:
                entry.metadata = {**entry.metadata, "thread_id": target_id}
        return record

    copies = [
        {"seq": seq, "data": encode(rename(decode(data).record)).data}
        for seq, data in rows
        if seq < 0
    ]
    kept = [(seq, data) for seq, data in rows if seq > 0]
    before = None
    for (seq, data), record in zip(kept, decode_thread(data for _, data in kept), strict=True):
        copy, before = encode(rename(record), before if chained(data) else None)
        copies.append({"seq": seq, "data": copy})
    return copies


def _copy(channels: list[str] | None) -> list[str] | None:
    return None if channels is None else list(channels)


def _kept(
    known: Known | None,
    entry: CheckpointEntry,
    channel: str,
    dumper: Callable[[], Callable[[Any], str]],
) -> Held | None:
    """The list the put of this very checkpoint was handed (`SQLSaver.reuse_objects`),
    as a new list of the same objects, if each is still as stored: the next turn of a
    chat then loads its history without building thousands of messages again. An object
    changed in place since is found, and the list built. The read that gets them keeps
    them as its own (`Known` not `lendable`): no two reads share an object."""
    if known is None or not known.lendable or known.checkpoint_id != entry.id:
        return None
    held = known.elements.get(channel)
    if held is None or known.stored.get(channel) != entry.stored[channel]:
        return None
    objects, count = held.objects, len(held.objects)
    if count != len(held.stamps) or held.prefix(objects, count, dumper()) != count:
        return None
    return Held(list(objects), held.stamps)


def _small_array(value: list[Any], dump: Callable[[Any], str]) -> str | None:
    """The JSON of a list that fits inline, from its elements' JSON; None for a longer
    one, found without dumping more than the first elements of it."""
    texts = []
    size = 1
    for element in value:
        texts.append(dump(element))
        size += len(texts[-1]) + 1
        if size > INLINE_MAX:
            return None
    return "[" + ",".join(texts) + "]"


def _join_object(values: dict[str, str]) -> str | None:
    """The JSON object of serialized values (what serializing the dict would give)."""
    if not values:
        return None
    return "{" + ",".join(f"{json.dumps(c)}:{v}" for c, v in values.items()) + "}"


def _create_alone(condition: ColumnElement[bool]) -> Any:
    """A new thread's first record and its row in one statement (PostgreSQL): the row is
    added only if the thread has none (not even a deleted one's) and `condition` holds;
    the record goes in with it, as the thread's first. A row (the thread's key) comes back
    if both were made."""
    t = thread_table.c
    row = select(
        _THREAD_ID,
        literal(1, BigInteger),
        literal(0, BigInteger),
        bindparam("now", type_=t.last_write_at.type),
    ).where(condition)
    created = (
        postgresql.insert(thread_table)
        .from_select(["thread_id", "put_count", "epoch", "last_write_at"], row)
        .on_conflict_do_nothing(index_elements=["thread_id"])
        .returning(t.id)
        .cte("created")
    )
    first = select(
        created.c.id, literal(1, BigInteger), bindparam("data", type_=save_table.c.data.type)
    )
    return (
        save_table.insert()
        .from_select(["thread", "seq", "data"], first)
        .returning(save_table.c.thread)
    )


def _add_alone(condition: ColumnElement[bool]) -> Any:
    """A save's record and the claim of its thread's row in one statement (PostgreSQL):
    the claim counts the row's `put_count` up only if the row is as the journal knew it
    (key, epoch, the record's seq next) and not deleted, and `condition` holds; the
    record goes in with it. A row comes back if both were made."""
    claim = (
        update(thread_table)
        .where(
            thread_table.c.id == bindparam("key"),
            thread_table.c.put_count == bindparam("last_seq"),
            thread_table.c.epoch == bindparam("known_epoch"),
            thread_table.c.deleted_at.is_(None),
            condition,
        )
        .values(put_count=thread_table.c.put_count + 1, last_write_at=bindparam("now"))
        .returning(thread_table.c.id, thread_table.c.put_count)
        .cte("claim")
    )
    return (
        save_table.insert()
        .from_select(
            ["thread", "seq", "data"],
            select(claim.c.id, claim.c.put_count, bindparam("data", type_=save_table.c.data.type)),
        )
        .returning(save_table.c.seq)
    )
