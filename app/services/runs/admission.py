"""Admitting runs: validate what the client sent, apply the multitask strategy (reject
answers 409; interrupt and rollback cancel the active run; enqueue waits) and the
queue limit, and insert the run as pending, its thread busy, in one transaction. A run
this process can start at once is inserted already held here, and starts without a
claim."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings
from app.db.database import Database, retry_deadlocks
from app.db.models import AssistantRow, RunRow, ThreadRow, columns_of
from app.errors import Conflict, Invalid, NotFound, TooManyRequests
from app.graphs import GraphRegistry
from app.runs.broker import StreamBroker
from app.runs.notify import CHANNEL, QUEUE, STARTED
from app.runs.pool import WorkerPool
from app.schemas.runs import RunCreate
from app.services.assistants import AssistantService
from app.services.common import (
    check_context,
    check_messages,
    check_run_body,
    new_id,
    now,
    parse_uuid,
    snapshot_of,
)
from app.services.runs.cancels import RunCancels
from app.services.runs.execution import RunExecutor
from app.services.runs.kwargs import NOT_KWARGS, stored_kwargs
from app.services.runs.results import RunResults
from app.services.runs.statements import (
    ADD_RUN,
    BUSY,
    LOCK_THREAD,
    QUEUED,
    THREAD,
    THREADS,
    admit_at_once_statement,
)
from app.services.state import read_version, requested_version, version_config
from app.services.threads import new_thread, taken
from app.webhooks import Webhooks
from engine import CompiledGraph
from engine.pregel.context import is_interrupt_id

# The queue limit of the one-statement queueing when the settings set none.
UNLIMITED = 2**31 - 1

# A user at their queue limit may retry once some of their runs had time to start.
QUEUE_RETRY_AFTER_S = 5
# Run in the transaction that inserts a run; raising inserts nothing (see `create`).
Claim = Callable[[AsyncSession], Awaitable[None]]


def _refuse_foreign(thread_owner: str | None, key: str, owner: str, *, create: bool) -> None:
    """The same 404 for a missing thread (no owner; unless the run creates it) and for
    another user's; 409 when asked to create a thread whose id another user's thread has."""
    foreign = thread_owner is not None and thread_owner != owner
    if foreign and create:
        raise taken(key)
    if foreign or (thread_owner is None and not create):
        raise NotFound(f"Thread '{key}' not found; pass if_not_exists='create' to create it.")


class RunAdmission:
    def __init__(
        self,
        db: Database,
        graphs: GraphRegistry,
        assistants: AssistantService,
        broker: StreamBroker,
        pool: WorkerPool,
        results: RunResults,
        cancels: RunCancels,
        executor: RunExecutor,
        webhooks: Webhooks,
        settings: Settings,
    ) -> None:
        self.db = db
        self.graphs = graphs
        self.assistants = assistants
        self.broker = broker
        self.pool = pool
        self.results = results
        self.cancels = cancels
        self.executor = executor
        self.webhooks = webhooks
        self.settings = settings
        # The thread as `THREAD` reads it, and its checkpoint head, for a run started here.
        self._thread = THREAD.add_columns(executor.saver.head_of(THREADS.thread_id).label("head"))

    async def create(
        self,
        thread_id: str | None,
        body: RunCreate,
        *,
        owner: str,
        claim: Claim | None = None,
        awaited: bool = False,
    ) -> RunRow:
        """Validate everything the client sent, then queue the run in one transaction;
        `claim`, run first in that transaction, may raise to insert nothing (a cron's
        occurrence is claimed with its run, so that it runs once). `awaited`: the caller
        waits for the run's answer next (`RunRow.awaited`)."""
        modes = body.stream_mode if isinstance(body.stream_mode, list) else [body.stream_mode]
        limit = self.settings.max_messages
        check_messages(body.input, limit, "input")
        check_messages(body.command and body.command.update, limit, "command.update")
        stateless = thread_id is None
        if stateless and body.command is not None and body.command.resume is not None:
            raise Invalid(
                "command.resume answers an interrupt of a thread: give the thread "
                "(POST /threads/{thread_id}/runs...); a stateless run starts a new one."
            )
        if not stateless and body.on_completion == "delete":
            raise Invalid(
                "on_completion: 'delete' is for a stateless run (POST /runs...), whose "
                "thread is its own; a run on a thread would delete the thread and its "
                "history."
            )
        create = stateless or body.if_not_exists == "create"
        key = new_id() if stateless else parse_uuid(thread_id or "", "thread_id")
        start_at = requested_version(body.checkpoint, body.checkpoint_id)
        # The version to start from (an older one: time travel; a subgraph's: the run
        # starts from the versions of that time of the graphs around it).
        version = version_config(key, start_at)
        checkpoint_id = version["configurable"].get("checkpoint_id")
        addressed = bool(checkpoint_id or start_at.checkpoint_ns)
        if not stateless and (addressed or body.command is not None):
            # Before anything reads the thread's checkpoints: a foreign thread tells nothing.
            async with self.db.read() as session:
                thread = await session.get(ThreadRow, key)
                _refuse_foreign(thread and thread.owner, key, owner, create=create)
        assistant = await self.assistants.resolve(body.assistant_id, owner=owner)
        graph = self.results.graph_of(assistant)
        check_context(graph, assistant, body)
        await self.webhooks.check(body.webhook)  # 422 if it cannot be called
        check_run_body(graph, body)
        if addressed:
            await read_version(graph, version)
        if body.command is not None and body.command.resume is not None:
            await self._require_interrupt(assistant.graph_id, graph, version, body.command.resume)
        run = self._new_run(key, assistant, body, modes, checkpoint_id, stateless, owner, awaited)
        # A run this process can start at once is inserted already held by it: its
        # first events then wait for no claim. Two creations racing on one thread both
        # try; the index on running runs lets one through, and the other queues.
        start = not body.after_seconds
        try:
            if (
                start
                and not stateless
                and not claim
                and await self._admit_at_once(run, assistant, owner)
            ):
                cancel = []
            else:
                cancel = await self._insert(
                    run,
                    body,
                    assistant,
                    owner,
                    create=create,
                    start=start,
                    claim=claim,
                    stateless=stateless,
                )
        except IntegrityError:
            # Another admission on the thread came first: it started a run (the index on
            # running runs) or made the thread (its key). Admitted again, this run finds
            # that thread, and queues.
            if run.status == "running":
                self.pool.release(run)
                run = self._new_run(
                    key, assistant, body, modes, checkpoint_id, stateless, owner, awaited
                )
            cancel = await self._insert(
                run,
                body,
                assistant,
                owner,
                create=create,
                start=False,
                claim=claim,
                stateless=stateless,
            )
        except BaseException:
            if run.status == "running":
                self.pool.release(run)
            raise
        if run.status == "running":
            self.broker.open(run.run_id)
            # Readers of the thread in other processes: with the run's first events.
            self.broker.announce_later(STARTED)
            self.pool.adopt(run, self.executor.execute(run, assistant))
        for other in cancel:
            # A run another request rolled back meanwhile is gone already: done.
            with contextlib.suppress(NotFound):
                await self.cancels.cancel(key, other, body.multitask_strategy, owner=owner)
        # Wakes this process's readers (and workers, for a queued run) now; other
        # processes get the notification.
        self.broker.notifier.fire(QUEUE if run.status == "pending" else STARTED)
        return run

    async def _admit_at_once(self, run: RunRow, assistant: AssistantRow, owner: str) -> bool:
        """The usual turn of a chat, on PostgreSQL: the caller's idle thread gets the run
        in one statement in autocommit mode, one round trip on the way to its first
        token where the general path (`_insert`) takes four: started here when this
        process has room, else queued for a worker (within the queue limit, and
        announced, as `_insert` does). False, with nothing written, when it does not
        apply."""
        if self.db.dialect != "postgresql":
            return False
        started = self.pool.take(run)
        values = columns_of(run)
        params = {
            "thread": run.thread_id,
            "thread_owner": owner,
            "thread_patch": {
                "graph_id": assistant.graph_id,
                "assistant_id": assistant.assistant_id,
            },
            **{f"run_{name}": value for name, value in values.items()},
        }
        if not started:
            limit = self.settings.max_queued_runs_per_user
            params |= {
                "queue_owner": owner,
                "queue_limit": limit or UNLIMITED,
                "channel": CHANNEL,
                "queue_key": QUEUE,
            }
        saver = self.executor.saver
        statement = admit_at_once_statement(
            tuple(values), queued=not started, head_of=saver.head_of if started else None
        )
        try:
            added = await self.db.write_one(statement, params)
        except IntegrityError:  # a run started on the thread meanwhile
            added = []
        except BaseException:
            if started:
                self.pool.release(run)
            raise
        if started and added:
            saver.expect_head(run.thread_id, added[0].head)
        elif started:
            self.pool.release(run)
        return bool(added)

    async def _insert(
        self,
        run: RunRow,
        body: RunCreate,
        assistant: AssistantRow,
        owner: str,
        *,
        create: bool,
        start: bool,
        claim: Claim | None,
        stateless: bool,
    ) -> list[str]:
        """Insert `run` in one transaction with the multitask strategy applied (pending
        runs it stops are stopped in it); return the running run to cancel. With `start`,
        a run on a free thread is inserted held by this process if it has room (see
        `WorkerPool.take`); `stateless`: on a thread of a new random id. A transaction
        PostgreSQL undid to break a deadlock is made again (admissions and ends of a
        burst of runs on one thread take the thread's row and the runs' index in
        different orders)."""
        key = run.thread_id
        stops_active = body.multitask_strategy in ("interrupt", "rollback")

        async def admit() -> tuple[Any, list[str], list[str]]:
            # Urgent: on SQLite the run's first token waits for this transaction, which
            # would otherwise queue behind the saves and outcomes of every other run.
            async with self.db.write(urgent=True) as session:
                if claim is not None:
                    await claim(session)
                if key in self.executor.threads.expiring:
                    raise NotFound(f"Thread '{key}' not found: its time to live ran out.")
                if stops_active and self.db.dialect == "postgresql":
                    # Each must stop the runs admitted before it, those not committed
                    # when it started included: such admissions take turns. (SQLite's
                    # writers do anyway.)
                    await session.execute(LOCK_THREAD, {"thread": key})
                found = (await session.execute(self._thread, {"thread": key})).first()
                _refuse_foreign(found and found.owner, key, owner, create=create)
                active = sorted(found.active.split()) if found and found.active else []
                if active and body.multitask_strategy == "reject":
                    raise Conflict(
                        f"Thread '{key}' is busy with run '{active[0]}' "
                        "and multitask_strategy is 'reject'."
                    )
                stopped: list[str] = []
                if active and stops_active:
                    # Those pending stop now: one whose cancel came after this commit
                    # could start first, and run after this run.
                    stopped = await self.cancels.stop_pending(
                        session, active, body.multitask_strategy
                    )
                    active = [run_id for run_id in active if run_id not in stopped]
                if not (start and not active and self.pool.take(run)):
                    # Only a run that queues counts toward the queue limit.
                    await self._check_queue(session, owner)
                # A new thread keeps the metadata of the run that made it, as LangGraph's
                # server's does.
                metadata = {
                    **((found.metadata or {}) if found else run.metadata_),
                    "graph_id": assistant.graph_id,
                    "assistant_id": assistant.assistant_id,
                }
                if found:
                    busy = await session.execute(BUSY, {"thread": key, "metadata": metadata})
                    if not busy.rowcount:  # type: ignore[attr-defined]
                        # Deleted since it was read: a run added now would outlive it.
                        raise NotFound(f"Thread '{key}' not found: it was deleted.")
                else:
                    thread = new_thread(key, metadata, owner)
                    thread.status = "busy"
                    await session.execute(insert(ThreadRow.__table__).values(columns_of(thread)))
                    if not stateless:  # the client's id, which a deleted thread may have had
                        await self.executor.threads.reuse(session, key)
                await session.execute(ADD_RUN, columns_of(run))
                if run.status == "pending":
                    await self.broker.notifier.announce(session, QUEUE)
                return found, active, stopped

        def undone() -> None:
            if run.status == "running":  # taken in the transaction undone
                self.pool.release(run)

        found, active, stopped = await retry_deadlocks(admit, undone)
        if run.status == "running" and found is not None:
            self.executor.saver.expect_head(key, found.head)
        await self.cancels.closed(stopped)
        return active if stops_active else []

    async def _check_queue(self, session: AsyncSession, owner: str) -> None:
        """429 when the owner already has as many pending runs as a user may."""
        limit = self.settings.max_queued_runs_per_user
        if not limit:
            return
        queued = await session.scalar(QUEUED, {"owner": owner})
        if (queued or 0) >= limit:
            raise TooManyRequests(
                f"Too many queued runs: at most {limit} pending runs per user; wait for "
                "some to start.",
                retry_after_s=QUEUE_RETRY_AFTER_S,
            )

    def _new_run(
        self,
        thread_id: str,
        assistant: AssistantRow,
        body: RunCreate,
        modes: list[str],
        checkpoint_id: str | None,
        stateless: bool,
        owner: str,
        awaited: bool,
    ) -> RunRow:
        stamp = now()
        kwargs = body.model_dump(exclude=NOT_KWARGS, mode="json")
        kwargs.update(stream_mode=modes, checkpoint_id=checkpoint_id)
        # The config as sent, without the keys the client left out.
        kwargs["config"] = body.config and body.config.model_dump(exclude_unset=True)
        if stateless:
            kwargs["on_completion"] = body.on_completion or "delete"
        # A run that may start at once has none: an ended run's row keeps no spent time.
        not_before = stamp + timedelta(seconds=body.after_seconds) if body.after_seconds else None
        return RunRow(
            run_id=new_id(),
            thread_id=thread_id,
            assistant_id=assistant.assistant_id,
            status="pending",
            metadata_={**((body.config and body.config.metadata) or {}), **(body.metadata or {})},
            multitask_strategy=body.multitask_strategy,
            kwargs=stored_kwargs(kwargs),
            result=None,
            owner=owner,
            cancel_action=None,
            attempt=0,
            not_before=not_before,
            created_at=stamp,
            updated_at=stamp,
            awaited=awaited,
        )

    async def _require_interrupt(
        self,
        graph_id: str,
        graph: CompiledGraph,
        version: dict[str, Any],
        resume: Any,
    ) -> None:
        """A resume must answer a question that is waiting (at the named version), in a
        form the graph can read: a refused answer must not reach the graph, where it
        would be saved as the answer and fail every later resume at that version."""
        state = await snapshot_of(graph, version)
        if not state.interrupts:
            conf = version["configurable"]
            checkpoint_id = conf.get("checkpoint_id")
            raise Conflict(
                f"Thread '{conf['thread_id']}' has no pending interrupt to resume"
                + (f" at checkpoint '{checkpoint_id}'." if checkpoint_id else ".")
            )
        pending = {i.id: i.value for i in state.interrupts}
        if isinstance(resume, dict) and resume and all(map(is_interrupt_id, resume)):
            # A map of answers by interrupt id, as LangGraph reads one: an id no longer
            # waiting (answered since, or of another thread) would be silently unanswered.
            stale = sorted(set(resume) - set(pending))
            if stale:
                raise Conflict(
                    f"No interrupt waiting has the id {stale[0]!r}; pending ids: {sorted(pending)}."
                )
            answers = resume
        elif len(pending) > 1:
            raise Invalid(
                "Several interrupts are pending: resume with a map of interrupt id to value; "
                f"pending ids: {sorted(pending)}."
            )
        else:
            answers = {next(iter(pending)): resume}
        check = self.graphs.resume_checks.get(graph_id)
        for interrupt_id, answer in answers.items() if check else ():
            try:
                check(pending[interrupt_id], answer)  # type: ignore[misc]
            except ValueError as exc:
                raise Invalid(f"Cannot resume: {exc}") from None
