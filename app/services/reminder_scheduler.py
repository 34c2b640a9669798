"""Reminders that fire: when one comes due, its thread gets a run in which the agent says it.

Every process that executes runs looks for due reminders every POLL_S. It claims the due
ones for CLAIM_S (one UPDATE; on PostgreSQL, rows another process holds are skipped),
then makes each one's delivery run: a run of the reminder's assistant on its thread, as
its owner, with `Command(goto=Send("remind", reminder))` and metadata `reminder_id`,
queued behind the thread's runs like any other. From then on the run is the delivery,
and runs survive crashes (another worker takes over a run whose worker died).

A process that dies after making the run, before marking the reminder as `sending`,
leaves the reminder to be claimed again once its claim lapses; the next claimer finds
the run by its metadata and makes none. The `remind` node says the reminder only if the
reminder is not marked delivered by another run (`ReminderStore.deliver`), so even two
runs (a claimer that stalled past its claim) say it once.

A thread waiting for an answer (interrupted) gets its reminders once it is answered: a
reminder said in between would sit between a model's tool calls and their results.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from sqlalchemy import or_, select, update

from app.db.database import Database
from app.db.models import ReminderRow, RunRow, ThreadRow
from app.errors import Invalid, NotFound
from app.outages import Retrying
from app.schemas.runs import RunCreate
from app.services.common import now
from app.services.runs.service import RunService

log = logging.getLogger(__name__)
POLL_S = 1.0
CLAIM_S = 30.0
# Reminders claimed at once.
BATCH = 20
# What a delivery run records: what the built-in page follows (its chat and run view).
STREAM_MODE = ["values", "messages-tuple", "updates", "checkpoints", "tasks"]


class ReminderScheduler:
    def __init__(self, db: Database, runs: RunService) -> None:
        self.db = db
        self.runs = runs
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._forever(), name="threadline: reminders")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _forever(self) -> None:
        retrying = Retrying(log, "delivering due reminders")
        while True:
            try:
                await self.deliver_due()
            except Exception as exc:
                retrying.failed(exc)
            else:
                retrying.succeeded()
            await asyncio.sleep(POLL_S)

    async def deliver_due(self) -> int:
        """Make the delivery runs of the reminders due now; how many were claimed."""
        claimed = await self._claim()
        for reminder in claimed:
            try:
                await self._deliver(reminder)
            except Exception:  # claimed again once the claim lapses
                log.exception("delivering reminder %s failed", reminder.reminder_id)
        return len(claimed)

    async def _claim(self) -> list[ReminderRow]:
        stamp = now()
        free = or_(ReminderRow.claimed_until.is_(None), ReminderRow.claimed_until < stamp)
        due = (
            select(ReminderRow.reminder_id)
            # A reminder whose thread is gone (deleted before its reminders went with it)
            # is claimed too: its delivery finds no thread, and it is marked undeliverable.
            .outerjoin(ThreadRow, ThreadRow.thread_id == ReminderRow.thread_id)
            .where(
                ReminderRow.status == "scheduled",
                ReminderRow.due_at <= stamp,
                free,
                or_(ThreadRow.status.is_(None), ThreadRow.status != "interrupted"),
            )
            .order_by(ReminderRow.due_at)
            .limit(BATCH)
        )
        # Read first: nearly always nothing is due, and a write every second on SQLite
        # would queue behind (and hold up) the saves of runs.
        async with self.db.read() as session:
            if not (await session.scalars(due.limit(1))).first():
                return []
        if self.db.dialect == "postgresql":
            due = due.with_for_update(skip_locked=True, of=ReminderRow)
        async with self.db.write() as session:
            rows = await session.scalars(
                update(ReminderRow)
                .where(ReminderRow.reminder_id.in_(due), ReminderRow.status == "scheduled", free)
                .values(claimed_until=stamp + timedelta(seconds=CLAIM_S))
                .returning(ReminderRow)
                .execution_options(synchronize_session=False)
            )
            return list(rows)

    async def _deliver(self, reminder: ReminderRow) -> None:
        run_id = await self._made_run(reminder)
        if run_id is None:
            try:
                run_id = await self._make_run(reminder)
            except (NotFound, Invalid) as exc:
                # Its thread, or assistant, is gone, or the assistant cannot say it.
                log.warning("reminder %s cannot be delivered: %s", reminder.reminder_id, exc)
                await self._mark(reminder, "undeliverable", None)
                return
        await self._mark(reminder, "sending", run_id)

    async def _made_run(self, reminder: ReminderRow) -> str | None:
        """The delivery run a claimer that died made already, if any."""
        async with self.db.read() as session:
            return await session.scalar(
                select(RunRow.run_id)
                .where(
                    RunRow.thread_id == reminder.thread_id,
                    RunRow.metadata_["reminder_id"].as_string() == reminder.reminder_id,
                )
                .limit(1)
            )

    async def _make_run(self, reminder: ReminderRow) -> str:
        assistant_id = reminder.assistant_id or await self._thread_assistant(reminder)
        body = RunCreate.model_validate(
            {
                "assistant_id": assistant_id,
                "command": {
                    "goto": {
                        "node": "remind",
                        "input": {
                            "id": reminder.reminder_id,
                            "text": reminder.text,
                            "due": reminder.due,
                        },
                    }
                },
                "metadata": {"reminder_id": reminder.reminder_id},
                "stream_mode": STREAM_MODE,
                "multitask_strategy": "enqueue",
            }
        )
        run = await self.runs.create(reminder.thread_id, body, owner=reminder.owner)
        return run.run_id

    async def _thread_assistant(self, reminder: ReminderRow) -> str:
        """The assistant the thread's runs use (a reminder set outside a server run
        names none)."""
        async with self.db.read() as session:
            metadata = await session.scalar(
                select(ThreadRow.metadata_).where(ThreadRow.thread_id == reminder.thread_id)
            )
        assistant_id = (metadata or {}).get("assistant_id")
        if not isinstance(assistant_id, str):
            raise NotFound(f"Thread '{reminder.thread_id}' has no assistant to say it.")
        return assistant_id

    async def _mark(self, reminder: ReminderRow, status: str, run_id: str | None) -> None:
        """Record what became of a claimed reminder, unless its run delivered it already."""
        async with self.db.write() as session:
            await session.execute(
                update(ReminderRow)
                .where(
                    ReminderRow.reminder_id == reminder.reminder_id,
                    ReminderRow.status == "scheduled",
                )
                .values(status=status, run_id=run_id, claimed_until=None)
                .execution_options(synchronize_session=False)
            )
