"""Old stream events go: `run_events` keeps every event of every run so clients can
rejoin a stream, which nobody does days later, while the table grows with every token.

Every API process cleans (a deployment always has one); the deletes are idempotent, so
replicas cleaning at once only repeat each other's work. Events of pending and running
runs stay whatever their age, so a live run's stream is always whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta

from sqlalchemy import delete, select, tuple_

from app.db.database import Database
from app.db.models import Run, RunEvent
from app.services.common import now

log = logging.getLogger(__name__)
RETENTION_VARIABLE = "THREADLINE_EVENT_RETENTION_S"  # 0 keeps events forever
DEFAULT_RETENTION = timedelta(days=1)
# Rows per delete: short transactions that never hold many locks at once.
BATCH = 5000
LONGEST_PAUSE = timedelta(hours=1)


async def clean_events(db: Database, older_than: timedelta) -> int:
    """Delete events recorded more than `older_than` ago, except those of live runs;
    returns how many were deleted."""
    cutoff = now() - older_than
    live = select(Run.run_id).where(Run.status.in_(("pending", "running")))
    expired = (
        select(RunEvent.run_id, RunEvent.seq)
        .where(RunEvent.created_at < cutoff, RunEvent.run_id.not_in(live))
        .limit(BATCH)
    )
    removed = 0
    while True:
        async with db.write() as session:
            result = await session.execute(
                delete(RunEvent).where(tuple_(RunEvent.run_id, RunEvent.seq).in_(expired))
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


def retention(environ: Mapping[str, str] = os.environ) -> timedelta | None:
    """How long events are kept (THREADLINE_EVENT_RETENTION_S), None for forever."""
    raw = environ.get(RETENTION_VARIABLE)
    seconds = DEFAULT_RETENTION.total_seconds() if raw is None else float(raw)
    return timedelta(seconds=seconds) if seconds > 0 else None


@contextlib.asynccontextmanager
async def cleaning(db: Database) -> AsyncIterator[None]:
    """Clean old events in the background while the block (an app's lifespan) runs."""
    older_than = retention()
    if older_than is None:
        yield
        return
    task = asyncio.create_task(clean_forever(db, older_than))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
