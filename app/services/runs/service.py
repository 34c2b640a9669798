"""Runs, as routers and schedulers use them: one service over the run's jobs, each in
its module: admission (`admission.py`: create, the multitask rules, the queue limit),
execution (`execution.py`), reading (`results.py`), stopping (`cancels.py`) and the
prebuilt SQL (`statements.py`).

A run is a row first: creating one is a transaction that checks the thread, applies the
multitask strategy and inserts the run as pending; a worker claims it when the thread
is free. (A run on a free thread that this process has room for is inserted already
held here, and starts without a claim.) Its stream is recorded by the broker, its
outcome on the row and the thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

from sqlalchemy import or_, select, true

from app.db.database import Database
from app.db.models import PENDING, RUNNING, AssistantRow, RunRow
from app.errors import Conflict
from app.runs.broker import POLL_EVERY_S, Event, StreamBroker
from app.runs.notify import QUEUE, until
from app.runs.pool import WorkerPool
from app.schemas.runs import RunCreate
from app.services.runs.admission import Claim, RunAdmission
from app.services.runs.cancels import RunCancels
from app.services.runs.execution import RunExecutor
from app.services.runs.results import RunResults
from app.services.runs.statements import FINAL
from app.webhooks import Webhooks
from engine import CompiledGraph

# The seq of a thread stream's `run_done` event, which no run records.
RUN_DONE = -1


class RunService:
    def __init__(
        self,
        db: Database,
        broker: StreamBroker,
        pool: WorkerPool,
        results: RunResults,
        cancels: RunCancels,
        executor: RunExecutor,
        admission: RunAdmission,
        webhooks: Webhooks,
    ) -> None:
        self.db = db
        self.broker = broker
        self.pool = pool
        self.results = results
        self.cancels = cancels
        self.executor = executor
        self.admission = admission
        self.webhooks = webhooks

    async def create(
        self, thread_id: str | None, body: RunCreate, *, owner: str, claim: Claim | None = None
    ) -> RunRow:
        """Validate and queue (or start) a run (`RunAdmission.create`)."""
        return await self.admission.create(thread_id, body, owner=owner, claim=claim)

    async def wait(
        self,
        thread_id: str | None,
        body: RunCreate,
        *,
        owner: str,
        client_gone: Callable[[], Awaitable[None]] | None = None,
    ) -> tuple[RunRow, str]:
        """Create a run and wait for its answer (`runs/wait`): the run and its result.
        `client_gone()` returns once the client has left: a run created with
        `on_disconnect: cancel` is then cancelled (action interrupt), as on a stream."""
        run = await self.admission.create(thread_id, body, owner=owner, awaited=True)
        if client_gone is None or body.on_disconnect != "cancel":
            return run, await self.result_of(run)
        answer = asyncio.ensure_future(self.result_of(run))
        gone = asyncio.ensure_future(client_gone())
        try:
            await asyncio.wait((answer, gone), return_when=asyncio.FIRST_COMPLETED)
            if not answer.done():
                await self.cancel(run.thread_id, run.run_id, owner=owner)
            # The answer of a cancelled run too: it ends the request, to no one.
            return run, await answer
        finally:
            gone.cancel()
            answer.cancel()

    def graph_of(self, assistant: AssistantRow) -> CompiledGraph:
        return self.results.graph_of(assistant)

    async def get(self, thread_id: str, run_id: str, *, owner: str) -> RunRow:
        return await self.results.get(thread_id, run_id, owner=owner)

    async def list(
        self, thread_id: str, *, limit: int, offset: int, status: str | None, owner: str
    ) -> list[RunRow]:
        return await self.results.list(
            thread_id, limit=limit, offset=offset, status=status, owner=owner
        )

    async def thread_key(self, thread_id: str, *, owner: str) -> str:
        return await self.results.thread_key(thread_id, owner=owner)

    async def cancel(
        self, thread_id: str, run_id: str, action: str = "interrupt", *, owner: str
    ) -> RunRow | None:
        return await self.cancels.cancel(thread_id, run_id, action, owner=owner)

    async def cancel_many(
        self,
        thread_id: str | None,
        run_ids: list[str] | None,
        status: str | None,
        action: str,
        *,
        owner: str,
    ) -> None:
        await self.cancels.cancel_many(thread_id, run_ids, status, action, owner=owner)

    async def delete(self, thread_id: str, run_id: str, *, owner: str) -> None:
        await self.cancels.delete(thread_id, run_id, owner=owner)

    async def join(self, thread_id: str, run_id: str, *, owner: str) -> str:
        """Wait for the run to end; its final values (or interrupts, or error), as JSON."""
        return await self.result_of(await self.results.get(thread_id, run_id, owner=owner))

    async def result_of(self, run: RunRow) -> str:
        """The result of a run the caller may read, once it has ended, as JSON text."""
        if run.status in FINAL:
            return await self.results.answer(run)
        key = run.run_id
        self.results.awaited[key] += 1
        try:
            await self.broker.wait_done(key, seen_active=True)
            if key in self.results.outcomes:
                return self.results.outcomes[key]
            if key in self.results.ended:
                ended = self.results.ended[key]
            else:
                ended = await self.results.ended_row(key)
        finally:
            self.results.awaited[key] -= 1
            if not self.results.awaited[key]:
                del self.results.awaited[key]
                self.results.outcomes.pop(key, None)
                self.results.ended.pop(key, None)
        if ended is None:
            raise Conflict(
                f"Run '{run.run_id}' was rolled back before it ended (by a later run with "
                "multitask_strategy 'rollback', a cancel, or its thread's deletion)."
            )
        return await self.results.answer(ended)

    async def follow_thread(
        self, tid: str, after: tuple[str, int] | None = None
    ) -> AsyncIterator[tuple[str, list[Event]]]:
        """Every event of every run on the thread, run after run (in the order they were
        made), each run's followed by a `metadata` event `{"status": "run_done",
        "run_id"}` (seq `RUN_DONE`), while the client stays: (run id, a batch, as
        `StreamBroker.follow` gives them). From the runs pending or running now; `after`
        (a run and the seq of the last of its events the client has) resumes after it:
        the rest of that run, if it is one of the thread's (a rolled back run is gone),
        then every run made after it, ended or not."""
        followed: set[str] = set()
        since = None
        if after is not None:
            since, seq = after
            followed.add(since)
            if seq != RUN_DONE and await self._is_run_of(tid, since):
                async for item in self._follow_run(since, seq):
                    yield item
        while True:
            queued = self.broker.notifier.listen(QUEUE)
            run_id = await self._next_run(tid, followed, since)
            if run_id is None:
                await until(queued, POLL_EVERY_S)
                continue
            followed.add(run_id)
            async for item in self._follow_run(run_id, -1):
                yield item

    async def _follow_run(self, run_id: str, after: int) -> AsyncIterator[tuple[str, list[Event]]]:
        async for batch in self.broker.follow(run_id, after):
            yield run_id, batch
        # As LangGraph's server tells a thread's followers that a run ended.
        done = json.dumps({"status": "run_done", "run_id": run_id})
        yield run_id, [Event(RUN_DONE, "metadata", done)]

    async def _is_run_of(self, tid: str, run_id: str) -> bool:
        async with self.db.read() as session:
            found = await session.scalar(
                select(RunRow.run_id).where(RunRow.run_id == run_id, RunRow.thread_id == tid)
            )
        return found is not None

    async def _next_run(self, tid: str, followed: set[str], since: str | None) -> str | None:
        """The thread's first run not `followed` that is pending or running, or was made
        after `since`."""
        wanted = RunRow.status.in_((PENDING, RUNNING))
        if since is not None:
            wanted = or_(wanted, RunRow.run_id > since)
        async with self.db.read() as session:
            return await session.scalar(
                select(RunRow.run_id)
                .where(
                    RunRow.thread_id == tid,
                    wanted,
                    RunRow.run_id.not_in(followed) if followed else true(),
                )
                .order_by(RunRow.run_id)
                .limit(1)
            )

    async def wait_done(self, run_id: str) -> None:
        """Return once the run has ended (or is gone)."""
        await self.broker.wait_done(run_id)
