"""Threads: a conversation's row (metadata, status, which checkpoint holds the head's
values) beside its checkpoints, which live in the saver. Each belongs to one user:
another user's thread is answered exactly as a missing one."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, case, exists, func, select
from sqlalchemy import update as sql_update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database
from app.db.models import Run, Thread
from app.errors import Conflict, NotFound
from app.jsonable import jsonable, to_json
from app.schemas.common import OnConflict
from app.schemas.threads import Thread as ThreadOut
from app.schemas.threads import ThreadFilter, ThreadPrune, ThreadSearch, ThreadStatus
from app.services.common import json_contains, new_id, now, ordered, parse_uuid, served_graph
from engine import CompiledGraph, StateSnapshot
from engine.errors import CheckpointNotFoundError

if TYPE_CHECKING:
    from app.context import AppContext


def owned(thread: Thread | None, thread_id: str, owner: str) -> Thread:
    """The thread if `owner` owns it; else 404, the same for missing and foreign."""
    if thread is None or thread.owner != owner:
        raise NotFound(f"Thread '{thread_id}' not found.")
    return thread


async def get_thread(db: Database, thread_id: str, *, owner: str) -> Thread:
    key = parse_uuid(thread_id, "thread_id")
    async with db.read() as session:
        return owned(await session.get(Thread, key), thread_id, owner)


def new_thread(thread_id: str | None, metadata: dict[str, Any] | None, owner: str) -> Thread:
    stamp = now()
    return Thread(
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


def taken(thread_id: str) -> Conflict:
    """An id in use, whoever uses it: a foreign thread is never handed out."""
    return Conflict(f"Thread '{thread_id}' already exists.")


async def create_thread(
    db: Database,
    thread_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    if_exists: OnConflict = "raise",
    *,
    owner: str,
) -> Thread:
    thread = new_thread(thread_id, metadata, owner)
    async with db.write() as session:
        existing = await session.get(Thread, thread.thread_id)
        if existing is not None:
            if if_exists == "do_nothing" and existing.owner == owner:
                return existing
            raise taken(thread.thread_id)
        session.add(thread)
    return thread


async def active_runs(session: AsyncSession, thread_id: str) -> int:
    return int(
        await session.scalar(
            select(func.count())
            .select_from(Run)
            .where(Run.thread_id == thread_id, Run.status.in_(("pending", "running")))
        )
        or 0
    )


@functools.cache
def settle_statement(changed: tuple[str, ...], *, ending: bool = False) -> Any:
    """`settle`'s statement, built once per set of changed columns: a run ends with one,
    every time. `ending`: for a statement that also records the end of the run
    `ended_run` (in whose snapshot that run still runs): it does not count as waiting."""
    # Columns of the tables, not ORM attributes: an ORM-enabled statement is copied on
    # every execution, and its cache key computed anew.
    threads, runs = Thread.__table__.c, Run.__table__.c
    thread_id = bindparam("settled_thread")
    waiting = exists().where(runs.thread_id == thread_id, runs.status.in_(("pending", "running")))
    if ending:
        waiting = waiting.where(runs.run_id != bindparam("ended_run"))
    resting = bindparam("resting", type_=threads.status.type)
    return (
        sql_update(Thread.__table__)
        .where(threads.thread_id == thread_id)
        .values(
            status=case((waiting, "busy"), else_=resting),
            updated_at=bindparam("now"),
            **{name: bindparam(f"new_{name}") for name in changed},
        )
        .returning(threads.status)
    )


async def settle(
    session: AsyncSession, thread_id: str, status: ThreadStatus, **changes: Any
) -> bool:
    """Set what a finished run leaves, in one statement (the row, whose values can be a
    long chat, is not read); the thread stays busy while other runs wait. True when
    other runs wait: one of them may start now."""
    settled = await session.scalar(
        settle_statement(tuple(sorted(changes))), settle_params(thread_id, status, changes)
    )
    return settled == "busy"


def settle_params(thread_id: str, status: ThreadStatus, changes: dict[str, Any]) -> dict[str, Any]:
    """`settle_statement`'s parameters."""
    return {
        "settled_thread": thread_id,
        "resting": status,
        "now": now(),
        **{f"new_{name}": value for name, value in changes.items()},
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


async def refresh(ctx: AppContext, thread_id: str, graph: CompiledGraph) -> None:
    """Set the thread row from its head checkpoint, after the checkpoints changed
    outside a run (a state update, a copy)."""
    state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    head = await head_of(graph, state, saved=False)
    async with ctx.db.write() as session:
        await settle(session, thread_id, head.status, **head.columns)


async def values_of(ctx: AppContext, thread: Thread) -> dict[str, Any] | None:
    """The thread's values: those its row keeps, or its checkpoint's, read with the graph
    of its runs (None when that graph is not served here, or the checkpoint is gone)."""
    if thread.checkpoint_id is None:
        return thread.values
    graph = thread_graph(ctx, thread)
    if graph is None:
        return None
    at = {"thread_id": thread.thread_id, "checkpoint_id": thread.checkpoint_id}
    try:
        return jsonable(await graph.aget_saved_values({"configurable": at}))  # type: ignore[no-any-return]
    except CheckpointNotFoundError:
        return None


async def shown(ctx: AppContext, thread: Thread, *, with_values: bool = True) -> ThreadOut:
    """The thread on the wire; `with_values=False` leaves its values out (null)."""
    return ThreadOut.of(thread, await values_of(ctx, thread) if with_values else None)


def thread_graph(ctx: AppContext, thread: Thread) -> CompiledGraph | None:
    """The graph that reads the thread's checkpoints: the one its runs ran (or its
    creator named) in metadata `graph_id`; None while it has none."""
    graph_id = (thread.metadata_ or {}).get("graph_id")
    return served_graph(ctx.graphs, graph_id) if isinstance(graph_id, str) else None


def _filtered(ctx: AppContext, query: Select[Any], where: ThreadFilter, owner: str) -> Select[Any]:
    """`query` restricted to the owner's threads that the filter matches in SQL: all but
    `values`, which the checkpoints hold (`_matching`)."""
    dialect = ctx.db.dialect
    query = query.where(Thread.owner == owner)
    if where.metadata:
        query = query.where(json_contains(dialect, Thread.metadata_, where.metadata))
    if where.status:
        query = query.where(Thread.status == where.status)
    if where.ids is not None:
        query = query.where(Thread.thread_id.in_([parse_uuid(i, "ids") for i in where.ids]))
    return query


async def search(ctx: AppContext, body: ThreadSearch, *, owner: str) -> tuple[list[ThreadOut], int]:
    """One page of matching threads, and how many match in all. Values are read only when
    the page shows them (or `extract` may follow them)."""
    column = getattr(Thread, "updated_at" if body.sort_by == "state_updated_at" else body.sort_by)
    query = ordered(
        _filtered(ctx, select(Thread), body, owner), body.sort_order, column, Thread.thread_id
    )
    with_values = not body.select or "values" in body.select or bool(body.extract)
    if body.values:
        found = await _matching(ctx, query, body.values)
        page = found[body.offset : body.offset + body.limit]
        return [ThreadOut.of(row, values) for row, values in page], len(found)
    async with ctx.db.read() as session:
        rows = list(await session.scalars(query.limit(body.limit).offset(body.offset)))
    shown_rows = [await shown(ctx, row, with_values=with_values) for row in rows]
    return shown_rows, await count(ctx, body, owner=owner)


async def count(ctx: AppContext, where: ThreadFilter, *, owner: str) -> int:
    """How many threads match, counted in SQL (with a `values` filter, on their values)."""
    if where.values:
        query = _filtered(ctx, select(Thread), where, owner)
        return len(await _matching(ctx, query, where.values))
    async with ctx.db.read() as session:
        total = await session.scalar(
            _filtered(ctx, select(func.count()).select_from(Thread), where, owner)
        )
    return int(total or 0)


async def _matching(
    ctx: AppContext, query: Select[Any], subset: dict[str, Any]
) -> list[tuple[Thread, dict[str, Any] | None]]:
    """The threads of `query` whose values contain `subset`, with their values: each
    thread's values are read, as its checkpoints hold them."""
    async with ctx.db.read() as session:
        rows = list(await session.scalars(query))
    found: list[tuple[Thread, dict[str, Any] | None]] = []
    for row in rows:
        values = await values_of(ctx, row)
        if _contains(values, subset):
            found.append((row, values))
    return found


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


async def update(
    ctx: AppContext, thread_id: str, metadata: dict[str, Any], *, owner: str
) -> Thread:
    """Merge `metadata` into the thread's (keys given replace keys kept)."""
    key = parse_uuid(thread_id, "thread_id")
    async with ctx.db.write() as session:
        thread = owned(await session.get(Thread, key), thread_id, owner)
        thread.metadata_ = {**(thread.metadata_ or {}), **metadata}
        thread.updated_at = now()
    return thread


async def delete_thread(ctx: AppContext, thread_id: str, *, owner: str) -> None:
    """Stop the thread's runs, then remove it with its runs, events and checkpoints."""
    thread = await get_thread(ctx.db, thread_id, owner=owner)
    await ctx.runs.cancel_many(thread.thread_id, None, None, "interrupt", owner=owner)
    await ctx.runs.delete_thread_data(thread.thread_id)


async def copy(ctx: AppContext, thread_id: str, *, owner: str) -> Thread:
    """A new thread with the same metadata and a copy of every checkpoint (all branches)."""
    source = await get_thread(ctx.db, thread_id, owner=owner)
    graph = thread_graph(ctx, source)
    target = await create_thread(ctx.db, metadata=source.metadata_, owner=owner)
    await ctx.saver.acopy_thread(source.thread_id, target.thread_id)
    if graph is not None:
        await refresh(ctx, target.thread_id, graph)
    return await get_thread(ctx.db, target.thread_id, owner=owner)


async def prune(ctx: AppContext, body: ThreadPrune, *, owner: str) -> int:
    """Delete the owner's threads, or keep only their latest turn; other ids are skipped."""
    keys = [parse_uuid(t, "thread_ids") for t in body.thread_ids]
    async with ctx.db.read() as session:
        found = list(
            await session.scalars(
                select(Thread.thread_id).where(Thread.thread_id.in_(keys), Thread.owner == owner)
            )
        )
    if body.strategy == "delete":
        for thread_id in found:
            await delete_thread(ctx, thread_id, owner=owner)
    elif found:
        await ctx.saver.aprune(found, keep_last_turns=1)
    return len(found)
