"""Threads: a conversation's row (metadata, status, the head's values) beside its
checkpoints, which live in the saver. Each belongs to one user: another user's thread is
answered exactly as a missing one."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, case, exists, func, select
from sqlalchemy import update as sql_update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database
from app.db.models import Run, Thread
from app.errors import Conflict, NotFound
from app.jsonable import jsonable
from app.schemas.common import OnConflict
from app.schemas.threads import ThreadFilter, ThreadPrune, ThreadSearch, ThreadStatus
from app.services.common import json_contains, new_id, now, ordered, parse_uuid, served_graph
from engine import CompiledGraph, StateSnapshot

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
def _settle_statement(changed: tuple[str, ...]) -> Any:
    """Built once per set of changed columns: a run ends with one, every time."""
    # Columns of the tables, not ORM attributes: an ORM-enabled statement is copied on
    # every execution, and its cache key computed anew.
    threads, runs = Thread.__table__.c, Run.__table__.c
    thread_id = bindparam("settled_thread")
    waiting = exists().where(runs.thread_id == thread_id, runs.status.in_(("pending", "running")))
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
        _settle_statement(tuple(sorted(changes))),
        {
            "settled_thread": thread_id,
            "resting": status,
            "now": now(),
            **{f"new_{name}": value for name, value in changes.items()},
        },
    )
    return settled == "busy"


def head_of(state: StateSnapshot) -> tuple[ThreadStatus, dict[str, Any] | None, dict[str, Any]]:
    """What the thread row keeps of its head: its resting status, values (None before the
    first checkpoint) and open interrupts by task id."""
    values = jsonable(state.values) if state.metadata is not None else None
    interrupts = {t.id: jsonable(t.interrupts) for t in state.tasks if t.interrupts}
    return ("interrupted" if state.next else "idle"), values, interrupts


async def refresh(ctx: AppContext, thread_id: str, graph: CompiledGraph) -> None:
    """Set the thread row from its head checkpoint, after the checkpoints changed
    outside a run (a state update, a copy)."""
    status, values, interrupts = head_of(
        await graph.aget_state({"configurable": {"thread_id": thread_id}})
    )
    async with ctx.db.write() as session:
        await settle(session, thread_id, status, values=values, interrupts=interrupts)


def thread_graph(ctx: AppContext, thread: Thread) -> CompiledGraph | None:
    """The graph that reads the thread's checkpoints: the one its runs ran (or its
    creator named) in metadata `graph_id`; None while it has none."""
    graph_id = (thread.metadata_ or {}).get("graph_id")
    return served_graph(ctx.graphs, graph_id) if isinstance(graph_id, str) else None


def _filtered(ctx: AppContext, query: Select[Any], where: ThreadFilter, owner: str) -> Select[Any]:
    """`query` restricted to the owner's threads that the filter matches, in SQL."""
    dialect = ctx.db.dialect
    query = query.where(Thread.owner == owner)
    if where.metadata:
        query = query.where(json_contains(dialect, Thread.metadata_, where.metadata, "metadata"))
    if where.values:
        query = query.where(json_contains(dialect, Thread.values, where.values, "values"))
    if where.status:
        query = query.where(Thread.status == where.status)
    if where.ids is not None:
        query = query.where(Thread.thread_id.in_([parse_uuid(i, "ids") for i in where.ids]))
    return query


async def search(ctx: AppContext, body: ThreadSearch, *, owner: str) -> tuple[list[Thread], int]:
    """One page of matching threads, and how many match in all."""
    column = getattr(Thread, "updated_at" if body.sort_by == "state_updated_at" else body.sort_by)
    query = ordered(
        _filtered(ctx, select(Thread), body, owner), body.sort_order, column, Thread.thread_id
    )
    async with ctx.db.read() as session:
        rows = list(await session.scalars(query.limit(body.limit).offset(body.offset)))
    return rows, await count(ctx, body, owner=owner)


async def count(ctx: AppContext, where: ThreadFilter, *, owner: str) -> int:
    """How many threads match, counted in SQL."""
    async with ctx.db.read() as session:
        total = await session.scalar(
            _filtered(ctx, select(func.count()).select_from(Thread), where, owner)
        )
    return int(total or 0)


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
