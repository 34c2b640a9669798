"""Workers: claim runs from the runs table and execute them, under a lease.

A claim is one UPDATE of the oldest pending run whose thread has no running run and no
older pending run (or of a running run whose lease expired: its worker died). A unique
index on running runs per thread makes the database refuse a second running run on a
thread, whatever the number of workers and processes.

A process executes at most `user_share` runs of one user at once: the others of that
user wait in the queue, so one user's burst of slow runs cannot hold every place while
other users' turns wait behind it.

While runs execute, one heartbeat per process reads their rows back, so a cancel made
through any API process reaches the run within a heartbeat, and renews the leases that
are due: a lease is renewed once a quarter of it has passed, so a run shorter than that
(a chat turn) is never updated. The heartbeat runs on the same event loop as the runs: a
process whose loop is stuck stops renewing, and its runs go to another worker.

A process that cannot renew (the database is unreachable, or slow) stops its runs
itself before their leases may have expired: once another worker may have claimed a
run, this one must write nothing more for it; and each save of a run's checkpoints
checks, in its own statement or transaction, that this process still holds the run
(`RunFence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, exists, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.database import Database
from app.db.models import PENDING, RUNNING, RunRow, from_columns
from app.outages import Retrying
from app.services.common import now
from engine.checkpoint.base import PutCheckpoint, SaveOp
from engine.checkpoint.sql.saver import UNFENCED, SQLSaver

log = logging.getLogger(__name__)
IDLE_POLL_S = 1.0

Execute = Callable[[RunRow], Coroutine[Any, Any, None]]
# Called with (run_id, action) when the heartbeat learns that a run must stop:
# a cancel action asked through the API, or "abandon" when the lease was lost.
OnStop = Callable[[str, str], None]


class LeaseLost(Exception):
    """This process no longer holds the run: it was deleted (with its thread, say), or
    another worker took it over."""


class RunFence:
    """The saver's fence (engine.checkpoint.sql.saver.Fence) for the runs executing in a
    process: refuses the checkpoints of a run this process lost. On PostgreSQL the run's
    row stays share-locked until the saves commit, so a worker taking the run over waits
    for them and then continues from them."""

    def __init__(self, worker_id: str, running: Mapping[str, object], dialect: str) -> None:
        self.worker_id = worker_id
        self.running = running
        held = select(RunRow.run_id).where(
            RunRow.run_id == bindparam("fence_run"),
            RunRow.worker_id == bindparam("fence_worker"),
            RunRow.status == RUNNING,
        )
        self._held = held.with_for_update(read=True) if dialect == "postgresql" else held
        # The saves' one statement holds the same check (`condition`).
        self._held_condition = exists(self._held)

    async def __call__(self, conn: AsyncConnection, ops: Sequence[SaveOp]) -> None:
        # One run's saves, nearly always: a statement per run keeps it cached whole (an
        # expanding IN list is rendered anew on every call).
        for run_id in sorted(self._runs(ops)):
            if await conn.scalar(self._held, self._params(run_id)) is None:
                raise LeaseLost(f"Run {run_id} is no longer held here.")

    def condition(self, ops: Sequence[SaveOp]) -> tuple[ColumnElement[bool], dict[str, Any]] | None:
        runs = self._runs(ops)
        if not runs:
            return UNFENCED, {}
        if len(runs) > 1:
            return None
        [run_id] = runs
        return self._held_condition, self._params(run_id)

    def _runs(self, ops: Sequence[SaveOp]) -> set[str]:
        """The runs executing here that the saves are checkpoints of."""
        return {
            run_id
            for op in ops
            if isinstance(op, PutCheckpoint)
            and (run_id := op.metadata.get("run_id")) in self.running
        }

    def _params(self, run_id: str) -> dict[str, Any]:
        return {"fence_run": run_id, "fence_worker": self.worker_id}


class WorkerPool:
    def __init__(
        self,
        db: Database,
        on_stop: OnStop | None = None,
        *,
        concurrency: int,
        lease_s: float,
        heartbeat_s: float,
        user_share: int = 0,
    ) -> None:
        """`on_stop` (default: `stop_local`) is told which runs must stop here;
        `user_share`: the most runs of one owner executed here at once (0: no limit)."""
        self.db = db
        self.on_stop = on_stop or self.stop_local
        self._claiming_runs = Retrying(log, "claiming runs")
        self._renewing = Retrying(log, "renewing leases")
        self.concurrency = concurrency
        self.user_share = user_share
        # The owner of each run held here (running or reserved), and the owners at their
        # share with runs left queued: the end of one of their runs wakes the claimer.
        self.owners: dict[str, str] = {}
        self._capped: set[str] = set()
        self.lease = timedelta(seconds=lease_s)
        self.heartbeat_s = heartbeat_s
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.running: dict[str, asyncio.Task[None]] = {}
        self.fence = RunFence(self.worker_id, self.running, db.dialect)
        # Loop time at which each running run's lease was last taken or renewed.
        self.renewed: dict[str, float] = {}
        # Renew a lease this long after it was taken or last renewed, and stop the run
        # here if that has not succeeded by `hold_s`, a margin before the lease ends.
        self.renew_s = max(heartbeat_s, lease_s / 4)
        self.hold_s = lease_s - self.renew_s
        self._beating: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []
        self._claiming = False
        # The claimer stopped for want of room: a run ending here must wake it (otherwise
        # runs that end wake it only when their thread has another run waiting), and runs
        # may be queued, so new ones queue too rather than start at once ahead of them.
        self._full = False
        # Places held for runs being created here to start at once (see `take`).
        self.reserved = 0
        # Why a run executing here must stop: interrupt, rollback (asked through the
        # API), requeue (shutdown) or abandon (its lease went to another worker).
        self.stop_actions: dict[str, str] = {}
        # Runs recording their outcome: too late to stop them.
        self.finishing: set[str] = set()
        # Runs cancelled here already: they are stopping (rolling back, recording their
        # interruption), and a second cancel would cut that short (see `stop_local`).
        self.stopping: set[str] = set()
        # The saver of the runs executed here, told each claimed run's checkpoint head.
        self._heads: SQLSaver | None = None

    def start(self, execute: Execute, heads: SQLSaver | None = None) -> None:
        """Claim runs and execute each with `execute`. The claim also returns the
        checkpoint head of each run's thread and its last record, which it tells `heads`
        (the saver the runs read it with: `SQLSaver.expect_head`), sparing each run's
        first read."""
        self._heads = heads
        self._claiming = True
        self._loops = [
            asyncio.create_task(self._dispatch(execute), name="threadline: dispatch"),
            asyncio.create_task(self._heartbeat(), name="threadline: heartbeat"),
        ]

    async def stop(self, grace_s: float) -> None:
        """Stop claiming; give runs in flight `grace_s` to finish, then stop them (their
        owner re-queues them, so another worker continues from their last checkpoint)."""
        self._claiming = False
        self.wake()
        if self.running:
            log.info("stopping: %d runs in flight get %gs to finish", len(self.running), grace_s)
            await asyncio.wait(list(self.running.values()), timeout=grace_s)
        if self.running:
            log.info("stopping: re-queued for another worker: %s", ", ".join(self.running))
        for run_id in list(self.running):
            self.on_stop(run_id, "requeue")
        await asyncio.gather(*self.running.values(), return_exceptions=True)
        tasks = [*self._loops, *([self._beating] if self._beating else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loops = []

    def wake(self) -> None:
        self._wakeup.set()

    @property
    def room(self) -> int:
        return self.concurrency - len(self.running) - self.reserved

    def take(self, run: RunRow) -> bool:
        """Make a new run held here under a fresh lease, for the process creating it to
        start at once (its first events need no claim). False when this process takes
        no runs, is full, or was full when it last claimed (runs may be queued: a new
        run must not pass them). Its place is kept until `adopt` or `release`."""
        if not self._claiming or self._full or self.room <= 0:
            return False
        if self._at_share(run.owner):
            self._capped.add(run.owner)
            return False
        self.reserved += 1
        self.owners[run.run_id] = run.owner
        run.status = "running"
        run.worker_id = self.worker_id
        run.lease_expires_at = now() + self.lease
        run.attempt = 1
        self.renewed[run.run_id] = asyncio.get_running_loop().time()
        return True

    def release(self, run: RunRow) -> None:
        """Give back the place of a run that was not inserted after all (held by `take`;
        it is pending again, as it was)."""
        self.reserved -= 1
        self.renewed.pop(run.run_id, None)
        self.owners.pop(run.run_id, None)
        run.status, run.worker_id, run.lease_expires_at, run.attempt = "pending", None, None, 0
        self.wake()  # the place may serve a queued run

    def adopt(self, run: RunRow, work: Coroutine[Any, Any, None]) -> None:
        """Execute a run that was inserted held here (`take`), by running `work`."""
        self.reserved -= 1
        self.running[run.run_id] = asyncio.create_task(self._run(run, work))

    async def _dispatch(self, execute: Execute) -> None:
        """One claimer per process: it takes runs while there is room, then sleeps until
        a run is created or finishes here (or, as a safety net for runs created by other
        processes and runs due later, until the idle poll)."""
        while self._claiming:
            # Cleared before claiming, so a wake-up during a claim is not lost.
            self._wakeup.clear()
            while self._claiming and self.room > 0:
                room = self.room
                taken_at = asyncio.get_running_loop().time()
                try:
                    runs = await self.claim(room)
                except Exception as exc:
                    self._claiming_runs.failed(exc)
                    runs = []
                else:
                    self._claiming_runs.succeeded()
                for run in runs:
                    work = execute(run)
                    self.running[run.run_id] = asyncio.create_task(self._run(run, work))
                    self.renewed[run.run_id] = taken_at
                if len(runs) < room:
                    break  # nothing more to take now
            self._full = self._claiming and self.room <= 0
            await self.sleep()

    async def sleep(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), IDLE_POLL_S)

    async def _run(self, run: RunRow, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        finally:
            self.running.pop(run.run_id, None)
            self.renewed.pop(run.run_id, None)
            self.stopping.discard(run.run_id)
            owner = self.owners.pop(run.run_id, None)
            if self._full or owner in self._capped:
                self._capped.discard(owner)
                self.wake()

    def _at_share(self, owner: str) -> bool:
        """Whether this process executes (or has reserved a place for) as many runs of
        `owner` as one user may have here."""
        if not self.user_share:
            return False
        return sum(held == owner for held in self.owners.values()) >= self.user_share

    async def claim(self, room: int) -> list[RunRow]:
        """Take up to `room` runs that may start now (or whose worker died), oldest
        first, in one statement that returns them (a transaction of its own: every
        worker tries, when a run is queued). The statement passes over the owners at
        their share here as the database counts them, which may be behind this process
        (a run that ended, a place reserved): runs past an owner's share go back to the
        queue, and the claim is made again for the places they left while it takes some.
        Runs taken are returned even if a later round fails: they are held here."""
        kept: list[RunRow] = []
        while len(kept) < room:
            wanted = room - len(kept)
            try:
                rows = await self._claim_rows(wanted)
            except Exception:
                if not kept:
                    raise
                log.warning("claiming runs: a further claim failed", exc_info=True)
                break
            over, before = [], len(kept)
            for row in rows:
                if self._at_share(row.owner):
                    self._capped.add(row.owner)
                    over.append(row.run_id)
                    continue
                if self._heads is not None:
                    self._heads.expect_head(row.thread_id, row.checkpoint_head, row.checkpoint_last)
                self.owners[row.run_id] = row.owner
                kept.append(from_columns(RunRow, row))
            for run_id in over:  # rare: a burst of one owner meeting free places
                await self._unclaim(run_id)
            if len(rows) < wanted or not over or len(kept) == before:
                break
        return kept

    async def _unclaim(self, run_id: str) -> None:
        try:
            await self.db.write_one(
                self._unclaim_statement, {"run": run_id, "worker": self.worker_id}
            )
        except Exception:
            # Held here but not executed: taken over by another claim once its lease ends.
            log.warning("run %s: could not put it back in the queue", run_id, exc_info=True)

    async def _claim_rows(self, room: int) -> list[Any]:
        stamp = now()
        params = {"room": room, "now": stamp, "lease": stamp + self.lease, "worker": self.worker_id}
        if self.user_share:
            params["share"] = self.user_share
        try:
            return await self.db.write_one(self._claim_statement, params)
        except IntegrityError:
            # Another worker started a run on one of these threads first.
            return []

    @functools.cached_property
    def _unclaim_statement(self) -> Any:
        """Puts a run just claimed here back in the queue, as it was."""
        runs = RunRow.__table__
        return (
            update(runs)
            .where(
                runs.c.run_id == bindparam("run"),
                runs.c.worker_id == bindparam("worker"),
            )
            .values(
                status=PENDING, worker_id=None, lease_expires_at=None, attempt=runs.c.attempt - 1
            )
        )

    @functools.cached_property
    def _claim_statement(self) -> Any:
        """Built once (building it was most of a claim's CPU), on the table's columns:
        an ORM statement is copied on every execution, and loads its rows in a session."""
        runs = RunRow.__table__
        older, running = runs.alias("older"), runs.alias("running")
        stamp = bindparam("now")
        startable = and_(
            runs.c.status == PENDING,
            or_(runs.c.not_before.is_(None), runs.c.not_before <= stamp),
            ~exists().where(
                and_(running.c.thread_id == runs.c.thread_id, running.c.status == RUNNING)
            ),
            ~exists().where(
                and_(
                    older.c.thread_id == runs.c.thread_id,
                    older.c.status == PENDING,
                    older.c.run_id < runs.c.run_id,
                )
            ),
        )
        if self.user_share:
            mine = runs.alias("mine")
            held = (
                select(func.count())
                .where(
                    mine.c.owner == runs.c.owner,
                    mine.c.status == RUNNING,
                    mine.c.worker_id == bindparam("worker"),
                )
                .scalar_subquery()
            )
            startable = and_(startable, held < bindparam("share"))
        orphaned = and_(runs.c.status == RUNNING, runs.c.lease_expires_at < stamp)
        chosen = (
            select(runs.c.run_id)
            .where(or_(startable, orphaned))
            .order_by(runs.c.run_id)
            .limit(bindparam("room"))
        )
        if self.db.dialect == "postgresql":
            chosen = chosen.with_for_update(skip_locked=True, of=runs)
        claim = (
            update(runs)
            .where(
                runs.c.run_id.in_(chosen),
                or_(runs.c.status == PENDING, runs.c.lease_expires_at < stamp),
            )
            .values(
                status="running",
                worker_id=bindparam("worker"),
                lease_expires_at=bindparam("lease"),
                attempt=runs.c.attempt + 1,
                updated_at=stamp,
            )
            .returning(*runs.c)
        )
        if self._heads is None:
            return claim
        # A worker whose journal of the thread is one record behind (the other worker
        # took the chat's last turn) applies that record instead of reading it.
        return claim.returning(
            self._heads.head_of(runs.c.thread_id).label("checkpoint_head"),
            self._heads.last_record_of(runs.c.thread_id).label("checkpoint_last"),
        )

    async def _heartbeat(self) -> None:
        """Every beat: stop the runs whose lease may be gone, and renew the others. A
        renewal that hangs does not hold up the next check."""
        while True:
            await asyncio.sleep(self.heartbeat_s)
            self._expire()
            if self.running and (self._beating is None or self._beating.done()):
                self._beating = asyncio.create_task(self._renew(), name="threadline: lease")

    def _expire(self) -> None:
        deadline = asyncio.get_running_loop().time() - self.hold_s
        for run_id, renewed in list(self.renewed.items()):
            if renewed < deadline and run_id in self.running:
                log.warning("run %s: lease not renewed in time, stopping it here", run_id)
                self.renewed.pop(run_id)
                self.on_stop(run_id, "abandon")

    async def _renew(self) -> None:
        try:
            await self.beat()
        except Exception as exc:
            self._renewing.failed(exc)
        else:
            self._renewing.succeeded()

    async def beat(self) -> None:
        """Stop the runs cancelled or lost here, and renew the leases that are due.

        The rows are read, not updated, unless a lease is due: renewing every running row
        on every beat had the UPDATE wait for the share locks their saves hold (`fence`),
        and hold up, while it waited, the saves of the rows it had already locked."""
        ids = list(self.running)
        started = asyncio.get_running_loop().time()
        due = [i for i in ids if started - self.renewed.get(i, started) >= self.renew_s]
        held = and_(RunRow.worker_id == self.worker_id, RunRow.status == RUNNING)
        kept: dict[str, str | None] = {}
        if len(due) < len(ids):
            async with self.db.read() as session:
                rows = await session.execute(
                    select(RunRow.run_id, RunRow.cancel_action).where(
                        RunRow.run_id.in_(set(ids).difference(due)), held
                    )
                )
                kept.update(rows.all())
        if due:
            async with self.db.write() as session:
                rows = await session.execute(
                    update(RunRow)
                    .where(RunRow.run_id.in_(due), held)
                    .values(lease_expires_at=now() + self.lease)
                    .returning(RunRow.run_id, RunRow.cancel_action)
                )
                renewed = dict(rows.all())
            kept.update(renewed)
            for run_id in renewed.keys() & self.renewed.keys():
                self.renewed[run_id] = started
        for run_id in ids:
            if run_id not in self.running:
                continue
            if run_id not in kept:
                self.on_stop(run_id, "abandon")
            elif kept[run_id]:
                self.on_stop(run_id, kept[run_id])

    def stop_local(self, run_id: str, action: str) -> None:
        """Stop a run if it executes in this process (else its worker's heartbeat will);
        its executor reads why in `stop_actions`.

        Once only: the heartbeat asks again on every beat while the run's row keeps its
        cancel action, and a second cancel landed in the first one's handling (a
        rollback's deletes, an interruption's record), which then never ended: the run
        stayed running under its lease until another worker took it over and stopped it
        again, some 20 s later, while its waiters waited."""
        if run_id in self.finishing or run_id in self.stopping or run_id not in self.running:
            return
        self.stopping.add(run_id)
        self.stop_actions.setdefault(run_id, action)
        self.cancel_local(run_id)

    def cancel_local(self, run_id: str) -> bool:
        task = self.running.get(run_id)
        if task is None:
            return False
        task.cancel()
        return True
