"""Executing runs: a run held here becomes one call of its graph (its input or command,
its config and runtime), its stream is recorded by the broker, and its outcome on the
row and its thread; a cancelled run is rolled back or re-queued, as asked."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from langchain_core.runnables.config import CONFIG_KEYS
from sqlalchemy import delete
from sqlalchemy.exc import SQLAlchemyError

from app import logs
from app.auth import LOCAL_USER, GraphUser
from app.config import Settings
from app.db.database import Database, retry_deadlocks
from app.db.models import AssistantRow, RunEventRow, RunRow
from app.graphs import GraphRegistry, configurable_of, run_context
from app.jsonable import jsonable, to_json, with_keys
from app.runs.broker import StreamBroker
from app.runs.events import CallbackEvents, EventMapper, Later, engine_modes
from app.runs.notify import answer_payload, notifications
from app.runs.pool import LeaseLost, WorkerPool
from app.schemas.threads import ThreadStatus
from app.services.common import command_of, error_message, now
from app.services.runs.results import RunResults
from app.services.runs.statements import (
    HOLDS,
    RECORD,
    RECORD_AT_ONCE,
    REQUEUE,
)
from app.services.threads import Head, ThreadService, settle_params
from app.webhooks import Webhooks
from engine import CompiledGraph, GraphRecursionError, StateSnapshot
from engine.checkpoint.sql.saver import SQLSaver, ThreadDeletedError
from engine.constants import CONFIG_KEY_QUIET_CANCEL, ERROR
from engine.errors import CheckpointNotFoundError, EmptyInputError, InvalidUpdateError
from engine.pregel.runnable import CONFIG_KEY_RUNTIME
from engine.runtime import Runtime
from engine.store.base import BaseStore

log = logging.getLogger(__name__)
# The key of a result (and of a `values` event) under which the open interrupts follow.
INTERRUPTS = "__interrupt__"


# An answer is sent with its run's end only if it fits in a notification: one whose lists
# hold more elements than this would not (a message is 100 bytes or more), and is not
# serialized to find out (a long chat's answer is its whole history).
NOTIFIED_ELEMENTS = 64


def _may_notify(answer: Any) -> bool:
    """Whether `answer` (an object, or an entrypoint's text, number or list) is small
    enough to go with a notification, by its lists' lengths."""
    if type(answer) is list:
        return len(answer) <= NOTIFIED_ELEMENTS
    if not isinstance(answer, dict):
        return len(answer) <= NOTIFIED_ELEMENTS * 100 if isinstance(answer, str) else True
    return sum(len(v) for v in answer.values() if type(v) is list) <= NOTIFIED_ELEMENTS


# Keys of `configurable` that say where a run's checkpoints are: a run starts from its own
# `checkpoint`/`checkpoint_id` fields, never from these in a client's or an assistant's
# config (LangGraph's server ignores them there too): an assistant with a stale
# `checkpoint_id` would otherwise fail every run made with it.
# (The engine's own `__pregel_*` keys are refused with 422 when the config comes in.)
_PLACED = frozenset({"checkpoint_id", "checkpoint_ns", "checkpoint_map"})


def _chosen(configurable: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a run takes of a client's or an assistant's `configurable`: all but the keys
    that would place its checkpoints."""
    return {k: v for k, v in (configurable or {}).items() if k not in _PLACED}


def _loose(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config's keys of the client's own (not LangChain's), which belong in its
    configurable."""
    return {k: v for k, v in config.items() if k not in CONFIG_KEYS}


def _interrupts_after(values: Any) -> str:
    """What a `values` part shows after its checkpoint's values: the interrupts that
    stopped the step, as a JSON object (`app.runs.broker.with_values`); else nothing."""
    if isinstance(values, dict) and INTERRUPTS in values:
        return to_json({INTERRUPTS: values[INTERRUPTS]})
    return ""


class RunExecutor:
    def __init__(
        self,
        db: Database,
        graphs: GraphRegistry,
        saver: SQLSaver,
        broker: StreamBroker,
        pool: WorkerPool,
        threads: ThreadService,
        results: RunResults,
        webhooks: Webhooks,
        settings: Settings,
        store_of: Callable[[str], BaseStore],
        resources: Mapping[str, Any],
    ) -> None:
        """`store_of(user)`: the store a run's graph gets, for the run's user;
        `resources`: what every run's config hands its graph in `configurable`, over the
        client's keys (the reminder agent's store)."""
        self.db = db
        self.graphs = graphs
        self.saver = saver
        self.broker = broker
        self.pool = pool
        self.threads = threads
        self.results = results
        self.webhooks = webhooks
        self.settings = settings
        self.store_of = store_of
        self.resources = resources

    async def execute(self, run: RunRow, assistant: AssistantRow | None = None) -> None:
        """Execute a run held here; `assistant` when the caller has it already."""
        logs.bind(run_id=run.run_id, thread_id=run.thread_id)
        kwargs = run.kwargs
        if assistant is None:  # a graph's own assistant never changes: kept in memory
            assistant = self.graphs.system_rows.get(run.assistant_id)
        if assistant is None:
            async with self.db.read() as session:
                assistant = await session.get(AssistantRow, run.assistant_id)
        if assistant is None:
            await self._finish(run, None, "error", LookupError("The run's assistant was deleted."))
            return
        graph = self.results.graph_of(assistant)
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

        def record(ns: tuple[str, ...], mode: str, payload: Any, saved_as: str | None) -> None:
            for event, data in mapper.events(ns, mode, payload):
                if saved_as is not None and event == "values":
                    after = _interrupts_after(data)
                    self.broker.publish(
                        run.run_id, event, data, checkpoint_id=saved_as, after=after
                    )
                else:
                    self.broker.publish(run.run_id, event, data)

        # Parts are recorded as `astream` would hand them to a reader (`Later`): a node's
        # update shows the ids `add_messages` then gives its messages.
        later = Later()

        def publish(part: tuple[Any, ...]) -> None:
            nonlocal shown_as
            # Its subgraphs' parts only when the client asked for them, as LangGraph's
            # server streams them.
            ns, mode, payload = part if subgraphs else ((), *part)
            saved_as = None
            if mode == "values" and not ns:
                saved_as, shown_as = shown_as, None
            later(partial(record, ns, mode, payload, saved_as))

        if run.attempt == 1:
            # Callbacks (tracers, the `events` mode) see the graph's run as this run; a
            # retry's is a run of its own, as in LangGraph's server.
            config["run_id"] = uuid.UUID(run.run_id)
        if "events" in modes:

            def publish_event(event: dict[str, Any]) -> None:
                later(partial(self.broker.publish, run.run_id, "events", event))

            config["callbacks"] = [CallbackEvents(run.run_id, publish_event)]

        try:
            # A graph factory's graph is made for this run; the run's context and store
            # reach the graph as its runtime's.
            runnable = await self.graphs.for_run(assistant.graph_id, config)
            if runnable.name == "LangGraph":
                # An unnamed graph's run is named after its graph id, as LangGraph's server
                # does, unless the run's config names it.
                config.setdefault("run_name", assistant.graph_id)
            config["configurable"][CONFIG_KEY_RUNTIME] = Runtime(
                context=run_context(
                    runnable,
                    (assistant.context, configurable_of(assistant.config)),
                    (kwargs.get("context"), configurable_of(kwargs.get("config"))),
                ),
                store=self.store_of(run.owner or LOCAL_USER),
            )
            with later:  # whatever way the run ends, its parts are recorded before it
                final = await runnable.arun(
                    graph_input,
                    config,
                    publish,
                    stream_mode=engine_modes(modes),
                    subgraphs=subgraphs,
                    durability=kwargs.get("durability"),
                    interrupt_before=kwargs.get("interrupt_before"),
                    interrupt_after=kwargs.get("interrupt_after"),
                    # A stateless run's checkpoints go with it: its events keep their values.
                    on_values=None if kwargs.get("on_completion") == "delete" else values_saved_as,
                )
        except asyncio.CancelledError:
            action = self.pool.stop_actions.pop(run.run_id, "interrupt")
            if action == "abandon":
                self.broker.discard(run.run_id)
                return
            if action == "requeue":
                await self._requeue(run)
                return
            if action == "rollback":
                await self._rollback(run, graph)
                return
            await self._mark_cancelled(run, graph)
            status = "interrupted"
        except LeaseLost:
            self._lost(run)
            return
        except Exception as exc:  # the graph's failure is the run's outcome, not ours
            status, error = "error", exc
            if isinstance(exc, ThreadDeletedError):  # deleted as it ran: no fault to trace
                log.info("run %s: its thread was deleted as it ran", run.run_id)
            else:
                # A line for every failure, with the traceback unless it is a refusal the
                # graph's own rules make (a step limit, no input, a bad value or update):
                # its message says it.
                refusal = GraphRecursionError | EmptyInputError | InvalidUpdateError
                shown = not isinstance(exc, refusal | ValueError | RuntimeError)
                why = f"{type(exc).__name__}: {error_message(exc)}"
                log.info("run %s failed: %s", run.run_id, why, exc_info=shown)
            self.broker.publish(
                run.run_id, "error", {"error": type(exc).__name__, "message": error_message(exc)}
            )
        await self._finish(run, graph, status, error, final)

    async def _has_started(self, run: RunRow) -> bool:
        config = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}}
        async for _ in self.saver.alist(config, filter={"run_id": run.run_id}, limit=1):
            return True
        return False

    def _input(self, kwargs: dict[str, Any]) -> Any:
        command = kwargs.get("command")
        return kwargs.get("input") if command is None else command_of(command)

    def _config(self, run: RunRow, assistant: AssistantRow) -> dict[str, Any]:
        kwargs = run.kwargs
        owner = run.owner or LOCAL_USER
        given = kwargs.get("config") or {}
        base = assistant.config or {}
        chosen = {
            # A graph written before `context` reads these from its configurable, as
            # LangGraph's server copies them there.
            **_chosen(assistant.context),
            **_chosen(kwargs.get("context")),
            **_chosen(base.get("configurable")),
            **_chosen(given.get("configurable")),
            # Other keys of a config go into its configurable, as LangChain's config
            # moves them; under the server's own keys below, which no client sets.
            **_chosen(_loose(base)),
            **_chosen(_loose(given)),
        }
        configurable = {
            **chosen,
            **self.resources,
            "thread_id": run.thread_id,
            "run_id": run.run_id,
            "assistant_id": assistant.assistant_id,
            "graph_id": assistant.graph_id,
            # As LangGraph's server sets it: the client's (a memory tutorial's key into
            # the store, which is the owner's whatever it says), else the owner. The
            # user the run is for is `langgraph_auth_user_id`, which no client sets.
            "user_id": chosen.get("user_id") or owner,
            "langgraph_auth_user_id": owner,
            "langgraph_auth_user": GraphUser(owner, is_authenticated=self.settings.auth != "none"),
            "langgraph_auth_permissions": [],
            # The run's own version (checked when the run was made), not the config's.
            "checkpoint_ns": (kwargs.get("checkpoint") or {}).get("checkpoint_ns") or "",
            # A cancel is the server's to record: `_mark_cancelled` marks the tasks an
            # `interrupt` stopped, a rollback undoes the run, and a worker that lost the
            # run (or hands it over at shutdown) writes nothing more for it.
            CONFIG_KEY_QUIET_CANCEL: True,
        }
        if kwargs.get("checkpoint_id"):
            configurable["checkpoint_id"] = kwargs["checkpoint_id"]
        limit = given.get("recursion_limit") or base.get("recursion_limit")
        tags = [*(base.get("tags") or ()), *(given.get("tags") or ())]
        concurrency = given.get("max_concurrency") or base.get("max_concurrency")
        name = given.get("run_name") or base.get("run_name")
        return {
            "configurable": configurable,
            "recursion_limit": int(limit or self.settings.recursion_limit),
            **({"tags": list(dict.fromkeys(tags))} if tags else {}),
            **({"max_concurrency": concurrency} if concurrency else {}),
            **({"run_name": name} if name else {}),
            "metadata": {
                **(run.metadata_ or {}),
                "run_id": run.run_id,
                "thread_id": run.thread_id,
                "graph_id": assistant.graph_id,
                "assistant_id": assistant.assistant_id,
                "run_attempt": run.attempt,
            },
        }

    async def _finish(
        self,
        run: RunRow,
        graph: CompiledGraph | None,
        status: str,
        error: BaseException | None,
        state: StateSnapshot | None = None,
    ) -> None:
        """Record the run's outcome; `state` is the thread's state after it when the run
        knows it (it ended at END), else it is read back."""
        self.pool.finishing.add(run.run_id)
        try:
            await self._record(run, graph, status, error, state)
        except (SQLAlchemyError, OSError):
            raise  # the database, not the run: it is retried
        except Exception as exc:
            if graph is None:
                raise
            # The thread's state cannot be read back: its thread was deleted while the run
            # ran (its checkpoints go first), say. The run ends as failed, without it, so
            # that whoever waits for the run is answered.
            if isinstance(exc, CheckpointNotFoundError | ThreadDeletedError):
                log.info("run %s: its thread was deleted as it ran", run.run_id)
            elif isinstance(exc, InvalidUpdateError):
                log.info("run %s: its writes clash, its thread's state cannot be read", run.run_id)
            else:
                log.warning("run %s: its end without the thread's state", run.run_id, exc_info=True)
            await self._record(run, None, "error", exc, None)
        finally:
            self.pool.finishing.discard(run.run_id)

    async def _record(
        self,
        run: RunRow,
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
            head = await self.threads.head_of(graph, state, saved=saved)
        values = state.values if state is not None and state.metadata is not None else None
        interrupts = [i for items in head.interrupts.values() for i in items]
        ended = {INTERRUPTS: interrupts} if interrupts else {}
        # The row keeps the result as the checkpoint it ended at (and its interrupts),
        # unless no checkpoint holds its values, or none will (a stateless run's go).
        checkpoint_id = None
        if error is not None:
            kept: Any = {
                "__error__": {"error": type(error).__name__, "message": error_message(error)}
            }
        elif head.checkpoint_id is not None and run.kwargs.get("on_completion") != "delete":
            kept, checkpoint_id = ended, head.checkpoint_id
        else:
            kept = with_keys(jsonable(values), ended)
        resting: ThreadStatus = "error" if status == "error" else head.status
        # No event comes after the end: the rest are recorded with it.
        events, keys = await self.broker.take_rest(run.run_id, run.attempt, checkpoint_id)
        outcome = {
            **self._holder(run),
            "outcome": status,
            "outcome_checkpoint": checkpoint_id,
            "outcome_result": kept,
            "outcome_events": events,
            "now": now(),
        }
        hooked = False

        def done() -> dict[str, Any]:
            """The answer: made only for waiters (`with_keys` walks a pydantic state)."""
            return with_keys(values, kept) if checkpoint_id is not None else kept

        # A webhook's call is recorded with the outcome, in its transaction.
        at_once = self.db.dialect == "postgresql" and not run.kwargs.get("webhook")
        if at_once:
            # Waited for in another process: the answer goes with the notification.
            answer = None
            if run.awaited and run.run_id not in self.results.awaited:
                found = done()
                answer = answer_payload(run.run_id, to_json(found)) if _may_notify(found) else None
            waiting = await self._record_at_once(run, outcome, resting, head, keys, answer)
            if waiting is None:
                return
        else:
            async with self.db.write() as session:
                recorded = await session.execute(RECORD, outcome)
                if recorded.rowcount != 1:  # type: ignore[attr-defined]
                    self._lost(run)
                    return
                waiting = await self.threads.settle(session, run.thread_id, resting, **head.columns)
                await self.broker.notifier.announce(session, *keys)
                # With the outcome: a crash now cannot lose the webhook's call.
                hooked = await self.webhooks.record(session, run, status, values, error)
        if hooked:
            self.webhooks.wake()
        if waiting:
            self.pool.wake()  # the thread's next run may start now
        if run.run_id in self.results.awaited:
            self.results.outcomes[run.run_id] = to_json(done())
        await self.broker.close(run.run_id)
        if run.kwargs.get("on_completion") == "delete":
            # The run row stays, so whoever waits on the run still reads its result.
            await self.threads.remove(run.thread_id, keep_runs=True)

    async def _record_at_once(
        self,
        run: RunRow,
        outcome: dict[str, Any],
        resting: ThreadStatus,
        head: Head,
        keys: list[str],
        answer: str | None,
    ) -> bool | None:
        """`_record`'s transaction as one statement in autocommit mode (PostgreSQL): one
        round trip for eight, its notifications led by `answer`'s. Whether other runs
        wait on the thread; None (nothing written) when this attempt no longer holds the
        run."""
        params = {
            **outcome,
            **settle_params(run.thread_id, resting, head.columns),
            "ended_run": run.run_id,
            **notifications(keys, answer),
        }
        [row] = await self.db.write_one(RECORD_AT_ONCE, params)
        if not row.held:
            self._lost(run)
            return None
        return bool(row.status == "busy")

    def _holder(self, run: RunRow) -> dict[str, Any]:
        """`HELD`'s parameters for this attempt of `run`, executing here."""
        return {"held_run": run.run_id, "held_by": self.pool.worker_id, "held_attempt": run.attempt}

    def _lost(self, run: RunRow) -> None:
        # Deleted with its thread, most often; else another worker took it over.
        log.info("run %s: no longer held by this attempt; its end is dropped", run.run_id)
        self.broker.discard(run.run_id)

    async def _final_state(
        self, run: RunRow, graph: CompiledGraph, *, failed: bool
    ) -> StateSnapshot:
        """The thread's state after the run. A failed run that saved nothing but an input
        its state cannot take (a reducer refuses it as the first step applies it) is
        undone, so that a client's input never leaves the thread unreadable. Writes that
        clash later (two tasks of a step wrote a key that takes one value) stay, with the
        steps before them, as in LangGraph: the head cannot be read (`snapshot_of`), its
        history can."""
        config = {"configurable": {"thread_id": run.thread_id}}
        try:
            return await graph.aget_state(config)
        except (SQLAlchemyError, OSError):
            raise  # the database, not the state: the run is retried
        except Exception:
            if not failed or not await self._saved_input_only(run):
                raise
            log.warning("run %s left a state that cannot be read: undone", run.run_id)
            await self.saver.adelete_run(run.thread_id, run.run_id)
            return await graph.aget_state(config)

    async def _saved_input_only(self, run: RunRow) -> bool:
        """Whether the run's only checkpoints are of its input (none of a step it ran)."""
        config = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}}
        sources = {
            found.metadata.get("source")
            async for found in self.saver.alist(config, filter={"run_id": run.run_id})
        }
        return sources <= {"input"}

    async def _mark_cancelled(self, run: RunRow, graph: CompiledGraph) -> None:
        """The tasks a cancel stopped mid-step failed with `CancelledError()`, as LangGraph's
        server saves them: a client tells a stop from a breakpoint (`useStream`'s stop) by
        that error; the next run on the thread runs them again."""
        with contextlib.suppress(ThreadDeletedError):  # a delete's cancel: nothing to mark
            state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
            if (state.metadata or {}).get("run_id") != run.run_id:
                return  # the run saved nothing (yet): nothing of it was stopped mid-step
            cancelled = [(ERROR, repr(asyncio.CancelledError()))]
            for task in state.tasks:
                if task.error is None and not task.interrupts and task.result is None:
                    await self.saver.aput_writes(state.config, cancelled, task.id)

    async def _rollback(self, run: RunRow, graph: CompiledGraph) -> None:
        """Undo a cancelled run: its checkpoints and its row go; the thread is as before."""
        async with self.db.read() as session:
            held = await session.scalar(HOLDS, self._holder(run))
        if not held:
            self._lost(run)
            return
        await self.saver.adelete_run(run.thread_id, run.run_id)
        state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
        head = await self.threads.head_of(graph, state, saved=False)

        async def undo() -> bool:
            async with self.db.write() as session:
                await session.execute(delete(RunEventRow).where(RunEventRow.run_id == run.run_id))
                await session.execute(delete(RunRow).where(RunRow.run_id == run.run_id))
                return await self.threads.settle(
                    session, run.thread_id, head.status, **head.columns
                )

        # The run's row, then its thread's: a cancel that read the run pending takes them
        # the other way round.
        waiting = await retry_deadlocks(undo)
        if waiting:
            self.pool.wake()
        self.broker.discard(run.run_id)

    async def _requeue(self, run: RunRow) -> None:
        async with self.db.write() as session:
            await session.execute(REQUEUE, {**self._holder(run), "now": now()})
        self.broker.discard(run.run_id)
