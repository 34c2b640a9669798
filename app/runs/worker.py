"""Workers: claim pending runs from the runs table and execute them.

A claim is one UPDATE of a pending run whose thread has no running run and no older
pending run; a unique index on running runs per thread makes the database refuse a
second one, whatever the number of workers. Each claimed run executes as its own task,
so a cancel reaches exactly that run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from sqlalchemy import and_, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased

from app.db.database import Database
from app.db.models import Run
from app.services.common import now

log = logging.getLogger(__name__)
IDLE_POLL_S = 0.25

Execute = Callable[[Run], Coroutine[Any, Any, None]]


class WorkerPool:
    def __init__(self, db: Database, execute: Execute, concurrency: int) -> None:
        self.db = db
        self.execute = execute
        self.concurrency = concurrency
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.running: dict[str, asyncio.Task[None]] = {}
        self._wakeup = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._loops = [asyncio.create_task(self._loop()) for _ in range(self.concurrency)]

    async def stop(self) -> None:
        """Stop claiming; runs still executing are cancelled (their owner re-queues them)."""
        for task in [*self._loops, *self.running.values()]:
            task.cancel()
        await asyncio.gather(*self._loops, *self.running.values(), return_exceptions=True)
        self._loops = []

    def wake(self) -> None:
        self._wakeup.set()

    async def _loop(self) -> None:
        while True:
            try:
                run = await self.claim()
            except Exception:
                log.exception("claiming a run failed")
                run = None
            if run is None:
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), IDLE_POLL_S)
                continue
            task = asyncio.create_task(self.execute(run))
            self.running[run.run_id] = task
            try:
                # wait() rather than await: a cancelled run must not cancel this loop.
                await asyncio.wait({task})
            finally:
                self.running.pop(run.run_id, None)
            self.wake()

    async def claim(self) -> Run | None:
        """Take the oldest run that may start now, or None."""
        older = aliased(Run)
        running = aliased(Run)
        stamp = now()
        query = (
            select(Run.run_id)
            .where(
                Run.status == "pending",
                Run.not_before <= stamp,
                ~exists().where(
                    and_(running.thread_id == Run.thread_id, running.status == "running")
                ),
                ~exists().where(
                    and_(
                        older.thread_id == Run.thread_id,
                        older.status == "pending",
                        older.run_id < Run.run_id,
                    )
                ),
            )
            .order_by(Run.run_id)
            .limit(1)
        )
        if self.db.dialect == "postgresql":
            query = query.with_for_update(skip_locked=True, of=Run)
        try:
            async with self.db.write() as session:
                run_id = await session.scalar(query)
                if run_id is None:
                    return None
                claimed = await session.execute(
                    update(Run)
                    .where(Run.run_id == run_id, Run.status == "pending")
                    .values(
                        status="running",
                        worker_id=self.worker_id,
                        attempt=Run.attempt + 1,
                        updated_at=stamp,
                    )
                )
                if claimed.rowcount != 1:  # type: ignore[attr-defined]
                    return None
                return await session.get(Run, run_id, populate_existing=True)
        except IntegrityError:
            # Another worker started a run on this thread first.
            return None

    def cancel_local(self, run_id: str) -> bool:
        task = self.running.get(run_id)
        if task is None:
            return False
        task.cancel()
        return True
