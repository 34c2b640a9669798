"""Threads: a conversation's row (metadata, status, the head's values) beside its
checkpoints, which live in the saver."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database
from app.db.models import Run, Thread
from app.errors import Conflict, NotFound
from app.services.common import new_id, now, parse_uuid

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]


async def get_thread(db: Database, thread_id: str) -> Thread:
    key = parse_uuid(thread_id, "thread_id")
    async with db.read() as session:
        thread = await session.get(Thread, key)
    if thread is None:
        raise NotFound(f"Thread '{thread_id}' not found.")
    return thread


def new_thread(thread_id: str | None, metadata: dict[str, Any] | None) -> Thread:
    stamp = now()
    return Thread(
        thread_id=parse_uuid(thread_id, "thread_id") if thread_id else new_id(),
        metadata_=dict(metadata or {}),
        status="idle",
        values=None,
        interrupts={},
        owner=None,
        created_at=stamp,
        updated_at=stamp,
    )


async def create_thread(
    db: Database,
    thread_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    if_exists: Literal["raise", "do_nothing"] = "raise",
) -> Thread:
    thread = new_thread(thread_id, metadata)
    async with db.write() as session:
        existing = await session.get(Thread, thread.thread_id)
        if existing is not None:
            if if_exists == "do_nothing":
                return existing
            raise Conflict(f"Thread '{thread.thread_id}' already exists.")
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


async def settle(
    session: AsyncSession, thread: Thread, status: ThreadStatus, **changes: Any
) -> None:
    """Set what a finished run leaves; the thread stays busy while other runs wait."""
    for key, value in changes.items():
        setattr(thread, key, value)
    thread.status = "busy" if await active_runs(session, thread.thread_id) else status
    thread.updated_at = now()
