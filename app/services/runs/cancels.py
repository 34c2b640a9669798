"""Stopping runs: cancel one or many (pending ones never start; a running one stops at
once if it runs here, or on its worker's next heartbeat), and delete a finished one."""

from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database, retry_deadlocks
from app.db.models import PENDING, RUNNING, RunEventRow, RunRow, ThreadRow
from app.errors import Conflict, Invalid, NotFound
from app.runs.broker import StreamBroker
from app.runs.pool import WorkerPool
from app.services.common import now, parse_uuid
from app.services.runs.results import RunResults
from app.services.runs.statements import FINAL, LOCK_THREAD
from app.services.threads import settle


class RunCancels:
    def __init__(
        self, db: Database, pool: WorkerPool, broker: StreamBroker, results: RunResults
    ) -> None:
        self.db = db
        self.pool = pool
        self.broker = broker
        self.results = results

    async def cancel(
        self, thread_id: str, run_id: str, action: str = "interrupt", *, owner: str
    ) -> RunRow | None:
        """Stop a run: pending ones never start; a running one stops at once if it runs
        here (another process's worker sees `cancel_action` on its next heartbeat)."""
        run = await self.results.get(thread_id, run_id, owner=owner)
        if run.status in FINAL:
            return run

        async def stop() -> RunRow | str | None:
            """The run's row if it is over already (None: gone); else what became of
            it: "stopped" (it was pending) or "told" (its worker is to stop it)."""
            async with self.db.write() as session:
                if run.status == "pending":
                    # The thread's row before the run's, as an admission that stops
                    # pending runs takes them (the other order deadlocked with it); a
                    # running run's end takes them the other way round, so a running
                    # run is cancelled without the thread's.
                    await session.execute(LOCK_THREAD, {"thread": run.thread_id})
                # Locked: a worker claiming it meanwhile would otherwise run it (or a
                # second cancel delete it) under this transaction's feet.
                current = await session.get(
                    RunRow, run.run_id, populate_existing=True, with_for_update=True
                )
                if current is None or current.status in FINAL:
                    return current
                if current.status != "pending":
                    current.cancel_action = action
                    return "told"
                await self.stop_pending(session, [current.run_id], action)
                thread = await session.get(ThreadRow, current.thread_id)
                if thread is not None:
                    await settle(session, thread.thread_id, await self._resting_status(thread))
                return "stopped"

        # A claim or a run's end may have come between the read and the locks.
        done = await retry_deadlocks(stop)
        if not isinstance(done, str):
            return done
        if done == "stopped":
            self.pool.wake()  # a run queued behind it may start now
            await self.broker.close(run.run_id)
            return None if action == "rollback" else run
        self.pool.stop_local(run.run_id, action)
        return run

    async def stop_pending(
        self, session: AsyncSession, run_ids: list[str], action: str
    ) -> list[str]:
        """In the caller's transaction, those of `run_ids` still pending never start: they
        end interrupted, or go with `rollback`. The ids stopped; once the transaction has
        committed, `closed` tells their waiters."""
        runs = RunRow.__table__.c
        which = (runs.run_id.in_(run_ids), runs.status == PENDING)
        if action == "rollback":
            stop: Any = delete(RunRow.__table__).where(*which)
        else:
            stop = (
                update(RunRow.__table__)
                .where(*which)
                .values(status="interrupted", updated_at=now())
            )
        return list(await session.scalars(stop.returning(runs.run_id)))

    async def closed(self, run_ids: list[str]) -> None:
        """`stop_pending`'s runs, after its transaction: their waiters hear their end."""
        for run_id in run_ids:
            await self.broker.close(run_id)

    async def cancel_many(
        self,
        thread_id: str | None,
        run_ids: list[str] | None,
        status: str | None,
        action: str,
        *,
        owner: str,
    ) -> None:
        """Cancel the owner's runs that match; other users' runs are never matched."""
        if thread_id is None and not run_ids and status is None:
            raise Invalid("Name the runs to cancel: thread_id, run_ids or status.")
        query = select(RunRow.thread_id, RunRow.run_id).where(
            RunRow.owner == owner, RunRow.status.in_((PENDING, RUNNING))
        )
        if thread_id is not None:
            query = query.where(RunRow.thread_id == parse_uuid(thread_id, "thread_id"))
        if run_ids:
            query = query.where(RunRow.run_id.in_([parse_uuid(r, "run_ids") for r in run_ids]))
        if status in ("pending", "running"):
            query = query.where(RunRow.status == status)
        async with self.db.read() as session:
            targets = list(await session.execute(query))
        for tid, rid in targets:
            # One rolled back meanwhile (by another cancel, or an admission) is gone: done.
            with contextlib.suppress(NotFound):
                await self.cancel(tid, rid, action, owner=owner)

    async def delete(self, thread_id: str, run_id: str, *, owner: str) -> None:
        run = await self.results.get(thread_id, run_id, owner=owner)
        if run.status not in FINAL:
            raise Conflict(f"Run '{run_id}' is {run.status}: cancel it before deleting it.")
        async with self.db.write() as session:
            await session.execute(delete(RunEventRow).where(RunEventRow.run_id == run.run_id))
            removed = await session.execute(delete(RunRow).where(RunRow.run_id == run.run_id))
        if not removed.rowcount:  # type: ignore[attr-defined]
            raise NotFound(f"Run '{run_id}' not found.")  # another delete came first

    async def _resting_status(self, thread: ThreadRow) -> str:
        if thread.status == "error":
            return "error"
        return "interrupted" if thread.interrupts else "idle"
