"""Old data goes: stream events after the retention, threads and store items whose time
to live ran out, and threads whose delete a crash cut short. `run_events` keeps every
event of every run so clients can rejoin a stream, which nobody does days later, while
the table grows with every token.

Every API process cleans (a deployment always has one); the deletes are idempotent, so
replicas cleaning at once only repeat each other's work. Events of pending and running
runs stay whatever their age, so a live run's stream is always whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete, select, tuple_

from app.config import Settings
from app.db.database import Database
from app.db.models import PENDING, RUNNING, RunEventRow, RunRow
from app.services.common import now

if TYPE_CHECKING:
    from app.services.store import StoreService
    from app.services.threads import ThreadService

log = logging.getLogger(__name__)
# Rows per delete: short transactions that never hold many locks at once.
BATCH = 5000
LONGEST_PAUSE = timedelta(hours=1)
# How long after its start a process looks for deletes a crash cut short.
FINISH_DELETES_AFTER_S = 60.0


async def clean_events(db: Database, older_than: timedelta) -> int:
    """Delete events recorded more than `older_than` ago, except those of live runs;
    returns how many were deleted."""
    cutoff = now() - older_than
    # The condition of runs_active_by_owner, which holds the live runs.
    live = select(RunRow.run_id).where(RunRow.status.in_((PENDING, RUNNING)))
    expired = (
        select(RunEventRow.run_id, RunEventRow.seq)
        .where(RunEventRow.created_at < cutoff, RunEventRow.run_id.not_in(live))
        .limit(BATCH)
    )
    removed = 0
    while True:
        async with db.write() as session:
            result = await session.execute(
                delete(RunEventRow).where(tuple_(RunEventRow.run_id, RunEventRow.seq).in_(expired))
            )
        count: int = result.rowcount  # type: ignore[attr-defined]
        removed += count
        if count < BATCH:
            return removed


async def clean_forever(db: Database, older_than: timedelta) -> None:
    """Clean every quarter of the retention (at most hourly): events outlive it by at
    most a quarter. A failed pass (the database restarting) is retried next time."""
    pause = min(older_than / 4, LONGEST_PAUSE).total_seconds()
    while True:
        await asyncio.sleep(pause)
        try:
            removed = await clean_events(db, older_than)
        except Exception as exc:
            log.warning("cleaning old stream events failed (%s); retrying later", exc)
            continue
        if removed:
            log.info("deleted %d stream events older than %s", removed, older_than)


def retention(settings: Settings) -> timedelta | None:
    """How long events are kept (THREADLINE_EVENT_RETENTION_S), None for forever."""
    seconds = settings.event_retention_s
    return timedelta(seconds=seconds) if seconds > 0 else None


async def expire_forever(sweeps: Sequence[Callable[[], Awaitable[int]]], every_s: float) -> None:
    """Delete what outlived its time to live (threads, store items) every `every_s`
    seconds; a failed pass is retried."""
    while True:
        await asyncio.sleep(every_s)
        for sweep in sweeps:
            try:
                expired = await sweep()
            except Exception as exc:
                log.warning("time to live: %s failed (%s); retrying later", sweep.__qualname__, exc)
                continue
            if expired:
                log.info("time to live: %s removed %d", sweep.__qualname__, expired)


async def finish_deletes_later(threads: ThreadService, delay_s: float) -> None:
    """Once, `delay_s` after the process starts: remove the threads whose delete a crash
    cut short before it started. Deletes in flight elsewhere at the start (each takes
    milliseconds) have ended by then, and later ones are after the cutoff."""
    started = now()
    await asyncio.sleep(delay_s)
    try:
        finished = await threads.finish_deletes(started)
    except Exception as exc:
        log.warning("finishing deletes cut short by a crash failed (%s)", exc)
        return
    if finished:
        log.info("removed %d threads whose delete a crash had cut short", finished)


@contextlib.asynccontextmanager
async def cleaning(
    db: Database, settings: Settings, threads: ThreadService, store: StoreService
) -> AsyncIterator[None]:
    """Clean old events and apply the time to live of threads and store items in the
    background while the block (an app's lifespan) runs."""
    older_than = retention(settings)
    sweeps = (threads.expire, store.expire)
    tasks = [
        asyncio.create_task(
            expire_forever(sweeps, settings.ttl_sweep_s), name="threadline: ttl sweep"
        ),
        asyncio.create_task(
            finish_deletes_later(threads, FINISH_DELETES_AFTER_S),
            name="threadline: deletes cut short",
        ),
    ]
    if older_than is not None:
        tasks.append(
            asyncio.create_task(clean_forever(db, older_than), name="threadline: event retention")
        )
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
