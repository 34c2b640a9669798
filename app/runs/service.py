"""Runs: create them (with the multitask rules), execute them, cancel, join, list.

A run is a row first: creating one is a transaction that checks the thread, applies the
multitask strategy and inserts the run as pending; a worker claims it when the thread
is free. (A run on a free thread that this process has room for is inserted already
held here, and starts without a claim.) Its stream is recorded by the broker, its
outcome on the row and the thread.

A run belongs to the user who created it, on their own thread: every read, cancel and
delete names the owner, and another user's run is answered exactly as a missing one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Integer,
    String,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    exists,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from app import logs
from app.auth import LOCAL_USER, GraphUser
from app.config import Settings
from app.db.database import Database
from app.db.models import Assistant, Cron, Run, RunEvent, Thread, columns_of
from app.errors import Conflict, Invalid, NotFound, TooManyRequests
from app.graphs import GraphRegistry, run_context
from app.jsonable import jsonable, to_json
from app.runs.broker import POLL_EVERY_S, Event, StreamBroker
from app.runs.crons import CronScheduler
from app.runs.events import EventMapper, engine_modes
from app.runs.notify import CHANNEL, QUEUE, STARTED, payloads, until
from app.runs.worker import LeaseLost, WorkerPool
from app.schemas.runs import RunCreate
from app.schemas.runs import Send as SendModel
from app.schemas.threads import ThreadStatus
from app.services import assistants
from app.services.common import check_messages, error_message, new_id, now, parse_uuid
from app.services.state import read_version, requested_version, version_config
from app.services.threads import (
    Head,
    head_of,
    new_thread,
    owned,
    settle,
    settle_params,
    settle_statement,
    taken,
)
from app.webhooks import Webhooks
from engine import Command, CompiledGraph, GraphRecursionError, Send, StateSnapshot
from engine.checkpoint.base import BaseCheckpointSaver
from engine.constants import CONFIG_KEY_RUNTIME
from engine.errors import CheckpointNotFoundError
from engine.runtime import Runtime
from engine.store.base import BaseStore

log = logging.getLogger(__name__)
FINAL = frozenset({"success", "error", "timeout", "interrupted"})
# The key of a result (and of a `values` event) under which the open interrupts follow.
INTERRUPTS = "__interrupt__"
# A user at their queue limit may retry once some of their runs had time to start.
QUEUE_RETRY_AFTER_S = 5
# Run in the transaction that inserts a run; raising inserts nothing (see `create`).
Claim = Callable[[AsyncSession], Awaitable[None]]

# The run's row while one attempt holds it (bound with `_holder(run)`). Once its lease
# went to another worker (this process lost the database for too long), that attempt's
# outcome must not overwrite the other's.
_HELD = and_(
    Run.run_id == bindparam("held_run"),
    Run.status == "running",
    Run.worker_id == bindparam("held_by"),
    Run.attempt == bindparam("held_attempt"),
)
# Built once, as each run executes them: building a statement costs more than running it.
# Core statements on the table, not ORM ones: the ORM's bulk machinery cost more than
# the statements.
_RECORD = (
    update(Run.__table__)
    .where(_HELD)
    .values(
        status=bindparam("outcome"),
        checkpoint_id=bindparam("outcome_checkpoint"),
        result=bindparam("outcome_result"),
        last_message=bindparam("outcome_message"),
        updated_at=bindparam("now"),
    )
)
_REQUEUE = (
    update(Run.__table__)
    .where(_HELD)
    .values(status="pending", worker_id=None, lease_expires_at=None, updated_at=bindparam("now"))
)
_HOLDS = select(func.count()).select_from(Run).where(_HELD)
# Statements on the tables' columns, not on ORM attributes: an ORM-enabled statement is
# copied on every execution, and its cache key computed anew.
_THREADS, _RUNS = Thread.__table__.c, Run.__table__.c
# The thread's owner and metadata (not its values: a long chat's are big) and its active
# runs (their ids, space-separated, or null); no row when the thread does not exist. A
# SELECT, not the RETURNING of the update that follows: SQLite evaluated that subquery
# without the index on runs, holding the write lock (first token 110 -> 250 ms).
_ACTIVE = (
    select(func.aggregate_strings(_RUNS.run_id, " "))
    .where(_RUNS.thread_id == _THREADS.thread_id, _RUNS.status.in_(("pending", "running")))
    .scalar_subquery()
)
_THREAD = select(_THREADS.owner, _THREADS.metadata, _ACTIVE.label("active")).where(
    _THREADS.thread_id == bindparam("thread")
)
_BUSY = (
    update(Thread.__table__)
    .where(_THREADS.thread_id == bindparam("thread"))
    .values(status="busy", metadata=bindparam("metadata"), updated_at=bindparam("now"))
)
_ADD_RUN = insert(Run.__table__)


@functools.cache
def _start_at_once_statement(columns: tuple[str, ...]) -> Any:
    """PostgreSQL, one statement: mark the thread busy, add the run's graph and assistant
    to its metadata, and insert the run (with `columns`, as `run_<column>` parameters)
    if the thread is the caller's and idle; no row when it is not so. No other
    parameter may be named like a column of `runs`: an INSERT takes such a parameter as
    that column's value."""
    known = cast(_THREADS.metadata, JSONB)
    metadata = known.op("||")(bindparam("thread_patch", type_=JSONB))
    busy = (
        update(Thread.__table__)
        .where(
            _THREADS.thread_id == bindparam("thread"),
            _THREADS.owner == bindparam("thread_owner"),
            func.jsonb_typeof(known) == "object",  # else `||` would not merge
            ~exists().where(
                _RUNS.thread_id == _THREADS.thread_id,
                _RUNS.status.in_(("pending", "running")),
            ),
        )
        .values(status="busy", updated_at=bindparam("now"), metadata=cast(metadata, JSON))
        .returning(_THREADS.thread_id)
        .cte("busy")
    )
    row = select(
        *[bindparam(f"run_{name}", type_=_RUNS[name].type) for name in columns]
    ).select_from(busy)
    return (
        insert(Run.__table__)
        .from_select(list(columns), row, include_defaults=False)
        .returning(_RUNS.run_id)
    )


# What `_record_at_once_statement` inserts of each event, as arrays.
_EVENT_FIELDS = {"seq": Integer(), "event": String(), "checkpoint_id": String(), "data": Text()}


@functools.cache
def _record_at_once_statement(changed: tuple[str, ...]) -> Any:
    """PostgreSQL, one statement: the run's outcome (`_RECORD`), its thread's rest
    (`settle`, with `changed` columns), its last events and their notification, all only
    if this attempt holds the run. Its row: `held`, and the thread's `status`."""
    ended = _RECORD.returning(_RUNS.run_id).cte("ended")
    held = exists(select(ended.c.run_id))
    settled = settle_statement(changed, ending=True).where(held).cte("settled")
    fields = list(_EVENT_FIELDS)
    given = func.unnest(
        *[bindparam(f"event_{name}", type_=ARRAY(kind)) for name, kind in _EVENT_FIELDS.items()]
    )
    events = given.table_valued(*fields).render_derived(name="given")
    stamp = bindparam("now", type_=_RUNS.updated_at.type)
    recorded = (
        insert(RunEvent.__table__)
        .from_select(
            ["run_id", *fields, "created_at"],
            select(bindparam("held_run", type_=String()), *events.c, stamp).where(held),
        )
        .returning(RunEvent.__table__.c.seq)
        .cte("recorded")
    )
    payload = func.unnest(bindparam("notifications", type_=ARRAY(Text()))).column_valued()
    notified = select(func.count(func.pg_notify(bindparam("channel"), payload))).where(held)
    return select(
        held.label("held"),
        select(settled.c.status).scalar_subquery().label("status"),
        select(func.count()).select_from(recorded).scalar_subquery().label("events"),
        notified.scalar_subquery().label("notified"),
    )


_QUEUED = (
    select(func.count())
    .select_from(Run)
    .where(Run.owner == bindparam("owner"), Run.status == "pending")
)


def _refuse_foreign(thread_owner: str | None, key: str, owner: str, *, create: bool) -> None:
    """The same 404 for a missing thread (no owner; unless the run creates it) and for
    another user's; 409 when asked to create a thread whose id another user's thread has."""
    foreign = thread_owner is not None and thread_owner != owner
    if foreign and create:
        raise taken(key)
    if foreign or (thread_owner is None and not create):
        raise NotFound(f"Thread '{key}' not found; pass if_not_exists='create' to create it.")


def _known_nodes(graph: CompiledGraph, names: list[str], field: str) -> None:
    """422 naming `field` when it names nodes the graph does not have."""
    unknown = [n for n in names if n not in graph.nodes]
    if unknown:
        raise Invalid(f"{field} names unknown nodes {unknown}; nodes: {list(graph.nodes)}.")


def _last_message(values: Any) -> Any:
    """The last of the values' `messages`, for the conversation tree (None if none)."""
    messages = values.get("messages") if isinstance(values, dict) else None
    return jsonable(messages[-1]) if isinstance(messages, list) and messages else None


def _interrupts_after(values: Any) -> str:
    """What a `values` part shows after its checkpoint's values: the interrupts that
    stopped the step, as a JSON object (`app.runs.broker.with_values`); else nothing."""
    if isinstance(values, dict) and INTERRUPTS in values:
        return to_json({INTERRUPTS: values[INTERRUPTS]})
    return ""


def _goto_nodes(goto: str | SendModel | list[str | SendModel] | None) -> list[str]:
    """The nodes a command's `goto` sends to."""
    targets = goto if isinstance(goto, list) else [] if goto is None else [goto]
    return [t if isinstance(t, str) else t.node for t in targets]


class RunService:
    def __init__(
        self,
        db: Database,
        graphs: GraphRegistry,
        saver: BaseCheckpointSaver,
        broker: StreamBroker,
        settings: Settings,
    ) -> None:
        self.db = db
        self.graphs = graphs
        self.saver = saver
        self.broker = broker
        self.settings = settings
        self.pool = WorkerPool(
            db,
            self._execute,
            self._stop_local,
            concurrency=settings.workers,
            lease_s=settings.lease_s,
            heartbeat_s=settings.heartbeat_s,
        )
        broker.notifier.on_queue = self.pool.wake
        # Why a run executing here must stop: interrupt, rollback (asked through the
        # API), requeue (shutdown) or abandon (its lease went to another worker).
        self.cancel_actions: dict[str, str] = {}
        # Runs recording their outcome: too late to stop them.
        self.finishing: set[str] = set()
        # Clients waiting here on each run, and the results of those runs once they ended
        # here (as most do): the row need not be read again. Only awaited results are
        # made, and kept only while awaited: a long chat's result is its whole state.
        self.awaited: Counter[str] = Counter()
        self.outcomes: dict[str, Any] = {}
        broker.saved_values = self.saved_values
        # The store a run's graph gets, for the run's user (the app context sets it).
        self.store_of: Callable[[str], BaseStore] | None = None
        # Runs' webhooks: checked on creation, recorded with the outcome, sent from here.
        self.webhooks = Webhooks(db, settings)
        # Starts the runs of crons as they fall due, where runs are executed.
        self.crons = CronScheduler(db, self)

    # Creating.

    async def create(
        self, thread_id: str | None, body: RunCreate, *, owner: str, claim: Claim | None = None
    ) -> Run:
        """Validate everything the client sent, then queue the run in one transaction;
        `claim`, run first in that transaction, may raise to insert nothing (a cron's
        occurrence is claimed with its run, so that it runs once)."""
        if body.input is not None and body.command is not None:
            raise Invalid("Pass either `input` or `command`, not both.")
        modes = body.stream_mode if isinstance(body.stream_mode, list) else [body.stream_mode]
        if "events" in modes:
            raise Invalid("Stream mode 'events' is not supported by this server.")
        limit = self.settings.max_messages
        check_messages(body.input, limit, "input")
        check_messages(body.command and body.command.update, limit, "command.update")
        stateless = thread_id is None
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
                thread = await session.get(Thread, key)
                _refuse_foreign(thread and thread.owner, key, owner, create=create)
        assistant = await assistants.resolve(self.db, self.graphs, body.assistant_id, owner=owner)
        graph = self.graph_of(assistant)
        run_context(graph, assistant.context, body.context)  # 422 if it does not fit
        await self.webhooks.check(body.webhook)  # 422 if it cannot be called
        for field in ("interrupt_before", "interrupt_after"):
            names = getattr(body, field)
            if isinstance(names, list):
                _known_nodes(graph, names, field)
        if body.command is not None:
            _known_nodes(graph, _goto_nodes(body.command.goto), "command.goto")
        if addressed:
            await read_version(graph, version)
        if body.command is not None and body.command.resume is not None:
            await self._require_interrupt(assistant.graph_id, graph, version, body.command.resume)
        run = self._new_run(key, assistant, body, modes, checkpoint_id, stateless, owner)
        # A run this process can start at once is inserted already held by it: its
        # first events then wait for no claim. Two creations racing on one thread both
        # try; the index on running runs lets one through, and the other queues.
        start = not body.after_seconds
        try:
            if (
                start
                and not stateless
                and not claim
                and await self._start_at_once(run, assistant, owner)
            ):
                cancel = []
            else:
                cancel = await self._insert(
                    run, body, assistant, owner, create=create, start=start, claim=claim
                )
        except IntegrityError:
            if run.status != "running":
                raise
            self.pool.release(run)
            run = self._new_run(key, assistant, body, modes, checkpoint_id, stateless, owner)
            cancel = await self._insert(
                run, body, assistant, owner, create=create, start=False, claim=claim
            )
        except BaseException:
            if run.status == "running":
                self.pool.release(run)
            raise
        if run.status == "running":
            self.broker.open(run.run_id)
            # Readers of the thread in other processes: with the run's first events.
            self.broker.announce_later(STARTED)
            self.pool.adopt(run, self._execute(run, assistant))
        for other in cancel:
            # A run another request rolled back meanwhile is gone already: done.
            with contextlib.suppress(NotFound):
                await self.cancel(key, other, body.multitask_strategy, owner=owner)
        # Wakes this process's readers (and workers, for a queued run) now; other
        # processes get the notification.
        self.broker.notifier.fire(QUEUE if run.status == "pending" else STARTED)
        return run

    async def _start_at_once(self, run: Run, assistant: Assistant, owner: str) -> bool:
        """The usual turn of a chat, on PostgreSQL: the caller's idle thread gets the run
        started here in one statement in autocommit mode, one round trip on the way to
        its first token where the general path (`_insert`) takes four. False, with
        nothing written, when it does not apply."""
        if self.db.dialect != "postgresql" or not self.pool.take(run):
            return False
        values = columns_of(run)
        params = {
            "thread": run.thread_id,
            "thread_owner": owner,
            "thread_patch": {
                "graph_id": assistant.graph_id,
                "assistant_id": assistant.assistant_id,
            },
            "now": run.created_at,
            **{f"run_{name}": value for name, value in values.items()},
        }
        try:
            started = await self.db.write_one(_start_at_once_statement(tuple(values)), params)
        except IntegrityError:  # a run started on the thread meanwhile
            started = []
        except BaseException:
            self.pool.release(run)
            raise
        if not started:
            self.pool.release(run)
        return bool(started)

    async def _insert(
        self,
        run: Run,
        body: RunCreate,
        assistant: Assistant,
        owner: str,
        *,
        create: bool,
        start: bool,
        claim: Claim | None,
    ) -> list[str]:
        """Insert `run` in one transaction with the multitask strategy applied; return
        the runs to cancel. With `start`, a run on a free thread is inserted held by this
        process if it has room (see `WorkerPool.take`)."""
        key = run.thread_id
        # Urgent: on SQLite the run's first token waits for this transaction, which
        # would otherwise queue behind the saves and outcomes of every other run.
        async with self.db.write(urgent=True) as session:
            if claim is not None:
                await claim(session)
            found = (await session.execute(_THREAD, {"thread": key})).first()
            _refuse_foreign(found and found.owner, key, owner, create=create)
            active = sorted(found.active.split()) if found and found.active else []
            if active and body.multitask_strategy == "reject":
                raise Conflict(
                    f"Thread '{key}' is busy with run '{active[0]}' "
                    "and multitask_strategy is 'reject'."
                )
            if not (start and not active and self.pool.take(run)):
                # Only a run that queues counts toward the queue limit.
                await self._check_queue(session, owner)
            metadata = {
                **((found and found.metadata) or {}),
                "graph_id": assistant.graph_id,
                "assistant_id": assistant.assistant_id,
            }
            if found:
                await session.execute(
                    _BUSY, {"thread": key, "metadata": metadata, "now": run.created_at}
                )
            else:
                thread = new_thread(key, metadata, owner)
                thread.status = "busy"
                await session.execute(insert(Thread.__table__).values(columns_of(thread)))
            await session.execute(_ADD_RUN, columns_of(run))
            if run.status == "pending":
                await self.broker.notifier.announce(session, QUEUE)
        return active if body.multitask_strategy in ("interrupt", "rollback") else []

    async def _check_queue(self, session: AsyncSession, owner: str) -> None:
        """429 when the owner already has as many pending runs as a user may."""
        limit = self.settings.max_queued_runs_per_user
        if not limit:
            return
        queued = await session.scalar(_QUEUED, {"owner": owner})
        if (queued or 0) >= limit:
            raise TooManyRequests(
                f"Too many queued runs: at most {limit} pending runs per user; wait for "
                "some to start.",
                retry_after_s=QUEUE_RETRY_AFTER_S,
            )

    def _new_run(
        self,
        thread_id: str,
        assistant: Assistant,
        body: RunCreate,
        modes: list[str],
        checkpoint_id: str | None,
        stateless: bool,
        owner: str,
    ) -> Run:
        stamp = now()
        kwargs = body.model_dump(
            exclude={"assistant_id", "metadata", "multitask_strategy", "if_not_exists"},
            mode="json",
        )
        kwargs.update(stream_mode=modes, checkpoint_id=checkpoint_id)
        # The config as sent, without the keys the client left out.
        kwargs["config"] = body.config and body.config.model_dump(exclude_unset=True)
        if stateless:
            kwargs["on_completion"] = body.on_completion or "delete"
        return Run(
            run_id=new_id(),
            thread_id=thread_id,
            assistant_id=assistant.assistant_id,
            status="pending",
            metadata_=dict(body.metadata or {}),
            multitask_strategy=body.multitask_strategy,
            kwargs=kwargs,
            result=None,
            owner=owner,
            cancel_action=None,
            attempt=0,
            not_before=stamp + timedelta(seconds=body.after_seconds or 0),
            created_at=stamp,
            updated_at=stamp,
        )

    def graph_of(self, assistant: Assistant) -> CompiledGraph:
        graph = self.graphs.get(assistant.graph_id)
        if graph is None:
            raise NotFound(f"Graph '{assistant.graph_id}' is not served here.")
        return graph

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
        state = await graph.aget_state(version)
        if not state.interrupts:
            conf = version["configurable"]
            checkpoint_id = conf.get("checkpoint_id")
            raise Conflict(
                f"Thread '{conf['thread_id']}' has no pending interrupt to resume"
                + (f" at checkpoint '{checkpoint_id}'." if checkpoint_id else ".")
            )
        pending = {i.id: i.value for i in state.interrupts}
        if isinstance(resume, dict) and resume and set(resume) <= set(pending):
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

    # Reading.

    async def get(self, thread_id: str, run_id: str, *, owner: str) -> Run:
        key = parse_uuid(run_id, "run_id")
        tid = parse_uuid(thread_id, "thread_id")
        async with self.db.read() as session:
            run = await session.get(Run, key)
        if run is None or run.thread_id != tid or run.owner != owner:
            raise NotFound(f"Run '{run_id}' not found in thread '{thread_id}'.")
        return run

    async def list(
        self, thread_id: str, *, limit: int, offset: int, status: str | None, owner: str
    ) -> list[Run]:
        tid = parse_uuid(thread_id, "thread_id")
        async with self.db.read() as session:
            owned(await session.get(Thread, tid), thread_id, owner)
            query = select(Run).where(Run.thread_id == tid)
            if status:
                query = query.where(Run.status == status)
            rows = await session.scalars(
                query.order_by(Run.run_id.desc()).limit(limit).offset(offset)
            )
            return list(rows)

    async def is_final(self, run_id: str) -> bool:
        async with self.db.read() as session:
            status = await session.scalar(select(Run.status).where(Run.run_id == run_id))
        return status is None or status in FINAL

    async def join(self, thread_id: str, run_id: str, *, owner: str) -> Any:
        """Wait for the run to end; its final values (or interrupts, or error)."""
        return await self.result_of(await self.get(thread_id, run_id, owner=owner))

    async def result_of(self, run: Run) -> Any:
        """The result of a run the caller may read, once it has ended."""
        if run.status in FINAL:
            return await self._answer(run)
        key = run.run_id
        self.awaited[key] += 1
        try:
            await self.wait_done(key)
            if key in self.outcomes:
                return self.outcomes[key]
        finally:
            self.awaited[key] -= 1
            if not self.awaited[key]:
                del self.awaited[key]
                self.outcomes.pop(key, None)
        async with self.db.read() as session:
            ended = await session.get(Run, run.run_id)
        if ended is None:
            raise Conflict(
                f"Run '{run.run_id}' was rolled back before it ended (by a later run with "
                "multitask_strategy 'rollback', a cancel, or its thread's deletion)."
            )
        return await self._answer(ended)

    async def _answer(self, run: Run) -> Any:
        """A run's recorded result: its checkpoint's saved values followed by `result`
        (interrupts), or `result` alone when it names no checkpoint."""
        if run.checkpoint_id is None:
            return run.result
        found = await self._saved_values(run, [run.checkpoint_id])
        if run.checkpoint_id not in found:
            raise Conflict(
                f"Run '{run.run_id}' ended at checkpoint '{run.checkpoint_id}', which was "
                "deleted (the thread was pruned) or is not readable here (its graph is not "
                "served): its values are gone."
            )
        values = jsonable(found[run.checkpoint_id])
        return {**(values if isinstance(values, dict) else {}), **(run.result or {})}

    async def saved_values(self, run_id: str, checkpoint_ids: list[str]) -> dict[str, str]:
        """The JSON of the saved values of checkpoints of the run's thread, by id (those
        found): what the run's recorded `values` events showed."""
        async with self.db.read() as session:
            run = await session.get(Run, run_id)
        if run is None:
            return {}
        found = await self._saved_values(run, checkpoint_ids)
        return {checkpoint_id: to_json(values) for checkpoint_id, values in found.items()}

    async def _saved_values(self, run: Run, checkpoint_ids: list[str]) -> dict[str, Any]:
        """The saved values of checkpoints of the run's thread, by id (those found), read
        with the run's graph (its assistant's; its thread's if the assistant is gone)."""
        async with self.db.read() as session:
            assistant = await session.get(Assistant, run.assistant_id)
            thread = None if assistant else await session.get(Thread, run.thread_id)
        graph_id = assistant.graph_id if assistant else thread and thread.metadata_.get("graph_id")
        graph = self.graphs.get(graph_id) if isinstance(graph_id, str) else None
        found: dict[str, Any] = {}
        if graph is None:
            return found
        for checkpoint_id in checkpoint_ids:
            config = {"configurable": {"thread_id": run.thread_id, "checkpoint_id": checkpoint_id}}
            with contextlib.suppress(CheckpointNotFoundError):
                found[checkpoint_id] = await graph.aget_saved_values(config)
        return found

    async def thread_key(self, thread_id: str, *, owner: str) -> str:
        """The canonical id of the owner's thread (422 malformed, 404 unknown or foreign)."""
        tid = parse_uuid(thread_id, "thread_id")
        async with self.db.read() as session:
            owned(await session.get(Thread, tid), thread_id, owner)
        return tid

    async def follow_thread(self, tid: str) -> AsyncIterator[list[Event]]:
        """Every event of every run on the thread, run after run, while the client stays
        (in batches, as `StreamBroker.follow`)."""
        followed: set[str] = set()
        while True:
            queued = self.broker.notifier.listen(QUEUE)
            async with self.db.read() as session:
                run_id = await session.scalar(
                    select(Run.run_id)
                    .where(
                        Run.thread_id == tid,
                        Run.status.in_(("pending", "running")),
                        Run.run_id.not_in(followed) if followed else true(),
                    )
                    .order_by(Run.run_id)
                    .limit(1)
                )
            if run_id is None:
                await until(queued, POLL_EVERY_S)
                continue
            followed.add(run_id)
            async for batch in self.broker.follow(run_id):
                yield batch

    async def wait_done(self, run_id: str) -> None:
        """Return once the run has ended (or is gone)."""
        await self.broker.wait_done(run_id)

    # Cancelling and deleting.

    async def cancel(
        self, thread_id: str, run_id: str, action: str = "interrupt", *, owner: str
    ) -> Run | None:
        """Stop a run: pending ones never start; a running one stops at once if it runs
        here (another process's worker sees `cancel_action` on its next heartbeat)."""
        run = await self.get(thread_id, run_id, owner=owner)
        if run.status in FINAL:
            return run
        async with self.db.write() as session:
            # Locked: a worker claiming it meanwhile would otherwise run it (or a second
            # cancel delete it) under this transaction's feet.
            current = await session.get(
                Run, run.run_id, populate_existing=True, with_for_update=True
            )
            if current is None or current.status in FINAL:
                return current
            if current.status == "pending":
                if action == "rollback":
                    await session.delete(current)
                else:
                    current.status = "interrupted"
                    current.updated_at = now()
                thread = await session.get(Thread, current.thread_id)
                if thread is not None:
                    await session.flush()
                    await settle(session, thread.thread_id, await self._resting_status(thread))
                pending_done = True
            else:
                current.cancel_action = action
                pending_done = False
        if pending_done:
            self.pool.wake()  # a run queued behind it may start now
            await self.broker.close(run.run_id)
            return None if action == "rollback" else run
        self._stop_local(run.run_id, action)
        return run

    def _stop_local(self, run_id: str, action: str) -> None:
        """Stop a run if it executes in this process (else its worker's heartbeat will)."""
        if run_id in self.finishing or run_id not in self.pool.running:
            return
        self.cancel_actions.setdefault(run_id, action)
        self.pool.cancel_local(run_id)

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
        query = select(Run.thread_id, Run.run_id).where(
            Run.owner == owner, Run.status.in_(("pending", "running"))
        )
        if thread_id is not None:
            query = query.where(Run.thread_id == parse_uuid(thread_id, "thread_id"))
        if run_ids:
            query = query.where(Run.run_id.in_([parse_uuid(r, "run_ids") for r in run_ids]))
        if status in ("pending", "running"):
            query = query.where(Run.status == status)
        async with self.db.read() as session:
            targets = list(await session.execute(query))
        for tid, rid in targets:
            await self.cancel(tid, rid, action, owner=owner)

    async def delete(self, thread_id: str, run_id: str, *, owner: str) -> None:
        run = await self.get(thread_id, run_id, owner=owner)
        if run.status not in FINAL:
            raise Conflict(f"Run '{run_id}' is {run.status}: cancel it before deleting it.")
        async with self.db.write() as session:
            await session.execute(delete(RunEvent).where(RunEvent.run_id == run.run_id))
            await session.execute(delete(Run).where(Run.run_id == run.run_id))

    async def _resting_status(self, thread: Thread) -> str:
        if thread.status == "error":
            return "error"
        return "interrupted" if thread.interrupts else "idle"

    # Executing.

    async def _execute(self, run: Run, assistant: Assistant | None = None) -> None:
        """Execute a run held here; `assistant` when the caller has it already."""
        logs.bind(run_id=run.run_id, thread_id=run.thread_id)
        kwargs = run.kwargs
        if assistant is None:
            async with self.db.read() as session:
                assistant = await session.get(Assistant, run.assistant_id)
        if assistant is None:
            await self._finish(run, None, "error", LookupError("The run's assistant was deleted."))
            return
        graph = self.graph_of(assistant)
        modes = kwargs.get("stream_mode") or ["values"]
        subgraphs = bool(kwargs.get("stream_subgraphs"))
        mapper = EventMapper(modes, subgraphs)
        await self.broker.attach(run.run_id, retry=run.attempt > 1)
        self.broker.publish(run.run_id, "metadata", {"run_id": run.run_id, "attempt": run.attempt})
        status, error = "success", None
        final: StateSnapshot | None = None
        config = self._config(run, assistant)
        graph_input = self._input(kwargs)
        if run.attempt > 1 and await self._has_started(run):
            # A retry after a crash or a re-queue continues from the run's last
            # checkpoint: finished tasks are not re-run, the input not applied twice.
            graph_input = None
            config["configurable"].pop("checkpoint_id", None)
            config["configurable"]["checkpoint_ns"] = ""

        # The checkpoint holding the values of the graph's next `values` part (told just
        # before it): the event is recorded as that checkpoint, not as a copy of them.
        shown_as: str | None = None

        def values_saved_as(checkpoint_id: str | None) -> None:
            nonlocal shown_as
            shown_as = checkpoint_id

        def publish(part: tuple[tuple[str, ...], str, Any]) -> None:
            nonlocal shown_as
            ns, mode, payload = part
            saved_as = None
            if mode == "values" and not ns:
                saved_as, shown_as = shown_as, None
            for event, data in mapper.events(ns, mode, payload):
                if saved_as is not None and event == "values":
                    after = _interrupts_after(data)
                    self.broker.publish(
                        run.run_id, event, data, checkpoint_id=saved_as, after=after
                    )
                else:
                    self.broker.publish(run.run_id, event, data)

        try:
            # A graph factory's graph is made for this run; the run's context and store
            # reach the graph as its runtime's.
            runnable = await self.graphs.for_run(assistant.graph_id, config)
            config["configurable"][CONFIG_KEY_RUNTIME] = Runtime(
                context=run_context(runnable, assistant.context, kwargs.get("context")),
                store=self.store_of(run.owner or LOCAL_USER) if self.store_of else None,
            )
            final = await runnable.arun(
                graph_input,
                config,
                publish,
                stream_mode=engine_modes(modes),
                subgraphs=True,
                durability=kwargs.get("durability"),
                interrupt_before=kwargs.get("interrupt_before"),
                interrupt_after=kwargs.get("interrupt_after"),
                # A stateless run's checkpoints go with it: its events keep their values.
                on_values=None if kwargs.get("on_completion") == "delete" else values_saved_as,
            )
        except asyncio.CancelledError:
            action = self.cancel_actions.pop(run.run_id, "interrupt")
            if action == "abandon":
                self.broker.discard(run.run_id)
                return
            if action == "requeue":
                await self._requeue(run)
                return
            if action == "rollback":
                await self._rollback(run, graph)
                return
            status = "interrupted"
        except LeaseLost:
            self._lost(run)
            return
        except Exception as exc:  # the graph's failure is the run's outcome, not ours
            status, error = "error", exc
            if not isinstance(exc, GraphRecursionError | ValueError | RuntimeError):
                log.info("run %s failed", run.run_id, exc_info=True)
            self.broker.publish(
                run.run_id, "error", {"error": type(exc).__name__, "message": error_message(exc)}
            )
        await self._finish(run, graph, status, error, final)

    async def _has_started(self, run: Run) -> bool:
        config = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}}
        async for _ in self.saver.alist(config, filter={"run_id": run.run_id}, limit=1):
            return True
        return False

    def _input(self, kwargs: dict[str, Any]) -> Any:
        command = kwargs.get("command")
        if command is None:
            return kwargs.get("input")
        goto = command.get("goto")
        if isinstance(goto, dict):
            goto = Send(goto["node"], goto.get("input"))
        elif isinstance(goto, list):
            goto = [Send(g["node"], g.get("input")) if isinstance(g, dict) else g for g in goto]
        return Command(resume=command.get("resume"), update=command.get("update"), goto=goto or ())

    def _config(self, run: Run, assistant: Assistant) -> dict[str, Any]:
        kwargs = run.kwargs
        owner = run.owner or LOCAL_USER
        given = kwargs.get("config") or {}
        base = assistant.config or {}
        configurable = {
            **(base.get("configurable") or {}),
            **(given.get("configurable") or {}),
            "thread_id": run.thread_id,
            "run_id": run.run_id,
            "assistant_id": assistant.assistant_id,
            "graph_id": assistant.graph_id,
            # The user, as LangGraph's server names it too.
            "user_id": owner,
            "langgraph_auth_user_id": owner,
            "langgraph_auth_user": GraphUser(owner, is_authenticated=self.settings.auth != "none"),
            "langgraph_auth_permissions": [],
            # Set here, after the client's config: only a checked version is run from.
            "checkpoint_ns": (kwargs.get("checkpoint") or {}).get("checkpoint_ns") or "",
        }
        if kwargs.get("checkpoint_id"):
            configurable["checkpoint_id"] = kwargs["checkpoint_id"]
        limit = given.get("recursion_limit") or base.get("recursion_limit")
        return {
            "configurable": configurable,
            "recursion_limit": int(limit or self.settings.recursion_limit),
            "metadata": {
                **(run.metadata_ or {}),
                "run_id": run.run_id,
                "thread_id": run.thread_id,
                "graph_id": assistant.graph_id,
                "assistant_id": assistant.assistant_id,
            },
        }

    async def _finish(
        self,
        run: Run,
        graph: CompiledGraph | None,
        status: str,
        error: BaseException | None,
        state: StateSnapshot | None = None,
    ) -> None:
        """Record the run's outcome; `state` is the thread's state after it when the run
        knows it (it ended at END), else it is read back."""
        self.finishing.add(run.run_id)
        try:
            await self._record(run, graph, status, error, state)
        finally:
            self.finishing.discard(run.run_id)

    async def _record(
        self,
        run: Run,
        graph: CompiledGraph | None,
        status: str,
        error: BaseException | None,
        state: StateSnapshot | None,
    ) -> None:
        head = Head("idle", None, None, {})
        if graph is not None:
            # A run that ended at END hands its state over: its last checkpoint's, as saved.
            saved = state is not None
            if state is None:
                state = await self._final_state(run, graph, failed=error is not None)
            head = await head_of(graph, state, saved=saved)
        values = state.values if state is not None and state.metadata is not None else None
        interrupts = [i for items in head.interrupts.values() for i in items]
        ended = {INTERRUPTS: interrupts} if interrupts else {}
        # The row keeps the result as the checkpoint it ended at (and its interrupts),
        # unless no checkpoint holds its values, or none will (a stateless run's go).
        checkpoint_id, message = None, None
        if error is not None:
            kept: Any = {
                "__error__": {"error": type(error).__name__, "message": error_message(error)}
            }
        elif head.checkpoint_id is not None and run.kwargs.get("on_completion") != "delete":
            kept, checkpoint_id, message = ended, head.checkpoint_id, _last_message(values)
        else:
            kept = {**(jsonable(values) or {}), **ended}
        resting: ThreadStatus = "error" if status == "error" else head.status
        outcome = {
            **self._holder(run),
            "outcome": status,
            "outcome_checkpoint": checkpoint_id,
            "outcome_result": kept,
            "outcome_message": message,
            "now": now(),
        }
        hooked = False
        # A webhook's call is recorded with the outcome, in its transaction.
        at_once = self.db.dialect == "postgresql" and not run.kwargs.get("webhook")
        if at_once:
            waiting = await self._record_at_once(run, outcome, resting, head)
            if waiting is None:
                return
        else:
            async with self.db.write() as session:
                recorded = await session.execute(_RECORD, outcome)
                if recorded.rowcount != 1:  # type: ignore[attr-defined]
                    self._lost(run)
                    return
                waiting = await settle(session, run.thread_id, resting, **head.columns)
                await self.broker.record_rest(session, run.run_id)
                # With the outcome: a crash now cannot lose the webhook's call.
                hooked = await self.webhooks.record(session, run, status, values, error)
        if hooked:
            self.webhooks.wake()
        if waiting:
            self.pool.wake()  # the thread's next run may start now
        if run.run_id in self.awaited:
            whole = checkpoint_id is not None
            self.outcomes[run.run_id] = {**(jsonable(values) or {}), **kept} if whole else kept
        await self.broker.close(run.run_id)
        if run.kwargs.get("on_completion") == "delete":
            # The run row stays, so whoever waits on the run still reads its result.
            await self.delete_thread_data(run.thread_id, keep_runs=True)

    async def _record_at_once(
        self, run: Run, outcome: dict[str, Any], resting: ThreadStatus, head: Head
    ) -> bool | None:
        """`_record`'s transaction as one statement in autocommit mode (PostgreSQL): one
        round trip for eight. Whether other runs wait on the thread; None (nothing
        written) when this attempt no longer holds the run."""
        rows, keys = self.broker.take_rest(run.run_id)
        changes = head.columns
        params = {
            **outcome,
            **settle_params(run.thread_id, resting, changes),
            "ended_run": run.run_id,
            "channel": CHANNEL,
            "notifications": payloads(keys),
            **{f"event_{n}": [row[n] for row in rows] for n in _EVENT_FIELDS},
        }
        [row] = await self.db.write_one(_record_at_once_statement(tuple(sorted(changes))), params)
        if not row.held:
            self._lost(run)
            return None
        return bool(row.status == "busy")

    def _holder(self, run: Run) -> dict[str, Any]:
        """`_HELD`'s parameters for this attempt of `run`, executing here."""
        return {"held_run": run.run_id, "held_by": self.pool.worker_id, "held_attempt": run.attempt}

    def _lost(self, run: Run) -> None:
        log.warning("run %s: another worker holds it now; dropping this attempt's end", run.run_id)
        self.broker.discard(run.run_id)

    async def _final_state(self, run: Run, graph: CompiledGraph, *, failed: bool) -> StateSnapshot:
        """The thread's state after the run. A failed run that saved writes its state
        cannot take (an input a reducer refuses fails the first step after the input was
        saved) is undone, so that a client's input never leaves the thread unreadable."""
        config = {"configurable": {"thread_id": run.thread_id}}
        try:
            return await graph.aget_state(config)
        except (SQLAlchemyError, OSError):
            raise  # the database, not the state: the run is retried
        except Exception:
            if not failed:
                raise
            log.warning("run %s left a state that cannot be read: undone", run.run_id)
            await self.saver.adelete_run(run.thread_id, run.run_id)
            return await graph.aget_state(config)

    async def _rollback(self, run: Run, graph: CompiledGraph) -> None:
        """Undo a cancelled run: its checkpoints and its row go; the thread is as before."""
        async with self.db.read() as session:
            held = await session.scalar(_HOLDS, self._holder(run))
        if not held:
            self._lost(run)
            return
        await self.saver.adelete_run(run.thread_id, run.run_id)
        state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
        head = await head_of(graph, state, saved=False)
        async with self.db.write() as session:
            await session.execute(delete(RunEvent).where(RunEvent.run_id == run.run_id))
            await session.execute(delete(Run).where(Run.run_id == run.run_id))
            waiting = await settle(session, run.thread_id, head.status, **head.columns)
        if waiting:
            self.pool.wake()
        self.broker.discard(run.run_id)

    async def _requeue(self, run: Run) -> None:
        async with self.db.write() as session:
            await session.execute(_REQUEUE, {**self._holder(run), "now": now()})
        self.broker.discard(run.run_id)

    async def delete_thread_data(self, thread_id: str, *, keep_runs: bool = False) -> None:
        """Remove a thread with its checkpoints, its crons and (unless kept) its runs and
        events."""
        async with self.db.write() as session:
            await session.execute(delete(Cron).where(Cron.thread_id == thread_id))
            if not keep_runs:
                run_ids = select(Run.run_id).where(Run.thread_id == thread_id)
                await session.execute(delete(RunEvent).where(RunEvent.run_id.in_(run_ids)))
                await session.execute(delete(Run).where(Run.thread_id == thread_id))
            await session.execute(delete(Thread).where(Thread.thread_id == thread_id))
        await self.saver.adelete_thread(thread_id)

    # Lifecycle.

    def start(self) -> None:
        self.pool.start()
        self.crons.start()

    async def stop(self) -> None:
        await self.crons.stop()
        await self.pool.stop(self.settings.shutdown_grace_s)
