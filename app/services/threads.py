"""Threads: a conversation's row (metadata, status, which checkpoint holds the head's
values) beside its checkpoints, which live in the saver. Each belongs to one user:
another user's thread is answered exactly as a missing one."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, Text, bindparam, case, delete, exists, func, null, select
from sqlalchemy import update as sql_update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.db.database import Database, retry_deadlocks
from app.db.models import (
    PENDING,
    RUNNING,
    CronRow,
    ReminderRow,
    RunEventRow,
    RunRow,
    ThreadRow,
    ThreadTTLRow,
    columns_of,
)
from app.errors import Conflict, Invalid, NotFound
from app.graphs import GraphRegistry
from app.jsonable import jsonable, to_json
from app.schemas.common import OnConflict
from app.schemas.threads import (
    Thread,
    ThreadFilter,
    ThreadPrune,
    ThreadSearch,
    ThreadStatus,
    ThreadTTL,
    ThreadTTLInfo,
)
from app.services.common import (
    json_contains,
    new_id,
    now,
    ordered,
    parse_uuid,
    served_graph,
    snapshot_of,
)
from engine import CompiledGraph, StateSnapshot
from engine.checkpoint.sql.saver import SQLSaver, ThreadDeletedError
from engine.errors import CheckpointNotFoundError

if TYPE_CHECKING:
    from app.services.runs.cancels import RunCancels


def owned(thread: ThreadRow | None, thread_id: str, owner: str) -> ThreadRow:
    """The thread if `owner` owns it; else 404, the same for missing and foreign."""
    if thread is None or thread.owner != owner:
        raise NotFound(f"Thread '{thread_id}' not found.")
    return thread


def new_thread(thread_id: str | None, metadata: dict[str, Any] | None, owner: str) -> ThreadRow:
    stamp = now()
    return ThreadRow(
        thread_id=parse_uuid(thread_id, "thread_id") if thread_id else new_id(),
        metadata_=dict(metadata or {}),
        status="idle",
        checkpoint_id=None,
        values=None,
        interrupts={},
        owner=owner,
        created_at=stamp,
        updated_at=stamp,
    )


@functools.cache
def _add_thread(dialect: str) -> Any:
    """The insert of a thread's row (all its columns) that adds nothing when its id is
    in use; its row, the id, only when it added one."""
    add = postgresql.insert if dialect == "postgresql" else sqlite.insert
    table = ThreadRow.__table__
    return (
        add(table).on_conflict_do_nothing(index_elements=["thread_id"]).returning(table.c.thread_id)
    )


def _ttl_row(thread_id: str, ttl: ThreadTTL, since: datetime) -> ThreadTTLRow:
    return ThreadTTLRow(
        thread_id=thread_id,
        strategy=ttl.strategy,
        minutes=ttl.ttl,
        expires_at=since + timedelta(minutes=ttl.ttl),
    )


def taken(thread_id: str) -> Conflict:
    """An id in use, whoever uses it: a foreign thread is never handed out."""
    return Conflict(f"Thread '{thread_id}' already exists.")


async def active_runs(session: AsyncSession, thread_id: str) -> int:
    return int(
        await session.scalar(
            select(func.count())
            .select_from(RunRow)
            .where(RunRow.thread_id == thread_id, RunRow.status.in_((PENDING, RUNNING)))
        )
        or 0
    )


@functools.cache
def settle_statement(changed: tuple[str, ...]) -> Any:
    """`settle`'s statement on SQLite, built once per set of changed columns: a run ends
    with one, every time."""
    # Columns of the tables, not ORM attributes: an ORM-enabled statement is copied on
    # every execution, and its cache key computed anew.
    threads, runs = ThreadRow.__table__.c, RunRow.__table__.c
    thread_id = bindparam("settled_thread")
    waiting = exists().where(runs.thread_id == thread_id, runs.status.in_((PENDING, RUNNING)))
    resting = bindparam("resting", type_=threads.status.type)
    return (
        sql_update(ThreadRow.__table__)
        .where(threads.thread_id == thread_id)
        .values(
            status=case((waiting, "busy"), else_=resting),
            updated_at=bindparam("now"),
            **{name: bindparam(f"new_{name}") for name in changed},
        )
        .returning(threads.status)
    )


# The columns of a thread's row that its head sets (`Head.columns`).
HEAD_COLUMNS = ("checkpoint_id", "values", "interrupts")
# How a thread's last ended run ended, and its result (a failed run's keeps its error).
_LAST_ENDED = (
    select(RunRow.status, RunRow.result)
    .where(RunRow.thread_id == bindparam("thread_id"), RunRow.status.not_in((PENDING, RUNNING)))
    .order_by(RunRow.updated_at.desc(), RunRow.run_id.desc())
    .limit(1)
)


@functools.cache
def settle_call(*, ending: bool = False) -> Any:
    """`settle` on PostgreSQL: the `threadline_settle` function (migration 0025), which
    checks the thread's runs again once it holds the row. One UPDATE would read them in
    the snapshot it started with, before an admission holding the row added one.
    `ending`: for a statement that also records the end of the run `ended_run` (in
    whose snapshot that run still runs): it does not count as waiting."""
    threads, runs = ThreadRow.__table__.c, RunRow.__table__.c
    return func.threadline_settle(
        bindparam("settled_thread", type_=threads.thread_id.type),
        bindparam("ended_run", type_=runs.run_id.type) if ending else null(),
        bindparam("resting", type_=threads.status.type),
        bindparam("now", type_=threads.updated_at.type),
        bindparam("settled_changed", type_=postgresql.ARRAY(Text)),
        bindparam("new_checkpoint_id", type_=threads.checkpoint_id.type),
        bindparam("new_values", type_=threads["values"].type),
        bindparam("new_interrupts", type_=threads.interrupts.type),
        type_=threads.status.type,
    )


async def settle(
    session: AsyncSession, thread_id: str, status: ThreadStatus, **changes: Any
) -> bool:
    """Set what a finished run leaves, in one statement (the row, whose values can be a
    long chat, is not read); the thread stays busy while other runs wait. True when
    other runs wait: one of them may start now."""
    params = settle_params(thread_id, status, changes)
    if session.get_bind().dialect.name == "postgresql":
        settled = await session.scalar(select(settle_call()), params)
    else:
        settled = await session.scalar(settle_statement(tuple(sorted(changes))), params)
    return settled == "busy"


def settle_params(thread_id: str, status: ThreadStatus, changes: dict[str, Any]) -> dict[str, Any]:
    """The parameters of `settle_statement` and `settle_call`."""
    return {
        "settled_thread": thread_id,
        "resting": status,
        "now": now(),
        "settled_changed": sorted(changes),
        **{f"new_{name}": changes.get(name) for name in HEAD_COLUMNS},
    }


@dataclass(frozen=True, slots=True)
class Head:
    """What a thread row keeps of its head: its resting status, the checkpoint whose saved
    values are the thread's values, or the values when no checkpoint's are (None, None
    before the first checkpoint), and the open interrupts by task id."""

    status: ThreadStatus
    checkpoint_id: str | None
    values: dict[str, Any] | None
    interrupts: dict[str, Any]

    @property
    def columns(self) -> dict[str, Any]:
        """`settle`'s changes."""
        return {
            "checkpoint_id": self.checkpoint_id,
            "values": self.values,
            "interrupts": self.interrupts,
        }


async def head_of(graph: CompiledGraph, state: StateSnapshot, *, saved: bool) -> Head:
    """The head `state` (of `graph`'s thread) as its row keeps it. `saved`: its values are
    its checkpoint's as saved (a run that ended at END); otherwise they are compared with
    those, as a live state shows what tasks of an open step wrote, and a Command's update."""
    status: ThreadStatus = "interrupted" if state.next else "idle"
    interrupts = {t.id: jsonable(t.interrupts) for t in state.tasks if t.interrupts}
    if state.metadata is None:
        return Head(status, None, None, interrupts)
    if not saved and to_json(state.values) != to_json(await graph.aget_saved_values(state.config)):
        return Head(status, None, jsonable(state.values), interrupts)
    return Head(status, state.config["configurable"]["checkpoint_id"], None, interrupts)


def _contains(doc: Any, subset: Any) -> bool:
    """PostgreSQL's `@>` on JSON values (as `json_contains` filters in SQL): objects
    match key by key, an array contains every given element, scalars are equal (and of
    one JSON type: true is not 1)."""
    if isinstance(subset, dict):
        return isinstance(doc, dict) and all(
            key in doc and _contains(doc[key], item) for key, item in subset.items()
        )
    if isinstance(subset, list):
        return isinstance(doc, list) and all(any(_contains(d, s) for d in doc) for s in subset)
    if isinstance(subset, bool) or isinstance(doc, bool):
        return type(doc) is type(subset) and doc == subset
    if isinstance(subset, int | float):
        return isinstance(doc, int | float) and doc == subset
    return doc == subset


class Change:
    """A change of a thread's checkpoints outside a run, while it holds the thread (see
    `ThreadService.changing`)."""

    def __init__(
        self,
        threads: ThreadService,
        thread_id: str,
        session: AsyncSession | None = None,
        status: str | None = None,
    ) -> None:
        self.threads = threads
        self.thread_id = thread_id
        # PostgreSQL: the transaction that holds the thread's row locked, in which the
        # row is read and written (another transaction would wait for the lock), and
        # the status the row had when locked.
        self.session = session
        self.status = status

    async def busy(self) -> bool:
        """Whether runs are pending or running on the thread: a change now would move
        the head they continue from."""
        if self.session is not None:
            return self.status == "busy" or await active_runs(self.session, self.thread_id) > 0
        async with self.threads.db.read() as session:
            status = await session.scalar(
                select(ThreadRow.status).where(ThreadRow.thread_id == self.thread_id)
            )
            if status is None:
                raise NotFound(f"Thread '{self.thread_id}' not found.")
            return status == "busy" or await active_runs(session, self.thread_id) > 0

    async def refresh(self, graph: CompiledGraph) -> None:
        """Set the thread row from its head checkpoint, which the change moved."""
        if self.session is None:
            await self.threads.refresh(self.thread_id, graph)
            return
        head = await self.threads.head_from_checkpoints(self.thread_id, graph)
        await settle(self.session, self.thread_id, head.status, **head.columns)


class ThreadService:
    """Thread lifecycle: create, read, search, update, delete (its runs stopped first),
    copy, prune; and what a run's end leaves on its row (`settle`, `head_of`)."""

    def __init__(
        self,
        db: Database,
        graphs: GraphRegistry,
        saver: SQLSaver,
        cancels: RunCancels,
    ) -> None:
        self.db = db
        self.graphs = graphs
        self.saver = saver
        self.cancels = cancels
        self._revive = saver.revive(bindparam("revived"))
        # This process's changes of each thread's checkpoints outside runs, one at a time.
        self._changing: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        # SQLite (one process): threads whose time to live ran out, being deleted; a run's
        # admission refuses them (see `_expire`).
        self.expiring: set[str] = set()

    settle = staticmethod(settle)
    head_of = staticmethod(head_of)

    async def get(self, thread_id: str, *, owner: str) -> ThreadRow:
        key = parse_uuid(thread_id, "thread_id")
        async with self.db.read() as session:
            return owned(await session.get(ThreadRow, key), thread_id, owner)

    async def create(
        self,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: OnConflict = "raise",
        *,
        ttl: ThreadTTL | None = None,
        owner: str,
    ) -> ThreadRow:
        """A new thread, by a statement that adds nothing when the id is in use: that
        thread then, if it is the owner's and `if_exists` is "do_nothing", else 409. A new
        random id without `ttl` is that statement alone; else a transaction holds, with
        it, the time to live, and for an id the client gave (a deleted thread's, maybe)
        the id made writable again (`reuse`)."""
        self._check_graph_id(metadata or {})
        thread = new_thread(thread_id, metadata, owner)
        while not await self._add(thread, ttl, named=thread_id is not None):
            async with self.db.read() as session:
                existing = await session.get(ThreadRow, thread.thread_id)
            if existing is None:
                continue  # deleted since: the id is free again
            if if_exists == "do_nothing" and existing.owner == owner:
                return existing
            raise taken(thread.thread_id)
        return thread

    async def _add(self, thread: ThreadRow, ttl: ThreadTTL | None, *, named: bool) -> bool:
        """Insert the thread's row (and its time to live); False when the id is in use.
        `named`: the client chose the id, which a deleted thread may have had. (A new
        random id never had one: its thread is one statement.)"""
        if ttl is None and not named:
            return bool(await self.db.write_one(_add_thread(self.db.dialect), columns_of(thread)))
        async with self.db.write() as session:
            added = await session.execute(_add_thread(self.db.dialect), columns_of(thread))
            if added.first() is None:
                return False
            if named:
                await self.reuse(session, thread.thread_id)
            if ttl is not None:
                session.add(_ttl_row(thread.thread_id, ttl, thread.updated_at))
        return True

    async def reuse(self, session: AsyncSession, thread_id: str) -> None:
        """In the transaction that adds a thread's row: if a deleted thread had the id,
        its checkpoints' tombstone goes, and the new thread can be written. A run of the
        deleted thread still finishing stays refused: its row went with the thread, and
        the saver's fence refuses the checkpoints of a run that lost its row."""
        await session.execute(self._revive, {"revived": thread_id})

    async def locked_thread(self, session: AsyncSession, thread_id: str) -> None:
        """In the write transaction that adds what hangs on a thread (a cron): the thread
        is there, its row locked until the commit on PostgreSQL, so that a delete either
        waits for the commit and sees what was added, or goes first (404 here)."""
        query = select(ThreadRow.thread_id).where(ThreadRow.thread_id == thread_id)
        if self.db.dialect == "postgresql":
            query = query.with_for_update()
        if await session.scalar(query) is None:
            raise NotFound(f"Thread '{thread_id}' not found.")

    @contextlib.asynccontextmanager
    async def changing(self, thread_id: str) -> AsyncIterator[Change]:
        """Hold the thread for a change of its checkpoints outside a run (a state update
        reads the head, then writes on it: two at once would both write on one head, and
        the head would keep one of them). Changes take turns: in this process at a lock
        of the thread, across processes (PostgreSQL) at its row, locked until the change
        commits; a run's admission waits there too. One waiter per process holds a
        connection. SQLite serves one process: the lock is enough. 404 when the thread
        is gone."""
        turn = self._changing.setdefault(thread_id, asyncio.Lock())
        async with turn:
            if self.db.dialect != "postgresql":
                yield Change(self, thread_id)
                return
            async with self.db.write() as session:
                locked = await session.scalar(
                    select(ThreadRow.status)
                    .where(ThreadRow.thread_id == thread_id)
                    .with_for_update()
                )
                if locked is None:
                    raise NotFound(f"Thread '{thread_id}' not found.")
                yield Change(self, thread_id, session, locked)

    async def ttl_of(self, thread: ThreadRow) -> ThreadTTLInfo | None:
        async with self.db.read() as session:
            found = await session.get(ThreadTTLRow, thread.thread_id)
        return ThreadTTLInfo.of(found) if found is not None else None

    async def expire(self, *, batch: int = 100) -> int:
        """Apply the time to live of each thread whose look is due: gone (or pruned to its
        latest turn) if it has not changed for its `ttl` minutes and no run is on it; else
        looked at again `ttl` minutes after its last change. How many went or were pruned.
        Replicas sweeping at once repeat each other's work, which is idempotent."""
        done = 0
        while True:
            stamp = now()
            looks = (
                select(ThreadTTLRow, ThreadRow.updated_at, ThreadRow.status)
                .join(ThreadRow, ThreadRow.thread_id == ThreadTTLRow.thread_id)
                .where(ThreadTTLRow.expires_at <= stamp)
                .order_by(ThreadTTLRow.expires_at)
                .limit(batch)
            )
            async with self.db.read() as session:
                due = (await session.execute(looks)).all()
            for ttl, changed_at, status in due:
                lasts = timedelta(minutes=ttl.minutes)
                if status == "busy":
                    changed_at = stamp
                elif changed_at + lasts <= stamp:
                    if ttl.strategy == "delete":
                        done += await self._expire(ttl.thread_id, changed_at)
                        continue
                    done += await self._keep_latest(ttl.thread_id)
                    changed_at = stamp
                async with self.db.write() as session:
                    await session.execute(
                        sql_update(ThreadTTLRow)
                        .where(
                            ThreadTTLRow.thread_id == ttl.thread_id,
                            ThreadTTLRow.expires_at == ttl.expires_at,
                        )
                        .values(expires_at=changed_at + lasts)
                    )
            if len(due) < batch:
                return done

    async def finish_deletes(self, before: datetime, *, batch: int = 100) -> int:
        """Remove the threads whose delete was cut short before `before` (a crash between
        their checkpoints and their row, see `remove`): each was left with its row and
        no state, which reads showed as an empty thread. How many were removed."""
        cut = select(ThreadRow.thread_id).where(
            self.saver.deleted_before(ThreadRow.thread_id, before)
        )
        done = 0
        while True:
            async with self.db.read() as session:
                found = list(await session.scalars(cut.limit(batch)))
            done += sum([await self.remove(thread_id) for thread_id in found])
            if len(found) < batch:
                return done

    async def _expire(self, thread_id: str, changed_at: datetime) -> bool:
        """Delete a thread whose time to live ran out, if it is still idle and unchanged
        since `changed_at`, so that a run admitted meanwhile is never deleted under it:
        on PostgreSQL under its row's lock, which admissions wait for (they then find
        no thread); on SQLite (one process) with this process's admissions of it refused
        meanwhile. Whether it went (when not, the next look comes later)."""

        async def still_idle(session: AsyncSession, lock: bool) -> bool:
            query = select(ThreadRow.status, ThreadRow.updated_at).where(
                ThreadRow.thread_id == thread_id
            )
            row = (await session.execute(query.with_for_update() if lock else query)).first()
            return bool(
                row
                and row.status != "busy"
                and row.updated_at == changed_at
                and not await active_runs(session, thread_id)
            )

        if self.db.dialect == "postgresql":
            async with self.db.write() as session:
                if not await still_idle(session, lock=True):
                    return False
                await self.saver.adelete_thread(thread_id)
                await self._remove_rows(session, thread_id)
            return True
        self.expiring.add(thread_id)
        try:
            # A write: after every admission that began before the thread was marked.
            async with self.db.write() as session:
                if not await still_idle(session, lock=False):
                    return False
            await self.remove(thread_id)
            return True
        finally:
            self.expiring.discard(thread_id)

    async def refresh(self, thread_id: str, graph: CompiledGraph) -> None:
        """Set the thread row from its head checkpoint, after the checkpoints changed
        outside a run (a state update, a copy)."""
        head = await self.head_from_checkpoints(thread_id, graph)
        async with self.db.write() as session:
            await settle(session, thread_id, head.status, **head.columns)

    async def head_from_checkpoints(self, thread_id: str, graph: CompiledGraph) -> Head:
        """The thread's head as its row keeps it, read from its checkpoints (404 when they
        went meanwhile: the thread is being deleted)."""
        state = await snapshot_of(graph, {"configurable": {"thread_id": thread_id}})
        try:
            return await head_of(graph, state, saved=False)
        except CheckpointNotFoundError:
            raise NotFound(f"Thread '{thread_id}' not found: it was deleted.") from None

    async def values_of(self, thread: ThreadRow) -> dict[str, Any] | None:
        """The thread's values: those its row keeps, or its checkpoint's, read with the graph
        of its runs (None when that graph is not served here, or the checkpoint is gone)."""
        if thread.checkpoint_id is None:
            return thread.values
        graph = self._reader_of(thread)
        if graph is None:
            return None
        at = {"thread_id": thread.thread_id, "checkpoint_id": thread.checkpoint_id}
        try:
            return jsonable(await graph.aget_saved_values({"configurable": at}))  # type: ignore[no-any-return]
        except CheckpointNotFoundError:
            return None

    async def error_of(self, thread: ThreadRow) -> dict[str, Any] | None:
        """Why a thread is in `error`: the error its last ended run failed with (None in any
        other status, or when that run did not fail: the failed one was deleted)."""
        if thread.status != "error":
            return None
        async with self.db.read() as session:
            last = (await session.execute(_LAST_ENDED, {"thread_id": thread.thread_id})).first()
        if last is None or last.status != "error":
            return None
        return (last.result or {}).get("__error__")

    async def shown(
        self, thread: ThreadRow, *, with_values: bool = True, values: dict[str, Any] | None = None
    ) -> Thread:
        """The thread on the wire: `values`, else those it has (`with_values=False` leaves
        them out: null)."""
        if values is None and with_values:
            values = await self.values_of(thread)
        return Thread.of(thread, values, await self.error_of(thread))

    def graph_of(self, thread: ThreadRow) -> CompiledGraph | None:
        """The graph that reads the thread's checkpoints: the one its runs ran (or its
        creator named) in metadata `graph_id`; None while it has none, 404 if it is not
        served here."""
        graph_id = (thread.metadata_ or {}).get("graph_id")
        return served_graph(self.graphs, graph_id) if isinstance(graph_id, str) else None

    def _reader_of(self, thread: ThreadRow) -> CompiledGraph | None:
        """`graph_of`, or None where its graph is no longer served (the server restarted
        without it): the thread is still listed, read and copied, without its values."""
        graph_id = (thread.metadata_ or {}).get("graph_id")
        return self.graphs.get(graph_id) if isinstance(graph_id, str) else None

    def _check_graph_id(self, metadata: dict[str, Any]) -> None:
        """422 for metadata `graph_id` naming no graph served here: the thread's state would
        be read with it, and could not be."""
        if "graph_id" not in metadata:
            return
        graph_id = metadata["graph_id"]
        if not isinstance(graph_id, str) or self.graphs.get(graph_id) is None:
            raise Invalid(
                f"metadata.graph_id: {graph_id!r} is not a graph served here (graphs: "
                f"{sorted(self.graphs.graphs)}); it names the graph that reads the thread's state."
            )

    def _filtered(self, query: Select[Any], where: ThreadFilter, owner: str) -> Select[Any]:
        """`query` restricted to the owner's threads that the filter matches in SQL: all but
        `values`, which the checkpoints hold (`_matching`)."""
        dialect = self.db.dialect
        query = query.where(ThreadRow.owner == owner)
        if where.metadata:
            query = query.where(json_contains(dialect, ThreadRow.metadata_, where.metadata))
        if where.status:
            query = query.where(ThreadRow.status == where.status)
        if where.ids is not None:
            query = query.where(ThreadRow.thread_id.in_([parse_uuid(i, "ids") for i in where.ids]))
        return query

    async def search(self, body: ThreadSearch, *, owner: str) -> tuple[list[Thread], int]:
        """One page of matching threads, and how many match in all. Values are read only when
        the page shows them (or `extract` may follow them)."""
        column = getattr(
            ThreadRow, "updated_at" if body.sort_by == "state_updated_at" else body.sort_by
        )
        query = ordered(
            self._filtered(select(ThreadRow), body, owner),
            body.sort_order,
            column,
            ThreadRow.thread_id,
        )
        with_values = not body.select or "values" in body.select or bool(body.extract)
        if body.values:
            found = await self._matching(query, body.values)
            page = found[body.offset : body.offset + body.limit]
            return [await self.shown(row, values=values) for row, values in page], len(found)
        async with self.db.read() as session:
            rows = list(await session.scalars(query.limit(body.limit).offset(body.offset)))
        shown_rows = [await self.shown(row, with_values=with_values) for row in rows]
        return shown_rows, await self.count(body, owner=owner)

    async def count(self, where: ThreadFilter, *, owner: str) -> int:
        """How many threads match, counted in SQL (with a `values` filter, on their values)."""
        if where.values:
            query = self._filtered(select(ThreadRow), where, owner)
            return len(await self._matching(query, where.values))
        async with self.db.read() as session:
            total = await session.scalar(
                self._filtered(select(func.count()).select_from(ThreadRow), where, owner)
            )
        return int(total or 0)

    async def _matching(
        self, query: Select[Any], subset: dict[str, Any]
    ) -> list[tuple[ThreadRow, dict[str, Any] | None]]:
        """The threads of `query` whose values contain `subset`, with their values: each
        thread's values are read, as its checkpoints hold them."""
        async with self.db.read() as session:
            rows = list(await session.scalars(query))
        found: list[tuple[ThreadRow, dict[str, Any] | None]] = []
        for row in rows:
            values = await self.values_of(row)
            if _contains(values, subset):
                found.append((row, values))
        return found

    async def update(
        self,
        thread_id: str,
        metadata: dict[str, Any],
        *,
        ttl: ThreadTTL | None = None,
        owner: str,
    ) -> ThreadRow:
        """Merge `metadata` into the thread's (keys given replace keys kept); with `ttl`,
        its time to live becomes that, counted from now."""
        key = parse_uuid(thread_id, "thread_id")
        self._check_graph_id(metadata)
        async with self.db.write() as session:
            # Locked (PostgreSQL): two merges at once would each keep only their own keys.
            found = await session.get(ThreadRow, key, with_for_update=True)
            thread = owned(found, thread_id, owner)
            thread.metadata_ = {**(thread.metadata_ or {}), **metadata}
            thread.updated_at = now()
            if ttl is not None:
                await session.merge(_ttl_row(thread.thread_id, ttl, thread.updated_at))
        return thread

    async def delete(self, thread_id: str, *, owner: str) -> None:
        """Stop the thread's runs, then remove it with its runs, events and checkpoints;
        404 if another request removed it meanwhile (one delete of several at once
        succeeds)."""
        thread = await self.get(thread_id, owner=owner)
        await self.cancels.cancel_many(thread.thread_id, None, None, "interrupt", owner=owner)
        if not await self.remove(thread.thread_id):
            raise NotFound(f"Thread '{thread_id}' not found.")

    async def copy(self, thread_id: str, *, owner: str) -> ThreadRow:
        """A new thread with the same metadata and a copy of every checkpoint (all branches):
        its row is added in the copy's transaction, so that a crash leaves the copy whole
        or absent, never a thread without its checkpoints."""
        source = await self.get(thread_id, owner=owner)
        graph = self._reader_of(source)
        target = new_thread(None, source.metadata_, owner)
        # The same checkpoint ids: the source's head is the copy's, until the refresh.
        for column in HEAD_COLUMNS:
            setattr(target, column, getattr(source, column))

        async def add_row(conn: AsyncConnection) -> None:
            await conn.execute(_add_thread(self.db.dialect), columns_of(target))

        try:
            await self.saver.acopy_thread(source.thread_id, target.thread_id, along=add_row)
        except ThreadDeletedError:  # its checkpoints went before the copy read them
            raise NotFound(f"Thread '{thread_id}' not found: it was deleted.") from None
        if graph is not None:
            # A head no read can make (`snapshot_of`) is copied as it is, as its row shows it.
            with contextlib.suppress(Conflict):
                await self.refresh(target.thread_id, graph)
        return await self.get(target.thread_id, owner=owner)

    async def prune(self, body: ThreadPrune, *, owner: str) -> int:
        """Delete the owner's threads, or keep only their latest turn; other ids are
        skipped. A thread with a run on it is not pruned to its latest turn (409, nothing
        pruned): that turn would be the run's unfinished one."""
        keys = [parse_uuid(t, "thread_ids") for t in body.thread_ids]
        async with self.db.read() as session:
            found = (
                await session.execute(
                    select(ThreadRow.thread_id, ThreadRow.status).where(
                        ThreadRow.thread_id.in_(keys), ThreadRow.owner == owner
                    )
                )
            ).all()
        if body.strategy == "delete":
            deleted = 0
            for thread_id, _ in found:
                with contextlib.suppress(NotFound):  # deleted meanwhile: not by this prune
                    await self.delete(thread_id, owner=owner)
                    deleted += 1
            return deleted
        busy = sorted(thread_id for thread_id, status in found if status == "busy")
        if busy:
            raise Conflict(
                f"Thread '{busy[0]}' is busy: prune it to its latest turn once its runs end."
            )
        # A run admitted since is let be: its thread is not counted.
        return sum([await self._keep_latest(thread_id) for thread_id, _ in found])

    async def _keep_latest(self, thread_id: str) -> bool:
        """Prune the thread to its latest turn unless a run is on it, holding it (see
        `changing`) so that none is admitted meanwhile: a run's unfinished turn would be
        the one kept, and rolling the run back would then leave nothing. Whether it was."""
        try:
            async with self.changing(thread_id) as change:
                if await change.busy():
                    return False
                await self.saver.aprune([thread_id], keep_last_turns=1)
                return True
        except NotFound:  # deleted meanwhile
            return False

    async def remove(self, thread_id: str, *, keep_runs: bool = False) -> bool:
        """Remove a thread with its checkpoints, its crons and reminders and (unless kept)
        its runs and events. The checkpoints go first, leaving their tombstone: until the
        row goes, the id is taken, so a new thread under it (`reuse`) always comes after
        the tombstone, never before it (it would be born deleted); and a crash between the
        two leaves a thread to delete again, not checkpoints that a new thread under the
        id would show (`finish_deletes` removes such a thread). The row goes before what
        hangs on it: a cron made meanwhile locks the row to check it (`locked_thread`), so
        it either fails or is seen here. Whether the row was there to remove."""
        await self.saver.adelete_thread(thread_id)

        async def rows() -> bool:
            async with self.db.write() as session:
                return await self._remove_rows(session, thread_id, keep_runs=keep_runs)

        # A run's end takes its row, then its thread's; this takes them the other way.
        return await retry_deadlocks(rows)

    @staticmethod
    async def _remove_rows(
        session: AsyncSession, thread_id: str, *, keep_runs: bool = False
    ) -> bool:
        """`remove`'s rows, in the caller's transaction; whether the thread's was there."""
        removed = await session.execute(delete(ThreadRow).where(ThreadRow.thread_id == thread_id))
        await session.execute(delete(CronRow).where(CronRow.thread_id == thread_id))
        await session.execute(delete(ReminderRow).where(ReminderRow.thread_id == thread_id))
        if not keep_runs:
            run_ids = select(RunRow.run_id).where(RunRow.thread_id == thread_id)
            await session.execute(delete(RunEventRow).where(RunEventRow.run_id.in_(run_ids)))
            await session.execute(delete(RunRow).where(RunRow.thread_id == thread_id))
        return bool(removed.rowcount)  # type: ignore[attr-defined]
