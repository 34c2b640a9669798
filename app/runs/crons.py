"""The cron scheduler: every process that executes runs looks for crons that are due and
starts each occurrence as a run, once, whatever the number of processes.

An occurrence is claimed in the transaction that inserts its run: the cron's
`next_run_at` moves from the occurrence to the next one only where it still holds that
occurrence (a compare-and-set), so of the processes that find it due, one inserts the
run and the others insert nothing. No claim is committed without its run, nor a run
without its claim: a process that dies at any point leaves the occurrence due, for the
next process that looks.

Occurrences missed while no process was running are not replayed: a cron found late
runs once, and its next occurrence is the first one after now. An occurrence whose run
cannot be created (its assistant or thread is gone, the thread is busy and the cron's
multitask strategy is `reject`, the owner's queue is full) is skipped, and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import bindparam, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database
from app.db.models import CronRow
from app.errors import APIError
from app.outages import Retrying
from app.schedules import next_run
from app.services.common import now
from app.services.crons import run_body

if TYPE_CHECKING:
    from app.services.runs.service import RunService

log = logging.getLogger(__name__)
# How often each process looks for due crons: an occurrence starts this late at most.
POLL_S = 1.0
# Due crons started per poll, at most, by each process.
BATCH = 100

_CRONS = CronRow.__table__.c
# The occurrence `due` of the cron, if it still holds it, moves on to `following`.
_ADVANCE = (
    update(CronRow.__table__)
    .where(
        _CRONS.cron_id == bindparam("cron"),
        _CRONS.next_run_at == bindparam("due"),
        _CRONS.enabled == true(),
    )
    .values(next_run_at=bindparam("following"))
)


class OccurrenceTaken(Exception):
    """Another process started this occurrence, or the cron changed meanwhile."""


class CronScheduler:
    def __init__(self, db: Database, runs: RunService) -> None:
        self.db = db
        self.runs = runs
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._poll(), name="threadline: crons")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _poll(self) -> None:
        retrying = Retrying(log, "looking for due crons")
        while True:
            try:
                await self.fire_due()
            except Exception as exc:  # looked for again next time
                retrying.failed(exc)
            else:
                retrying.succeeded()
            await asyncio.sleep(POLL_S)

    async def fire_due(self) -> None:
        """Start the runs of the crons due now (a batch of them: the rest on the next
        poll). A run that fails to start for another reason than the occurrence (the
        database) leaves it due, to be tried again."""
        async with self.db.read() as session:
            due = list(
                await session.scalars(
                    select(CronRow)
                    .where(CronRow.enabled == true(), CronRow.next_run_at <= now())
                    .order_by(CronRow.next_run_at)
                    .limit(BATCH)
                )
            )
        for cron in due:
            try:
                await self.fire(cron)
            except Exception:
                log.exception("cron %s: starting its run failed; trying again", cron.cron_id)

    async def fire(self, cron: CronRow) -> None:
        """Start the run of `cron`'s due occurrence, unless another process did; skip
        the occurrence if its run cannot start."""
        due = cron.next_run_at
        assert due is not None
        claim = functools.partial(self._claim, cron, due)
        try:
            run = await self.runs.create(
                cron.thread_id, run_body(cron), owner=cron.owner, claim=claim
            )
        except OccurrenceTaken:
            return
        except (APIError, ValidationError) as exc:
            log.warning("cron %s: the run due at %s was skipped: %s", cron.cron_id, due, exc)
            async with self.db.write() as session:
                await session.execute(_ADVANCE, self._advance(cron, due))
            return
        log.info("cron %s: the run due at %s is %s", cron.cron_id, due, run.run_id)

    async def _claim(self, cron: CronRow, due: datetime, session: AsyncSession) -> None:
        """In the transaction that inserts the run: move the cron on from `due`, or
        insert nothing (OccurrenceTaken) if it no longer holds `due`."""
        moved = await session.execute(_ADVANCE, self._advance(cron, due))
        if moved.rowcount != 1:  # type: ignore[attr-defined]
            raise OccurrenceTaken(cron.cron_id)

    def _advance(self, cron: CronRow, due: datetime) -> dict[str, Any]:
        """`_ADVANCE`'s parameters: the next occurrence after `due` and after now (the
        ones missed in between are not run)."""
        after = max(due, now())
        following = next_run(cron.schedule, cron.timezone, cron.end_time, after)
        return {"cron": cron.cron_id, "due": due, "following": following}
