"""The superstep loop: one call of a graph on one thread.

A call loads the thread's checkpoint, applies its input, then runs steps until no node is
due, a node interrupts or fails, or the step limit is hit. Every step ends at a barrier
where writes are folded into the channels and a checkpoint is saved.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import re
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import pydantic
from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackManager
from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables.config import merge_configs

from engine.cache.base import BaseCache
from engine.callbacks import GraphLifecycleStatus
from engine.channels import MISSING, Channel
from engine.checkpoint.base import (
    EXCLUDED_METADATA_KEYS,
    LATEST_VERSION,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    PutCheckpoint,
    PutWrites,
    SaveOp,
    checkpoint_config,
)
from engine.checkpoint.ids import new_checkpoint_id, task_id
from engine.constants import (
    CACHE_NS,
    CALLED_BY,
    CONFIG_KEY_NODE_ERROR,
    CONFIG_KEY_NODE_FINISHED,
    CONFIG_KEY_QUIET_CANCEL,
    CONFIG_KEY_READ_STATE,
    CONFIG_KEY_RUNTIME,
    ERROR,
    ERROR_SOURCE,
    INPUT,
    INTERRUPT,
    NO_WRITES,
    NULL_TASK,
    PREVIOUS,
    PULL,
    PUSH,
    RESUME,
    RETURN,
    TAG_HIDDEN,
    TASKS,
)
from engine.errors import (
    CheckpointNotFoundError,
    EmptyInputError,
    ErrorCode,
    GraphBubbleUp,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    InvalidUpdateError,
    NodeCancelledError,
    NodeError,
    NoParentGraphError,
    ParentCommand,
    create_error_message,
    is_invalid_resume,
)
from engine.pregel import context
from engine.pregel.chains import NodeChain, added_up, steps_of
from engine.pregel.config import max_concurrency, recursion_limit
from engine.pregel.context import in_sync_call, is_interrupt_id
from engine.pregel.messages import (
    GraphStreamHandler,
    StreamMessagesHandler,
    show_output,
    streaming_handlers,
    user_tags,
)
from engine.pregel.node import Node, Writes
from engine.pregel.retry import retry_delay
from engine.pregel.runnable import RunnableCallable
from engine.pregel.sync import outside_the_loop
from engine.pregel.tasks import (
    Task,
    TaskStatus,
    answered_by,
    apply_writes,
    new_version,
    prepare_tasks,
    task_statuses,
)
from engine.pregel.timeouts import TimedAttempt, sync_timeout_error
from engine.pregel.tools import StreamToolsHandler
from engine.pregel.traces import end_run, start_run
from engine.runtime import ExecutionInfo, RunControl, Runtime, ServerInfo
from engine.store.base import BaseStore
from engine.types import Command, Durability, Interrupt, Send, StreamWriter

if TYPE_CHECKING:
    from engine.pregel.graph import CompiledGraph

Emit = Callable[[tuple[str, ...], str, Any], None]
# Under `async` durability the background drain waits this long before it saves (unless
# the call needs its saves done first): the saves of the steps that end meanwhile go in
# the same batch, one transaction and one record for a fast run's steps.
GATHER_SAVES_S = 0.01


class TaskFailure(Exception):
    """A task error restored from a saved error write; named like the original."""


def error_text(saved: Any) -> str:
    """A saved failure as a snapshot's task shows it: the exception's repr, as
    LangGraph keeps it (`RuntimeError('Simulated failure')`)."""
    if isinstance(saved, dict):
        # Failures saved before the repr was kept: rebuilt from the class and message.
        return saved.get("repr") or f"{saved.get('error', 'Error')}({saved.get('message', '')!r})"
    return repr(saved) if isinstance(saved, BaseException) else str(saved)


# The error saved for a task the run cut off (see Loop._save_error): no failure of the
# task's, so an answer it read is replaced by the next, as after any cancelled run.
CUT_OFF = repr(asyncio.CancelledError())


def restore_error(saved: Any) -> BaseException:
    """The failure a saved error write stands for: its repr (as LangGraph saves it), or
    the dict of class, message and repr that earlier versions saved."""
    if isinstance(saved, BaseException):
        return saved
    if isinstance(saved, dict):
        name, message = str(saved.get("error", "Error")), str(saved.get("message", ""))
    else:
        name, message = _parse_repr(str(saved))
    return type(name, (TaskFailure,), {})(message)


def _parse_repr(text: str) -> tuple[str, str]:
    """The class name and message of an exception's repr (`ValueError('bad')`)."""
    match = _REPR.fullmatch(text.strip())
    if match is None:
        return "TaskFailure", text
    name, args = match.groups()
    try:
        value = ast.literal_eval(args) if args else ""
    except Exception:  # stored text that is no literal (or too deep): shown as it is
        return name, args
    return name, value if isinstance(value, str) else str(value)


_REPR = re.compile(r"([A-Za-z_]\w*)\((.*)\)", re.DOTALL)


@dataclass(slots=True)
class Replay:
    """A call replaying the version `before` (and the subgraphs it runs): each subgraph
    namespace starts, the first time it is reached, from its last checkpoint before it."""

    before: str
    visited: set[str] = field(default_factory=set)


class Loop:
    """State of one call: channels, versions, the step counter and the stream sink."""

    # Channels whose writes are not saved either (untracked values); set with the channels.
    untracked: frozenset[str] = frozenset()

    def __init__(
        self,
        graph: CompiledGraph,
        config: dict[str, Any],
        *,
        emit: Emit,
        modes: frozenset[str],
        checkpointer: BaseCheckpointSaver | None,
        durability: Durability,
        interrupt_before: tuple[str, ...],
        interrupt_after: tuple[str, ...],
        ns: tuple[str, ...] = (),
        inline_sync: bool = False,
        parent_resume: Callable[[], Any] | None = None,
        parents: dict[str, str] | None = None,
        context: Any = None,
        store: BaseStore | None = None,
        cache: BaseCache | None = None,
        control: RunControl | None = None,
        subgraphs: bool = False,
        outer_ns: str | None = None,
        replay: Replay | None = None,
        checkpoint_map: dict[str, str] | None = None,
        resume_map: dict[str, Any] | None = None,
        resuming: bool = False,
        output_keys: str | tuple[str, ...] | None = None,
    ) -> None:
        self.graph = graph
        # The call's `output_keys`: what its values and updates parts and its output show
        # of the state (one channel's value for a str), instead of the graph's keys.
        self.output_keys = output_keys
        # The channels whose update makes a `values` part.
        self._shown_keys = (
            graph.state_key_set
            if output_keys is None
            else frozenset((output_keys,) if isinstance(output_keys, str) else output_keys)
        )
        # The call continues a run rather than taking new input: graphs invoked during
        # its first step go on from their checkpoints, as LangGraph's do. A subgraph
        # is told by its caller; the top graph works it out when it loads.
        self.resuming = resuming
        # The namespace of the outermost task this call runs in: what callbacks see as
        # `checkpoint_ns` inside subgraphs, as in LangGraph.
        self.outer_ns = outer_ns
        # Set while this call (or the call it is a subgraph of) replays an older version.
        self.replay = replay
        # Versions of subgraphs a caller named, by namespace (shared with the subgraphs).
        self.checkpoint_map: dict[str, str] = checkpoint_map if checkpoint_map is not None else {}
        # Answers the call was given by interrupt id: the subgraphs it resumes take
        # those of their own questions (shared with the subgraphs).
        self.resume_map: dict[str, Any] = resume_map if resume_map is not None else {}
        self.config = config
        # Checked here: a bad one fails the call before anything runs.
        self.recursion_limit = recursion_limit(config)
        limit = max_concurrency(config)
        # Bounds how many of a step's tasks run at once (a fan-out of Sends, say).
        self._gate = asyncio.Semaphore(limit) if limit is not None else None
        self.context = context
        self.store = store
        self.cache = cache
        # What the cache held for the tasks of the step, by task id, looked up before
        # any of them ran (what they write is cached after).
        self._looked_up: dict[str, Any] = {}
        self.control = control
        self.server_info = _server_info(config.get("configurable") or {})
        # Told the name of each node that finishes (not one that fails or asks), at every
        # level: how a host follows a run's progress without streaming it.
        self.node_finished = (config.get("configurable") or {}).get(CONFIG_KEY_NODE_FINISHED)
        self.quiet_cancel = bool((config.get("configurable") or {}).get(CONFIG_KEY_QUIET_CANCEL))
        # The step stops its own tasks (a task failed, it timed out), where a cancel of
        # the call stops them from outside: see CONFIG_KEY_QUIET_CANCEL.
        self._stopping = False
        if self.node_finished is not None and not callable(self.node_finished):
            raise TypeError(
                f"configurable[{CONFIG_KEY_NODE_FINISHED!r}] must be a function taking a "
                f"node's name, not a {type(self.node_finished).__name__}"
            )
        self.emit = emit
        self.modes = modes
        self.saver = checkpointer
        self.durability = durability
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.ns = ns
        # Where the call's checkpoints live.
        self.ns_str = "|".join(ns)
        self.inline_sync = inline_sync
        # Made by a sync method (`invoke`, `stream`): its async routers are refused.
        self.sync_call = in_sync_call()
        self.parent_resume = parent_resume
        # Checkpoint ids of the enclosing graphs, by namespace, for a subgraph's metadata.
        self.parents = parents or {}
        conf = config.get("configurable", {})
        self.thread_id = str(conf.get("thread_id", ""))
        self.channels: dict[str, Channel] = {}
        self._finishing: list[str] = []
        self.versions: dict[str, int] = {}
        self.max_version = 0
        self.seen: dict[str, dict[str, int]] = {}
        self.live: set[str] = set()
        self.step = -1
        self.checkpoint_id = ""
        self.parent_id: str | None = None
        self.head_metadata: dict[str, Any] = {}
        self.head_parent: str | None = None
        # Whether this call saved the head version: its parent's config in the
        # checkpoints parts is then this call's, as the one it was saved under.
        self._head_put_here = False
        # When this call saved the head version (not when it only read it).
        self.head_saved_at: str | None = None
        self.saved_versions: dict[str, int] = {}
        self.updated: set[str] | None = None
        self.pending: list[tuple[str, str, Any]] = []
        self.interrupts: list[Interrupt] = []
        # The questions the running step's tasks asked so far, in the order asked.
        self._asked: list[Interrupt] = []
        # Where an interrupted call stopped: with tasks due (a node's `interrupt()`), or
        # at a breakpoint. And whether the call went on from a saved checkpoint.
        self.stopped_at: GraphLifecycleStatus = "pending"
        self.resumed = False
        self.status = "pending"
        self._saving: asyncio.Task[None] | None = None
        self._queue: list[SaveOp] = []
        self._hurry: asyncio.Future[None] | None = None  # ends the drain's wait
        self._exit_checkpoint: tuple[Checkpoint, dict[str, Any], str | None] | None = None
        self._exit_writes: list[tuple[str, Writes]] = []
        self.subgraphs = subgraphs
        # The lone task of the step, whose end parts may wait until its writes are
        # applied (see _holds_task_end), and the same task once they do wait.
        self._lone: Task | None = None
        self._held: Task | None = None
        self._messages: StreamMessagesHandler | None = None
        # A caller's `messages` handlers that observe this call (see _join_stream_handlers).
        self._observers: list[StreamMessagesHandler] = []
        self._join_stream_handlers()
        self._call_results: dict[str, Any] = {}
        self._call_answers: dict[str, list[Any]] = {}
        # What the step's saved writes say of its tasks, by task id.
        self._statuses: dict[str, TaskStatus] = {}
        # The tasks of error handlers the step ran.
        self._handlers: list[Task] = []
        # The step's tasks that failed, in the order they failed: the step raises the
        # first failure, as LangGraph does, whatever the order of its nodes.
        self._failed: list[Task] = []
        self.stop = 0
        self._null_resume: list[Any] = []
        self._exit_new_versions: dict[str, int] = {}
        self._exit_parent: str | None = None
        # The checkpoint whose saved channels the channels are (loaded, or saved or queued
        # to be saved by this call), while the call knows one: `on_values` tells it.
        self.saved_as: str | None = None
        # The top graph's caller: told, just before each `values` part, `saved_as`.
        self.on_values: Callable[[str | None], None] | None = None
        # Awaited before each step (a sync stream waits for its reader there).
        self.pause: Callable[[], Awaitable[None]] | None = None
        # The caller's metadata, saved with each checkpoint (a server's thread and run
        # ids among it); of a subgraph's, not the keys it inherits from its node's task
        # (LangGraph's do not reach its config).
        skipped = _NOT_SAVED if ns else frozenset()
        self.metadata_extra = {
            k: v
            for k, v in (config.get("metadata") or {}).items()
            if (isinstance(v, str | int | float | bool) or v is None) and k not in skipped
        }

    # Loading and input.

    def _fresh_channels(self) -> None:
        self.channels = {key: make() for key, make in self.graph.channel_makers.items()}
        self.untracked = frozenset(k for k, ch in self.channels.items() if not ch.kept)
        # Channels with LangGraph's `finish` hook: those that wait for the run's end.
        self._finishing = [
            key for key, ch in self.channels.items() if type(ch).finish is not Channel.finish
        ]

    def _finish_channels(self) -> None:
        """The step just applied wakes no node, so the run would end: each channel with a
        `finish` hook is told, as LangGraph tells it; one that changes gets the step's
        version and, if it holds a value now, may wake the nodes that read it."""
        for key in self._finishing:
            channel = self.channels[key]
            if channel.finish():
                self.versions[key] = self.max_version
                if channel.is_available():
                    self.updated.add(key)

    def _restore(self, saved: CheckpointTuple, *, null_writes: bool = True) -> None:
        cp = saved.checkpoint
        self._fresh_channels()
        for key, value in cp["channel_values"].items():
            ch = self.channels.get(key)
            if ch is not None:
                ch.restore(value)
        self.versions = dict(cp["channel_versions"])
        self.max_version = max(self.versions.values(), default=0)
        self.seen = {k: dict(v) for k, v in cp["versions_seen"].items()}
        self.saved_versions = dict(self.versions)
        self.step = int(saved.metadata.get("step", -1)) + 1
        self.checkpoint_id = cp["id"]
        self.parent_id = cp["id"]
        self.head_metadata = dict(saved.metadata)
        self.head_parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        self._head_put_here = False
        updated = cp.get("updated_channels")
        self.updated = set(updated) if updated is not None else None
        self.pending = list(saved.pending_writes or ())
        self.live = {k for k, ch in self.channels.items() if ch.fades and ch.is_available()}
        self.saved_as = cp["id"]
        if null_writes:
            self.apply_saved_command()

    def apply_saved_command(self) -> None:
        """A Command's update saved before a crash or an interrupt is part of this state."""
        self._apply_null_writes(
            [(c, v) for t, c, v in self.pending if t == NULL_TASK and c != RESUME]
        )

    async def load(self, input: Any) -> None:
        if not self.ns and self.saver and self.config.get("configurable", {}).get("checkpoint_ns"):
            await self._address_subgraph_version()
        conf = self.config.get("configurable", {})
        saved: CheckpointTuple | None = None
        if self.saver is not None:
            lookup = checkpoint_config(self.thread_id, self.ns_str, conf.get("checkpoint_id") or "")
            if not conf.get("checkpoint_id") or self.ns:
                lookup["configurable"].pop("checkpoint_id")
            replay = self.replay
            addressed = bool(conf.get("checkpoint_id")) and not self.ns
            if self.ns and self.ns_str in self.checkpoint_map:
                # The caller named a version of this subgraph (or of one inside it).
                lookup["configurable"]["checkpoint_id"] = self.checkpoint_map.pop(self.ns_str)
                saved = await self.saver.aget_tuple(lookup)
                addressed = True
                if replay is not None:
                    # Reached again in this call, it goes on from where it got to.
                    replay.visited.add(self.ns_str)
            elif self.ns and replay is not None and self.ns_str not in replay.visited:
                # The enclosing graph replays an older version: this subgraph starts
                # from its own state as of then, the first time the replay reaches it.
                replay.visited.add(self.ns_str)
                self.resuming = False  # it re-runs from then: its input applies again
                before = {"configurable": {"checkpoint_id": replay.before}}
                found = [c async for c in self.saver.alist(lookup, before=before, limit=1)]
                saved = found[0] if found else None
            else:
                saved = await self.saver.aget_tuple(lookup)
            if saved is None and conf.get("checkpoint_id") and not self.ns:
                raise CheckpointNotFoundError(
                    f"Checkpoint '{conf['checkpoint_id']}' not found in thread '{self.thread_id}'."
                )
        if saved is not None:
            self._restore(saved)
        else:
            self._fresh_channels()
        # The step limit counts from the step after the loaded version (from -1 with
        # none), one further than the limit: a call with input spends a step saving it,
        # so it runs `recursion_limit` steps, while one that goes on from a checkpoint
        # (a resume) gets one more, as in LangGraph, where nodes see it in
        # RemainingSteps.
        self.stop = self.step + self.recursion_limit + 1
        if not self.ns:
            self.resuming = saved is not None and (input is None or isinstance(input, Command))
            self.resumed = self.resuming
        elif saved is not None:
            pending = self._has_pending_tasks()
            if self.resuming or (addressed and pending):
                # A subgraph of a resumed call goes on from where it stopped; one that
                # had finished hands back its state without running again.
                input = self._resume_from_parent() if pending else None
                self.resumed = pending
        if input is not None and not isinstance(input, Command):
            await self._apply_input(input)
            return
        if isinstance(input, Command) and input.graph == Command.PARENT:
            raise InvalidUpdateError("Command(graph=PARENT) cannot be sent as input.")
        if saved is None and isinstance(input, Command) and not self.ns:
            await self._apply_first_command(input)
            return
        if saved is None and not isinstance(input, Command):
            # LangGraph's text, naming where the input would have gone.
            raise EmptyInputError(f"Received no input for {self.graph.input_channels}")
        forked = False
        if saved is not None and addressed:
            forked = await self._travel(saved, input)
        if isinstance(input, Command):
            await self._apply_command(input)
        self._mark_interrupts_seen()
        self._emit_values_now()
        # Then the version it goes on from, as the command left it: LangGraph's order.
        if saved is not None and not forked and {"checkpoints", "debug"} & self.modes:
            self._emit_checkpoint(self._prepare(read=False), task_statuses(self.pending, NULL_TASK))

    async def _address_subgraph_version(self) -> None:
        """A call of the top graph with a subgraph's checkpoint config: the top graph
        runs from its version of that time, and each subgraph on the way down, when its
        task runs, from its version of that time, down to the one named."""
        assert self.saver is not None
        conf = self.config["configurable"]
        lookup = checkpoint_config(
            self.thread_id, conf["checkpoint_ns"], conf.get("checkpoint_id") or ""
        )
        if not conf.get("checkpoint_id"):
            lookup["configurable"].pop("checkpoint_id")
        found = await self.saver.aget_tuple(lookup)
        if found is None:
            raise CheckpointNotFoundError(
                f"No checkpoint of namespace '{conf['checkpoint_ns']}' "
                f"{conf.get('checkpoint_id') or ''} in thread '{self.thread_id}'."
            )
        parents = dict(found.metadata.get("parents") or {})
        self.checkpoint_map = {
            **{ns: cid for ns, cid in parents.items() if ns},
            conf["checkpoint_ns"]: found.checkpoint["id"],
        }
        # The versions the call starts from are the parents of what it saves, as in
        # LangGraph (whose checkpoint_map this is).
        self.parents = {**parents, conf["checkpoint_ns"]: found.checkpoint["id"]}
        top = {**conf, "checkpoint_ns": "", "checkpoint_id": parents.get("")}
        if not top["checkpoint_id"]:
            top.pop("checkpoint_id")
        self.config = {**self.config, "configurable": top}

    async def _travel(self, saved: CheckpointTuple, input: Command | None) -> bool:
        """A call addressed at a named version.

        Re-running it (no resume) is time travel: answers saved there are dropped so its
        questions are asked again, and unless it was made by update_state on the head, a
        fork copy starts the new branch so the old one is untouched. Tasks that finished
        there re-run unless the call resumes the thread's head.
        """
        assert self.saver is not None
        latest = await self.saver.aget_tuple(
            {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns_str}}
        )
        superseded = latest is not None and latest.checkpoint["id"] != saved.checkpoint["id"]
        resuming = input is not None and input.resume is not None
        # A subgraph's version named by the caller is travelled to even when the run
        # resumes: the answer is for the question asked again there.
        travelling = not resuming or bool(self.ns)
        if travelling and not self.ns:
            # Subgraphs start from their state as of this version; an update or a fork
            # was made later than that state, so as of the version it was made from.
            made_later = saved.metadata.get("source") in ("update", "fork")
            before = self.head_parent if made_later else None
            self.replay = Replay(before or saved.checkpoint["id"])
        if travelling:
            self.pending = [w for w in self.pending if w[1] != RESUME]
        if travelling or superseded:
            self.pending = [
                w for w in self.pending if w[1] in (INTERRUPT, RESUME, ERROR, CALLED_BY)
            ]
        if travelling and (saved.metadata.get("source") not in ("update", "fork") or superseded):
            self.pending = []
            await self._save_checkpoint("fork")
            self.step += 1
            return True
        return False

    def _resume_from_parent(self) -> Command | None:
        """The answer the enclosing task hands this subgraph. Answers given by
        interrupt id go to the questions of those ids (several may be open here); the
        task's answer is taken all the same, as this subgraph now keeps its own."""
        if self.parent_resume is None:
            return None
        answer = self.parent_resume()
        statuses = task_statuses(self.pending, NULL_TASK).values()
        asked = {i.id for status in statuses for i in status.pending_interrupts}
        by_id = {k: v for k, v in self.resume_map.items() if k in asked}
        if by_id:
            return Command(resume=by_id)
        return None if answer is context.NO_VALUE else Command(resume=answer)

    def _has_pending_tasks(self) -> bool:
        return bool(self._prepare(read=False))

    def _mark_interrupts_seen(self) -> None:
        self.seen[INTERRUPT] = dict(self.versions)

    async def _apply_input(self, input: Any) -> None:
        writes = self.graph.input_writes(input)
        if not writes:
            # An input dict with none of a Pregel's input channels.
            raise EmptyInputError(f"Received no input for {self.graph.input_channels}")
        # Tasks left unfinished by an earlier call are dropped: new input starts anew. A
        # thread with no versions yet has none (and looking meant asking every node).
        dropped = self._prepare(read=False) if self.versions else []
        feed = Task(NULL_TASK, INPUT, (INPUT,), None, None, (), writes=writes)  # type: ignore[arg-type]
        self.pending = []
        self.updated = self.apply([*dropped, feed], self.live)
        self.step = self.step if self.checkpoint_id else -1
        await self._save_checkpoint("input")
        self.step += 1

    async def _apply_first_command(self, command: Command) -> None:
        """A Command on a thread with nothing saved (a client resuming a thread it
        mistook, a program that starts with one): as in LangGraph, the graph starts from
        its input node with the update as input, and also goes where `goto` says. An
        answer has no question to go to and is dropped, but without a saver none could
        ever be asked for."""
        if command.resume is not None and self.saver is None:
            raise RuntimeError(
                "Cannot use Command(resume=...) without a checkpointer: an interrupted "
                "run is only kept by one."
            )
        await self._apply_input(dataclasses.replace(command, resume=None))

    async def _apply_command(self, command: Command) -> None:
        writes: Writes = []
        if command.resume is not None:
            writes += self._resume_writes(command.resume)
        control: Writes = []
        if command.update is not None:
            from engine.graph.message import with_message_ids
            from engine.graph.schema import update_items

            update = update_items(command.update, self.graph.state_keys, INPUT, command=True)
            control += with_message_ids(self.channels, update)
        if command.goto:
            control += self.graph.goto_writes(command.goto)
        writes += [(NULL_TASK, chan, value) for chan, value in control]
        self._apply_null_writes(control)
        self.pending += writes
        saves = [(tid, [(c, v)]) for tid, c, v in writes if tid != NULL_TASK or c == RESUME]
        if control:
            # Every update of the open step, in order: a saver keeps a task's writes by
            # their place, so those of an earlier Command keep theirs.
            updates = [(c, v) for t, c, v in self.pending if t == NULL_TASK and c != RESUME]
            saves.append((NULL_TASK, updates))
        if self.saver is not None and self.durability == "exit":
            self._exit_writes += saves  # saved with the run's end, wherever it stops
        elif self.saver is not None:
            for tid, task_writes in saves:
                await self._save(PutWrites(self._config(), task_writes, tid))
        self._mark_interrupts_seen()

    def _apply_null_writes(self, writes: Writes) -> None:
        """Apply a Command's update and goto (also when a retry finds them saved)."""
        if not writes:
            return
        feed = Task(NULL_TASK, INPUT, (INPUT,), None, None, (), writes=writes)  # type: ignore[arg-type]
        updated = self.apply([feed], set())
        # Unknown updated channels (a version saved by update_state) stay unknown, as in
        # LangGraph: the next step then looks at every node, in declared order.
        if self.updated is not None:
            self.updated |= updated
        self.live |= {c for c in updated if self.channels[c].fades}

    def _resume_writes(self, resume: Any) -> list[tuple[str, str, Any]]:
        """Turn a resume into RESUME writes for the tasks whose interrupts it answers."""
        statuses = task_statuses(self.pending, NULL_TASK)
        by_id = answered_by(statuses)
        if isinstance(resume, dict) and resume and all(map(is_interrupt_id, resume)):
            # Answers by interrupt id; one no longer waiting answers nothing.
            self.resume_map = dict(resume)
            targets = {by_id[k]: v for k, v in resume.items() if k in by_id}
        else:
            open_tasks = sorted(set(by_id.values()))
            if len(open_tasks) > 1:
                # LangGraph's text (its docs link shows how to resume each by id).
                raise RuntimeError(
                    "When there are multiple pending interrupts, you must specify the "
                    "interrupt id when resuming. Docs: https://docs.langchain.com/oss/python/"
                    "langgraph/interrupts#handling-multiple-interrupts."
                )
            if not open_tasks:
                return [(NULL_TASK, RESUME, resume)]
            targets = {open_tasks[0]: resume}
        names = {task.id: task.name for task in self._prepare(read=False)} if targets else {}
        return [
            (tid, RESUME, [*self._answers_kept(tid, statuses[tid], names), value])
            for tid, value in targets.items()
        ]

    def _answers_kept(self, tid: str, status: TaskStatus, names: dict[str, str]) -> list[Any]:
        """The answers saved for a task that a new one goes after. One saved for the
        question the task still asks was given to a run that stopped before getting
        past it (a cancelled run): the new answer replaces it, as in LangGraph, where
        an unread answer is overwritten. A question's id tells how many answers the
        task had when it asked. A run that failed keeps the answers it read, and a
        `@task` call keeps its own: LangGraph saves those with the failure, and as soon
        as the call reads one."""
        saved = status.resume or []
        failed = status.error is not None and error_text(status.error) != CUT_OFF
        if status.caller is not None or failed or tid not in names:
            return saved
        ns = "|".join([*self.ns, f"{names[tid]}:{tid}"])
        asked = {question.id for question in status.pending_interrupts}
        for index in range(len(saved)):
            if context.interrupt_id(ns, index) in asked:
                return saved[:index]
        return saved

    # Steps.

    def _prepare(self, *, read: bool = True, every_node: bool = False) -> list[Task]:
        """The step's tasks. A run looks only at the nodes the last step's channels
        trigger (sorted by name, as LangGraph does); `every_node` looks at all of them, in
        their declared order, as LangGraph does where it does not pass the updated
        channels (a state snapshot, an update_state)."""
        return prepare_tasks(
            nodes=self.graph.nodes,
            channels=self.channels,
            versions=self.versions,
            seen=self.seen,
            trigger_to_nodes=self.graph.trigger_to_nodes,
            updated=None if every_node else self.updated,
            deferred=self.graph.deferred,
            checkpoint_id=self.checkpoint_id,
            ns=self.ns_str,
            step=self.step,
            stop=self.stop or self.step + self.recursion_limit,
            read=read,
        )

    def apply(self, tasks: list[Task], live: set[str]) -> set[str]:
        """Fold tasks' writes into the channels under one new version."""
        self.max_version = new_version(self.max_version)
        self.saved_as = None
        return apply_writes(
            self.channels, self.versions, self.seen, tasks, live=live, next_version=self.max_version
        )

    def _should_interrupt(self, names: tuple[str, ...], tasks: list[Task]) -> bool:
        """Whether a task of `names` is due and the state changed since the last stop.
        A hidden node (`__start__`, the input step) stops only when named, as in
        LangGraph: `"*"` was expanded without it."""
        if not names:
            return False
        seen = self.seen.get(INTERRUPT, {})
        if not any(v > seen.get(k, 0) for k, v in self.versions.items()):
            return False
        return any(t.name in names for t in tasks)

    async def run(self) -> None:
        """Run steps until the graph is done; raises on errors and the step limit."""
        try:
            while True:
                if self.step > self.stop:  # set by `load`
                    self.status = "out_of_steps"
                    raise GraphRecursionError(
                        create_error_message(
                            message=f"Recursion limit of {self.recursion_limit} reached "
                            "without hitting a stop condition. You can increase the limit by "
                            "setting the `recursion_limit` config key.",
                            error_code=ErrorCode.GRAPH_RECURSION_LIMIT,
                        )
                    )
                if self.pause is not None:
                    await self.pause()
                tasks = self._prepare()
                if not tasks:
                    self.status = "done"
                    return
                if self._should_interrupt(self.interrupt_before, tasks):
                    self._breakpoint("interrupt_before")
                    return
                if self.control is not None and self.control.drain_requested:
                    # A step boundary: everything so far is saved, the rest can resume.
                    self.status = "drained"
                    raise GraphDrained(self.control.drain_reason or "shutdown")
                await self._run_step(tasks)
                self.resuming = False
                if self.status == "interrupted":
                    return
                self.updated = self.apply(tasks, self.live)
                self._release_held()
                if self._finishing and self.updated.isdisjoint(self.graph.trigger_to_nodes):
                    self._finish_channels()
                self.pending = []
                await self._save_checkpoint("loop", show=self.updated)
                if self._should_interrupt(self.interrupt_after, tasks):
                    self._breakpoint("interrupt_after")
                    return
                self.step += 1
        finally:
            await self._finish_saving()

    def _breakpoint(self, where: Literal["interrupt_before", "interrupt_after"]) -> None:
        self._mark_interrupts_seen()
        self.status = "interrupted"
        self.stopped_at = where
        # A breakpoint is shown once, by the top graph (a subgraph's stops it too).
        if "updates" in self.modes and not self.ns:
            self.emit(self.ns, "updates", {INTERRUPT: ()})

    async def _run_step(self, tasks: list[Task]) -> None:
        self._restore_pending(tasks)
        self._handlers = []
        self._failed = []
        self._stopping = False
        self._asked = []
        todo = [t for t in tasks if not t.done]
        # A failure an earlier attempt of this step saved for an error handler: the
        # handler runs (unless it finished too), not the node again.
        handled = [t for t in tasks if t.done and t.handled]
        for task in todo:
            self._emit_task_start(task)
        if self.cache is not None:
            await self._look_up_cache(todo)
        # What the tasks that finished in an earlier attempt of this step wrote is
        # shown again, as LangGraph shows it: as cached.
        for task in tasks:
            if task.done and not task.handled and not task.node.hidden:
                self._emit_update(task, self._state_writes(task), cached=True)
        # The one task the cache does not serve is what LangGraph runs on its own: its
        # end parts may wait until the step's writes are applied.
        fresh = [t for t in todo if self._looked_up.get(t.id) is None]
        alone = not handled and self.graph.step_timeout is None
        self._lone = fresh[0] if alone and len(fresh) == 1 else None
        if alone and len(todo) == 1:
            await self._execute(todo[0], inline=self.inline_sync)
        elif todo or handled:
            await self._run_together(
                [
                    *((t, self._execute(t, inline=False)) for t in todo),
                    *((t, self._handle(t, inline=False, resumed=True)) for t in handled),
                ],
                tasks,
            )
        # The handlers' writes are the step's, as its tasks' are.
        tasks.extend(self._handlers)
        failed = [t for t in (*self._failed, *tasks) if t.error is not None and not t.handled]
        if failed:
            self.status = "error"
            raise failed[0].error  # type: ignore[misc]
        interrupted = [t for t in tasks if t.interrupted]
        if interrupted:
            self.status = "interrupted"
            self.interrupts = [i for t in interrupted for i in t.interrupts]
            # Questions were shown at every level they stop, parts for each task that
            # asked, when it asked; a breakpoint inside a subgraph (no questions) is
            # shown only by the top graph, as in LangGraph.
            if "updates" in self.modes and not self.interrupts and not self.ns:
                self.emit(self.ns, "updates", {INTERRUPT: ()})
            # The caller then sees what the finished tasks wrote, though the step stays
            # open (no checkpoint) until the interrupts are answered.
            finished = [t for t in tasks if not t.interrupted]
            if finished:
                self._emit_values(self.apply(finished, set()))

    async def _run_together(
        self, jobs: list[tuple[Task, Coroutine[Any, Any, None]]], tasks: list[Task]
    ) -> None:
        """Run a step's tasks at once. In an async run, the first failure cancels the
        tasks still running on the event loop (they run again when the thread resumes),
        as in LangGraph; sync code in worker threads cannot be stopped, and is waited
        for. A question or a command for the parent graph lets the others finish. An
        exception a task raised rather than recorded is raised once all have stopped.

        A step that outlasts the graph's `step_timeout` raises TimeoutError, as in
        LangGraph: its unfinished tasks are cancelled (sync code in a thread runs on,
        unwaited) and run again on resume; what the finished ones wrote is kept."""
        # The tasks past the `max_concurrency` gate (all of them without one).
        started: set[str] = set()
        running = {
            asyncio.ensure_future(self._gated(job, partial(started.add, task.id))): task
            for task, job in jobs
        }
        stoppable = {
            future
            for future, task in running.items()
            if not self.inline_sync and (task.node.is_async or task.node.subgraph is not None)
        }

        def stop_the_others(task: Task, future: asyncio.Future[None]) -> None:
            if not future.cancelled() and self._stops_the_step(future.exception(), task):
                self._stopping = True
                # Those still waiting at the gate never start, as a pool's queued work
                # (LangGraph's) is dropped; one that is done already stays as it is.
                for other, other_task in running.items():
                    if other in stoppable or other_task.id not in started:
                        other.cancel()

        if stoppable or self._gate is not None:
            for future, task in running.items():
                future.add_done_callback(partial(stop_the_others, task))
        limit = self.graph.step_timeout
        try:
            _, waiting = await asyncio.wait(running, timeout=limit)
            if waiting:
                self._stopping = True
                unfinished = sorted(running[future].name for future in waiting)
                for future in waiting:
                    future.cancel()
                await asyncio.wait(waiting)
                self.status = "error"
                raise TimeoutError(
                    f"Timed out: a step of {self.graph.name!r} took longer than its "
                    f"step_timeout ({limit} s); still running: {', '.join(unfinished)}"
                )
        finally:
            unfinished = [future for future in running if not future.done()]
            for future in unfinished:  # the step itself was cancelled
                future.cancel()
            if unfinished:  # until they have saved that they were cut off
                await _settled(unfinished)
            for future, (_, job) in zip(running, jobs, strict=True):
                if future.done():
                    job.close()  # one cancelled before it started was never awaited
                    if not future.cancelled():
                        future.exception()  # raised below, or dropped with the step
        for future in running:
            if not future.cancelled() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]

    def _stops_the_step(self, raised: BaseException | None, task: Task) -> bool:
        """Whether a task that ended failed in a way that stops the others: not by a
        question, a command for the parent graph, or an answer its question refused
        (the other answered tasks finish, so none does its side effects twice); a
        failure its error handler took counts only if the handler failed."""
        recorded = [task.error] if not task.handled else [h.error for h in self._handlers]
        return any(
            error is not None
            and not isinstance(error, GraphBubbleUp)
            and not is_invalid_resume(error)
            for error in (raised, *recorded)
        )

    async def _gated(self, job: Coroutine[Any, Any, None], on_start: Callable[[], None]) -> None:
        if self._gate is None:
            on_start()
            return await job
        async with self._gate:
            on_start()
            return await job

    def _restore_pending(self, tasks: list[Task]) -> None:
        """Writes saved for this step mark finished tasks and carry resume answers."""
        self._call_results = {}
        self._call_answers = {}
        self._statuses = {}
        if not self.pending:
            return
        statuses = self._statuses = task_statuses(self.pending, NULL_TASK)
        for task in tasks:
            _restore(task, statuses)
        self._null_resume = [
            v for tid, chan, v in self.pending if tid == NULL_TASK and chan == RESUME
        ]
        self._call_results = {tid: v for tid, chan, v in self.pending if chan == RETURN}
        self._call_answers = {
            tid: status.resume
            for tid, status in statuses.items()
            if status.caller is not None and status.resume
        }

    def _null_resume_taker(self) -> Callable[[], Any] | None:
        queue = self._null_resume
        if not queue and self.parent_resume is None:
            return None

        def take() -> Any:
            if queue:
                return queue.pop(0)
            if self.parent_resume is not None:
                return self.parent_resume()
            return context.NO_VALUE

        return take

    async def _execute(self, task: Task, *, inline: bool) -> None:
        node = task.node
        pad = context.Scratchpad(
            task_ns="|".join([*self.ns, f"{task.name}:{task.id}"]),
            task_id=task.id,
            resume=list(task.resume),
            null_resume=self._null_resume_taker(),
            writer=self._custom_writer(task),
            loop=self,
            node=node,
            # An inline node holds the event loop: nothing can run there until it returns.
            events=None if inline else asyncio.get_running_loop(),
            step=self.step,
            stop=self.stop,
            stream_message=lambda message: self._stream_pushed(task, message),
            sync_call=self.sync_call,
        )
        pad.call_results = self._call_results
        pad.call_answers = self._call_answers
        pad.runtime = Runtime(
            context=self.context,
            store=self.store,
            stream_writer=pad.writer,
            server_info=self.server_info,
            control=self.control,
            previous=self.channels[PREVIOUS].value
            if PREVIOUS in self.channels and self.channels[PREVIOUS].is_available()
            else None,
            execution_info=ExecutionInfo(
                checkpoint_id=self.checkpoint_id,
                checkpoint_ns=pad.task_ns,
                task_id=task.id,
                thread_id=self.thread_id or None,
                run_id=self.config.get("run_id") and str(self.config["run_id"]),
                node_first_attempt_time=time.time(),
            ),
        )
        # A subgraph's task needs a config only for the run its callbacks are told of
        # (and a timed one for the clocks its callbacks and runtime report to); the
        # input node's, for its routers to be handed.
        traced = (
            node.runnable is not None
            or node.routes
            or self.config.get("callbacks")
            or task.timeout is not None
        )
        pad.config = self._task_config(task, pad.runtime) if traced else {}
        if not node.hidden:
            # As LangGraph does when a node's run starts (or the cache answers for it):
            # the messages it was given are not news, though it may return them again,
            # and a model's whole reply reusing one of their ids is not shown.
            self.mark_messages_seen(given_values(task.input))
        caching = node.cache_policy is not None and self.cache is not None
        cached = await self._cached(task) if caching else None
        if cached is not None:
            task.writes = cached
            await self._task_finished(task, cached or [(NO_WRITES, None)], pad)
            return
        writer, callbacks = pad.writer, pad.config.get("callbacks")
        failures = 0
        while True:
            if task.timeout is not None:
                self._time_attempt(task, pad, writer, callbacks)
            token = context.enter(pad)
            try:
                output, writes = await self._attempt(task, pad, inline)
                if pad.pushed:
                    writes = [*pad.pushed, *writes]
                break
            except ParentCommand as exc:
                if not self.ns:
                    raise NoParentGraphError(exc.command) from None
                if exc.command.graph == Command.PARENT:  # type: ignore[attr-defined]
                    # LangGraph names the graph it goes to on its way up (the runs it
                    # ends are told of that name): by the namespace of the task that
                    # ran this graph, less the number of a second graph it ran.
                    ns = self.ns[:-1] if self.ns[-1].isdigit() else self.ns
                    command = dataclasses.replace(exc.command, graph="|".join(ns))  # type: ignore[type-var]
                    exc.command, exc.args = command, (command,)
                raise
            except GraphDrained as exc:
                # A run inside this task stopped to drain: no outcome is saved, so the
                # task runs again when the thread resumes.
                task.error = exc
                self._failed.append(task)
                return
            except GraphInterrupt as exc:
                task.interrupts = list(exc.interrupts)
                task.interrupted = True
                if pad.started:
                    await context.calls_settled(pad)
                # Shown when asked, before the task's result, as LangGraph shows it: a
                # client may put the question to its user while the step's other tasks
                # go on. The state shown with it asks every question of the step so far,
                # so that the last one a client keeps shows all that are open.
                if task.interrupts:
                    self._asked.extend(task.interrupts)
                    if "updates" in self.modes:
                        self.emit(self.ns, "updates", {INTERRUPT: tuple(task.interrupts)})
                    if "values" in self.modes:
                        self._show(with_interrupts(self._shown_state(), self._asked))
                await self._task_finished(task, [(INTERRUPT, task.interrupts)], pad)
                return
            except GraphBubbleUp as exc:
                # Another signal for a graph above (a subclass of the user's): it fails
                # the step, but is no failure of the task's, which saves none (as in
                # LangGraph), is not retried and goes to no error handler.
                task.error = exc
                self._failed.append(task)
                return
            except asyncio.CancelledError:
                # The run cut the task off (a sibling failed, the step timed out, the
                # call was cancelled): saved as its error, as LangGraph saves it. It
                # runs again when the thread resumes.
                if self._stopping or not self.quiet_cancel:
                    await self._save_error(task, CUT_OFF)
                raise
            except Exception as exc:
                failures += 1
                # A node that cancelled itself is not tried again, whatever its policy
                # says (LangGraph's does not either): the cancel was its own decision.
                delay = (
                    None
                    if isinstance(exc, NodeCancelledError)
                    else retry_delay(node.retry_policy, exc, failures)
                )
                if delay is not None:
                    await asyncio.sleep(delay)
                    pad.counter = 0
                    pad.pushed = []
                    pad.folded = {}
                    info = pad.runtime.execution_info
                    if info is not None:
                        runtime = pad.runtime.override(
                            execution_info=info.patch(node_attempt=failures + 1)
                        )
                        _set_runtime(pad, runtime)
                    continue
                task.error = exc
                self._failed.append(task)
                exc.add_note(f"During task with name '{task.name}' and id '{task.id}'")
                failed: Writes = [(ERROR, repr(exc))]
                if is_invalid_resume(exc):
                    # The answer that did not fit is forgotten: the question stays open.
                    pad.taken.clear()
                    failed.append((RESUME, pad.resume[: max(pad.counter - 1, 0)]))
                task.handled = node.error_handler is not None
                if task.handled:
                    failed.append((ERROR_SOURCE, task.name))
                await self._task_finished(task, failed, pad)
                if task.handled:
                    await self._handle(task, inline=inline)
                return
            except BaseException as exc:
                # KeyboardInterrupt, SystemExit: saved as the task's error on the way out
                # (not a coroutine's close, which allows no await).
                if not isinstance(exc, GeneratorExit):
                    await self._save_error(task, exc)
                raise
            finally:
                context.leave(token)
        task.output = output
        task.writes = writes
        task.folded = pad.folded or None
        if caching:
            await self._cache_writes(task)
        if pad.started:
            await context.calls_settled(pad)
        if self.node_finished is not None and not task.node.hidden:
            self.node_finished(task.name)
        await self._task_finished(task, writes or [(NO_WRITES, None)], pad)

    async def _save_error(self, task: Task, error: BaseException | str) -> None:
        """Save `error`, a cancel or an exception that stops the program, as the task's
        (it stays due). Not under `exit` durability, where LangGraph saves none."""
        if self.saver is not None and self.durability != "exit":
            text = error if isinstance(error, str) else repr(error)
            await self._save(PutWrites(self._config(), [(ERROR, text)], task.id))

    async def _handle(self, failed: Task, *, inline: bool, resumed: bool = False) -> None:
        """Run the error handler of a task that failed, in the same step, on the task's
        input; it is told the failure (`NodeError`), and its writes are the step's. One
        run again as its step resumes starts in the `tasks` stream, as LangGraph shows it
        there (not when it runs right after the failure)."""
        name = failed.node.error_handler
        assert name is not None and failed.error is not None
        node = self.graph.nodes[name]
        handler = Task(
            task_id(self.checkpoint_id, self.ns_str, self.step, name, "error_handler", failed.id),
            name,
            (*failed.path[:3], "node_error_handler", False),
            node,
            failed.input,
            (PUSH,),
            timeout=node.timeout,
            failure=NodeError(failed.name, failed.error),
        )
        self._handlers.append(handler)
        _restore(handler, self._statuses)
        if not handler.done:
            if resumed:
                self._emit_task_start(handler)
            await self._execute(handler, inline=inline)

    async def _attempt(
        self, task: Task, pad: context.Scratchpad, inline: bool
    ) -> tuple[Any, Writes]:
        """One attempt of the task: the node's output and its writes (where its routers
        run).

        With callbacks, the attempt is a chain run named after the node, as LangGraph's
        are (tracers and `astream_events` see them): tagged with its step, the runs of its
        code and its routers nested under it, its output shown to streaming handlers when
        the graph runs async (LangGraph streams a node's code only there)."""
        node = task.node
        callbacks = pad.config.get("callbacks")
        if not callbacks or (node.runnable is None and node.subgraph is None and not node.routes):
            return await self._output_and_writes(task, pad, inline)
        if node.hidden:
            pad.config["tags"] = [*(pad.config.get("tags") or ()), TAG_HIDDEN]
        step_tag = f"graph:step:{self.step}"
        if isinstance(callbacks, AsyncCallbackManager):
            # The graph run's own handlers, as LangGraph reuses them: not configured
            # again, which would add the configure hooks' handlers (`collect_runs`) to
            # a node run that LangGraph's do not see.
            manager = callbacks.copy()
            manager.add_tags([step_tag], inherit=False)
            manager.add_metadata(pad.config.get("metadata") or {})
        else:
            manager = AsyncCallbackManager.configure(
                callbacks, local_tags=[step_tag], inheritable_metadata=pad.config.get("metadata")
            )
        # After the step's tag, as LangGraph orders them.
        manager.add_tags(pad.config.get("tags") or [])
        run = await start_run(manager, task.input, task.name, node.trace_policy)
        pad.config["callbacks"], pad.node_run = run.get_child("seq:step:1"), run
        pad.router_step = 2 + _code_steps(node)
        try:
            output, writes = await self._output_and_writes(task, pad, inline)
        except BaseException as exc:
            await run.on_chain_error(exc)
            raise
        finally:
            pad.config["callbacks"], pad.node_run = callbacks, None
        if task.handed_up is not None:
            # LangGraph's node raised the command, and its task took it from there.
            await run.on_chain_error(task.handed_up)
            return output, writes
        if not self.inline_sync:
            await show_output(run, output)
        await end_run(run, output, node.trace_policy)
        return output, writes

    def _time_attempt(
        self, task: Task, pad: context.Scratchpad, writer: StreamWriter, callbacks: Any
    ) -> None:
        """Start the clocks of a new attempt of a timed task: its stream writer, its
        runtime's heartbeat and (under `refresh_on="auto"`) the callback events of the
        runs under it report progress to them."""
        assert task.timeout is not None
        timer = pad.timer = TimedAttempt(task.name, task.timeout)
        pad.writer = timer.guard(writer)
        watcher = timer.watcher()
        if watcher is not None:
            pad.config["callbacks"] = merge_configs(
                {"callbacks": callbacks}, {"callbacks": [watcher]}
            )["callbacks"]
        _set_runtime(pad, pad.runtime.override(stream_writer=pad.writer, heartbeat=timer.heartbeat))

    async def _output_and_writes(
        self, task: Task, pad: context.Scratchpad, inline: bool
    ) -> tuple[Any, Writes]:
        timer = pad.timer
        if timer is not None and self.inline_sync:
            # A sync run calls every node's sync code, which cannot be cancelled.
            raise sync_timeout_error(task.name)
        task.handed_up = None
        try:
            call = self._call(task, pad, inline)
            output = await (call if timer is None else timer.run(call))
        except ParentCommand as exc:
            # A graph run by this task (its subgraph, or one its code invoked) handed
            # control up to us: its command is this task's.
            output = dataclasses.replace(exc.command, graph=None)  # type: ignore[type-var]
            task.handed_up = exc
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is None or current.cancelling():
                raise  # the run is stopping this task
            # The node's own code raised it: a failure like any other.
            raise NodeCancelledError(task.name) from None
        writes = task.node.write(output, self.channels)
        if asyncio.iscoroutine(writes):
            writes = await writes
        return output, writes

    async def _call(self, task: Task, pad: context.Scratchpad, inline: bool) -> Any:
        """The node's output: its subgraph's, its code's, or (for the input node) its input."""
        node, runnable = task.node, task.node.runnable
        if node.subgraph is not None:
            return await self.graph.run_subgraph(self, task, pad)
        if runnable is None:
            return task.input
        run = pad.node_run
        if run is not None and not isinstance(runnable, RunnableCallable):
            # A Runnable (a chain) in the node's run: its steps are the node's (chains.py).
            chain = NodeChain(steps_of(runnable), pad.config, run)
            if streaming_handlers(run) and not self.inline_sync:
                return await added_up(chain.astream(task.input))
            invoke, ainvoke = chain.invoke, chain.ainvoke
        else:
            target = (node.plain if run is None else None) or runnable
            invoke = partial(target.invoke, config=pad.config)
            ainvoke = partial(target.ainvoke, config=pad.config)
        if inline:
            # The node holds the event loop until it returns: a save still in flight would
            # hold its write transaction as long, and a graph the node runs on the same
            # database (in a thread of its own) would wait for that lock until it gave up.
            await self._saved()
            with outside_the_loop():
                return invoke(task.input)
        if node.is_async and not self.inline_sync:
            return await ainvoke(task.input)
        return await asyncio.to_thread(invoke, task.input)

    def _cache_key(self, task: Task) -> tuple[tuple[str, ...], str] | None:
        policy = task.node.cache_policy
        if policy is None or self.cache is None:
            return None
        key = policy.key_func(task.input)
        if isinstance(key, bytes):
            key = key.hex()
        # Keyed by node name only: a cached result serves the node wherever it runs.
        return ((CACHE_NS, task.name), str(key))

    async def _look_up_cache(self, tasks: list[Task]) -> None:
        """Look the step's cached tasks up at once, before any runs: tasks of one step
        with the same input all run, none served by another's writes. Of several with one
        key only the last is served from the cache, the others run: LangGraph's lookup."""
        keys = {task.id: key for task in tasks if (key := self._cache_key(task)) is not None}
        if not keys:
            self._looked_up = {}
            return
        assert self.cache is not None
        served = {key: task_id for task_id, key in keys.items()}
        found = await self.cache.aget(list(served))
        self._looked_up = dict.fromkeys(keys)
        self._looked_up.update({task_id: found.get(key) for key, task_id in served.items()})

    async def _cached(self, task: Task) -> Writes | None:
        """The writes a cached earlier run of this node with the same input made."""
        if task.id in self._looked_up:
            found = self._looked_up.pop(task.id)
        else:
            full = self._cache_key(task)
            if full is None:
                return None
            assert self.cache is not None
            found = (await self.cache.aget([full])).get(full)
        if found is None:
            return None
        task.cached = True
        return [(chan, value) for chan, value in found]

    async def _cache_writes(self, task: Task) -> None:
        full = self._cache_key(task)
        if full is None or task.node.cache_policy is None:
            return
        assert self.cache is not None
        writes = [[chan, value] for chan, value in task.writes]
        await self.cache.aset({full: (writes, task.node.cache_policy.ttl)})

    async def _task_finished(self, task: Task, writes: Writes, pad: context.Scratchpad) -> None:
        if pad.taken or pad.handed_down:
            writes = [*writes, (RESUME, list(pad.resume))]
        if self.saver is not None:
            saves = [(call_id, [(RETURN, value)]) for call_id, value in pad.finished_calls]
            saves += list(pad.call_writes.items())
            if self.untracked:
                writes = [
                    (chan, _untracked_left_out(value, self.untracked) if chan == TASKS else value)
                    for chan, value in writes
                    if chan not in self.untracked
                ] or [(NO_WRITES, None)]
            saves.append((task.id, writes))
            for tid, task_writes in saves:
                if self.durability == "exit":
                    self._exit_writes.append((tid, task_writes))
                else:
                    await self._save(PutWrites(self._config(), task_writes, tid))
        self._emit_task_end(task)

    # Checkpoints.

    @property
    def saved_parent(self) -> str | None:
        """The parent of the head as saved: under `exit` durability the versions between
        the last saved one and the head are never saved."""
        return self._exit_parent if self.durability == "exit" else self.head_parent

    def _config(self) -> dict[str, Any]:
        return checkpoint_config(self.thread_id, self.ns_str, self.checkpoint_id)

    def _checkpoint(self) -> Checkpoint:
        values = {}
        for key, ch in self.channels.items():
            value = ch.checkpoint()
            if value is not MISSING:
                values[key] = value
        if self.untracked and values.get(TASKS):
            values[TASKS] = [_untracked_left_out(s, self.untracked) for s in values[TASKS]]
        return {
            "v": LATEST_VERSION,
            "id": new_checkpoint_id(),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": values,
            "channel_versions": dict(self.versions),
            "versions_seen": dict(self.seen),
            "updated_channels": sorted(self.updated) if self.updated is not None else None,
        }

    async def _save_checkpoint(self, source: str, *, show: set[str] | None = None) -> None:
        """Save the channels as the head's child; with `show` (the channels the step
        updated), the `values` part of the step goes out first, once its version has an
        id (LangGraph's order: the values, then the checkpoint)."""
        parent = self.parent_id
        if self.saver is None:
            # Nothing keeps versions: a fresh id is all the next step's task ids need.
            self.checkpoint_id = self.parent_id = new_checkpoint_id()
            if show is not None:
                self._emit_values(show)
            return
        checkpoint = self._checkpoint()
        metadata = {
            **self.metadata_extra,
            "source": source,
            "step": self.step,
            "parents": dict(self.parents),
        }
        new_versions = {k: v for k, v in self.versions.items() if self.saved_versions.get(k) != v}
        self.saved_versions = dict(self.versions)
        self.checkpoint_id = self.parent_id = checkpoint["id"]
        # Under `exit` only the last version is saved, and the call cannot tell which.
        self.saved_as = None if self.durability == "exit" else checkpoint["id"]
        if show is not None:
            self._emit_values(show)
        parent_config = checkpoint_config(self.thread_id, self.ns_str, parent or "")
        if parent is None:
            parent_config["configurable"].pop("checkpoint_id")
        if self.durability == "exit":
            # Only the last version is saved, as a child of the last one saved; the
            # writes so far are folded into it, so only later ones are its pending writes.
            if self._exit_checkpoint is None:
                self._exit_parent = parent
            self._exit_checkpoint = (checkpoint, metadata, self._exit_parent)
            self._exit_new_versions.update(new_versions)
            self._exit_writes = []
        else:
            await self._save(PutCheckpoint(parent_config, checkpoint, metadata, new_versions))
        self.head_metadata, self.head_parent = metadata, parent
        self._head_put_here = True
        self.head_saved_at = checkpoint["ts"]
        if "checkpoints" in self.modes or "debug" in self.modes:
            self.step += 1
            try:
                tasks = self._prepare(read=False)
            finally:
                self.step -= 1
            self._emit_checkpoint(tasks, {})

    async def _save(self, op: SaveOp) -> None:
        """Durability `sync` saves before going on. `async` hands saves to one background
        drain that saves, in order, everything queued since its last save in one batch:
        the next step runs meanwhile, and a fast run costs few transactions (the drain
        waits `GATHER_SAVES_S` for more, unless the call needs them saved first)."""
        assert self.saver is not None
        if self.durability == "sync":
            await self._store([op])
            return
        saving = self._saving
        if saving is not None and saving.done() and saving.exception() is not None:
            raise saving.exception()  # type: ignore[misc]
        self._queue.append(op)
        if saving is None or saving.done():
            self._saving = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        assert self.saver is not None
        self._hurry = hurry = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait([hurry], timeout=GATHER_SAVES_S)
        finally:
            # Also when cancelled while it gathers: the event loop's end after a
            # KeyboardInterrupt in a node cancels every task, and what the run queued
            # (its input, the steps it finished) must still reach the saver.
            while self._queue:
                ops, self._queue = self._queue, []
                await self.saver.abatch(ops)

    async def _store(self, ops: list[SaveOp]) -> None:
        """Save `ops` now, to the end even if the call is cancelled meanwhile (a reader
        that stops a stream, a cancelled `ainvoke`): a save cut off halfway would leave
        the thread at the step before, looking finished though its next node is due."""
        assert self.saver is not None
        await _to_the_end(asyncio.ensure_future(self.saver.abatch(ops)))

    async def _saved(self) -> None:
        """Wait for the saves handed to the background so far (to their end, as
        `_store` saves)."""
        saving = self._saving
        if saving is None:
            return
        if self._hurry is not None and not self._hurry.done():
            self._hurry.set_result(None)
        stopped: asyncio.CancelledError | None = None
        try:
            await _to_the_end(saving)
        except asyncio.CancelledError as exc:
            stopped = exc
        self._saving = None
        if self._queue:  # the drain was cancelled before it began to wait
            ops, self._queue = self._queue, []
            await self._store(ops)
        if stopped is not None:
            raise stopped

    async def _finish_saving(self) -> None:
        await self._saved()
        if self.durability == "exit" and self.status == "done" and self._forgets_its_run():
            # Under `exit` durability a subgraph that finished leaves its state to its
            # parent's checkpoint (its node's writes), as in LangGraph: only one that
            # stopped, or keeps its own history (checkpointer=True), saves its own.
            self._exit_checkpoint = None
            self._exit_writes = []
        if self.saver is not None and self.durability == "exit" and self._exit_checkpoint:
            checkpoint, metadata, parent = self._exit_checkpoint
            parent_config = checkpoint_config(self.thread_id, self.ns_str, parent or "")
            if parent is None:
                parent_config["configurable"].pop("checkpoint_id")
            final: list[SaveOp] = [
                PutCheckpoint(parent_config, checkpoint, metadata, self._exit_new_versions)
            ]
            self._exit_checkpoint = None
            final += [PutWrites(self._config(), writes, tid) for tid, writes in self._exit_writes]
            self._exit_writes = []
            await self._store(final)
        elif self.saver is not None and self._exit_writes:
            ops = [PutWrites(self._config(), writes, tid) for tid, writes in self._exit_writes]
            self._exit_writes = []
            await self._store(ops)

    def _forgets_its_run(self) -> bool:
        """A subgraph whose checkpoints belong to one run of its node (its namespace
        names the task), not one that keeps its own across runs."""
        return any(":" in part for part in self.ns)

    # Streaming.

    def _emit_checkpoint(self, tasks: list[Task], statuses: dict[str, TaskStatus]) -> None:
        """A `checkpoints` part for the head version, its due tasks and their questions."""
        where = {"parents": self.parents}
        # Under `exit` durability no version of the run is saved before its end: as in
        # LangGraph, its parts name no parent.
        parent = None if self.durability == "exit" else self.head_parent
        # LangGraph shows the call's configurable keys (a `user_id`) but its own private
        # ones; the parent of a version read, not saved, as its saver gave it.
        own = {
            key: value
            for key, value in self.config.get("configurable", {}).items()
            if not key.startswith("__pregel_")
        }
        payload = {
            "config": with_checkpoint_map(
                _with_keys(own, checkpoint_config(self.thread_id, self.ns_str, self.checkpoint_id)),
                where,
            ),
            "parent_config": (
                with_checkpoint_map(
                    _with_keys(
                        own if self._head_put_here else {},
                        checkpoint_config(self.thread_id, self.ns_str, parent),
                    ),
                    where,
                )
                if parent
                else None
            ),
            "values": self.graph.read_state(self.channels),
            "metadata": self.head_metadata,
            "next": [t.name for t in tasks],
            "tasks": [self._checkpoint_task(t, statuses.get(t.id, TaskStatus())) for t in tasks],
        }
        if "checkpoints" in self.modes:
            self.emit(self.ns, "checkpoints", payload)
        if "debug" in self.modes:
            self.emit(self.ns, "debug", _debug(self.head_metadata["step"], "checkpoint", payload))

    def _checkpoint_task(self, task: Task, status: TaskStatus) -> dict[str, Any]:
        """A due task in a `checkpoints` part, in LangGraph's three shapes: a failure
        saved for it (its text), or its questions and, when it finished before the run
        resumed, what it wrote."""
        entry: dict[str, Any] = {"id": task.id, "name": task.name}
        if status.error is not None:
            entry["error"] = error_text(status.error)
        else:
            if result := self.graph.saved_result(status):
                entry["result"] = result
            entry["interrupts"] = tuple(
                {"value": i.value, "id": i.id, "response_schema": i.response_schema}
                for i in status.interrupts
            )
        entry["state"] = self.subgraph_config(task)
        return entry

    def subgraph_config(self, task: Task) -> dict[str, Any] | None:
        """The config of a subgraph task's own checkpoints: the task's namespace, which
        state reads map to where a stateful subgraph keeps them (as LangGraph's do)."""
        if task.node.graph_inside is None:
            return None
        ns = "|".join((*self.ns, f"{task.name}:{task.id}"))
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": ns}}

    def _emit_values_now(self) -> None:
        if "values" in self.modes:
            # The state as the call goes on from it, even when empty (no key written
            # yet, or no value of the one channel shown), as LangGraph shows it.
            self._show(self._shown_state())

    def _emit_values(self, updated: set[str]) -> None:
        if "values" in self.modes and not updated.isdisjoint(self._shown_keys):
            self._show(self._shown_state())

    def _shown_state(self) -> Any:
        """What a `values` part shows: the state, or the call's `output_keys` of it."""
        keys = self.output_keys
        if keys is None:
            return self.graph.read_state(self.channels)
        if isinstance(keys, str):
            channel = self.channels[keys]
            return channel.value if channel.is_available() else None
        return {key: self.channels[key].value for key in keys if self.channels[key].is_available()}

    def output(self) -> Any:
        """What the call returns: the graph's output, or its `output_keys` of the state."""
        if self.output_keys is None:
            return self.graph.read_output(self.channels)
        return self._shown_state()

    def _show(self, values: Any) -> None:
        """A `values` part; the caller of the top graph learns first which checkpoint
        holds these values as saved (`saved_as`), if one does."""
        if self.on_values is not None:
            self.on_values(self.saved_as)
        self.emit(self.ns, "values", values)

    def _custom_writer(self, task: Task) -> Callable[[Any], None]:
        if "custom" not in self.modes:
            return _discard
        ns, emit = self.ns, self.emit
        return lambda chunk: emit(ns, "custom", chunk)

    def task_metadata(self, task: Task) -> dict[str, Any]:
        return {
            # Tracers tell runs inside a graph by this, as LangGraph marks them.
            "ls_integration": (self.config.get("metadata") or {}).get(
                "ls_integration", "langgraph"
            ),
            **(task.node.metadata or {}),
            "langgraph_step": self.step,
            "langgraph_node": task.name,
            "langgraph_triggers": task.triggers,
            "langgraph_path": task.path,
            "langgraph_checkpoint_ns": "|".join([*self.ns, f"{task.name}:{task.id}"]),
            **({"thread_id": self.thread_id} if self.thread_id else {}),
        }

    def _run_metadata(self, task: Task) -> dict[str, Any]:
        """The metadata of the task's run: what callbacks see, and what the `messages`
        stream shows with the messages the node returns."""
        metadata = {**(self.config.get("metadata") or {}), **self.task_metadata(task)}
        if self.outer_ns is not None:
            metadata["checkpoint_ns"] = self.outer_ns
        return metadata

    def _task_config(self, task: Task, runtime: Runtime[Any]) -> dict[str, Any]:
        conf = {**self.config.get("configurable", {}), "checkpoint_ns": None}
        conf["checkpoint_ns"] = "|".join([*self.ns, f"{task.name}:{task.id}"])
        conf["checkpoint_id"] = None  # a graph the node runs starts from its own head
        conf[CONFIG_KEY_RUNTIME] = runtime
        # What the node would read from its edge now, for a node run by a Send (a
        # ToolNode given one tool call) that wants the graph's state too.
        conf[CONFIG_KEY_READ_STATE] = partial(task.node.read, self.channels, self.step, self.stop)
        # The version the step's tasks come from, of this graph and of each around it,
        # by namespace: what LangGraph's nodes find in their configurable.
        conf["checkpoint_map"] = {**self.parents, self.ns_str: self.checkpoint_id}
        if task.failure is not None:
            conf[CONFIG_KEY_NODE_ERROR] = task.failure
        metadata = self._run_metadata(task)
        given = {**(self.config.get("metadata") or {}), **(task.node.metadata or {})}
        if "ls_integration" not in given:
            # The tracers' mark is for the task's run (its callbacks inherit it from
            # the graph's run): LangGraph leaves it out of the config a node is given.
            metadata.pop("ls_integration", None)
        config = {"callbacks": None, **self.config, "configurable": conf, "metadata": metadata}
        if task.node.tags:
            config["tags"] = [*(config.get("tags") or ()), *task.node.tags]
        # A run without tags gives its nodes none (no key), as LangGraph's do.
        if not config.get("tags"):
            config.pop("tags", None)
        config.pop("run_id", None)
        config.pop("run_name", None)
        return config

    def _join_stream_handlers(self) -> None:
        """Chat models and tools called in this call's nodes stream through the run's
        handler of each such mode (`messages`, `tools`): a subgraph joins the one it
        inherits with its callbacks; a call that wants the mode and finds none adds it.

        A root call joins none it inherits (a graph run inside a node with a config of
        its own inherits the caller's): as in LangGraph, a caller's handler that streams
        subgraphs is shown this graph's parts, at this graph's own namespaces, through an
        observer; one that does not is shown none."""
        callbacks = self.config.get("callbacks")
        manager = callbacks if isinstance(callbacks, BaseCallbackManager) else None
        handlers = list(manager.handlers if manager is not None else callbacks or ())
        dropped: list[GraphStreamHandler] = []
        added: list[GraphStreamHandler] = []
        for kind, mode in ((StreamMessagesHandler, "messages"), (StreamToolsHandler, "tools")):
            inherited = [h for h in handlers if isinstance(h, kind)]
            joined = None
            if self.ns:
                joined = next((h for h in reversed(inherited) if not h.observer), None)
            else:
                dropped.extend(inherited)
                observers = [
                    kind(h.default_emit, (), True, observer=True) for h in inherited if h.subgraphs
                ]
                added.extend(observers)
                self._observers += [o for o in observers if isinstance(o, StreamMessagesHandler)]
            if joined is None and mode in self.modes:
                joined = kind(self.emit, self.ns, self.subgraphs)
                added.append(joined)
            if joined is not None:
                joined.emitters[self.ns] = self.emit
            if isinstance(joined, StreamMessagesHandler):
                self._messages = joined
        if not dropped and not added:
            return
        if manager is not None:
            manager = manager.copy()
            for handler in dropped:
                manager.remove_handler(handler)
            for handler in added:
                manager.add_handler(handler, inherit=True)
            self.config = {**self.config, "callbacks": manager}
        else:
            kept = [h for h in handlers if h not in dropped]
            self.config = {**self.config, "callbacks": [*kept, *added]}

    def _emit_task_start(self, task: Task) -> None:
        if self._shows_tasks(task.node):
            payload = {
                "id": task.id,
                "name": task.name,
                "input": task.input,
                "triggers": task.triggers if task.path[0] == PULL else (PUSH,),
            }
            self._show_start(task.node, payload)

    def emit_call_start(
        self, node: Node, call_id: str, name: str, given: tuple[tuple[Any, ...], dict[str, Any]]
    ) -> None:
        """A `@task` call's start in the `tasks` and `debug` streams: a task pushed by
        its caller's node (`given`: its args and kwargs), as LangGraph shows a call;
        also that of a call whose saved result it gets back."""
        if self._shows_tasks(node):
            payload = {"id": call_id, "name": name, "input": given, "triggers": (PUSH,)}
            self._show_start(node, payload)

    def emit_call_end(
        self, node: Node, call_id: str, name: str, error: Exception | None, value: Any = None
    ) -> None:
        """A `@task` call's result (or error) in the `tasks` and `debug` streams, for a
        call that ran: a cached or saved result, or a question, is not one, as in
        LangGraph (the caller's result shows the question)."""
        if self._shows_tasks(node):
            result = {} if error is not None else {RETURN: value}
            payload = {"id": call_id, "name": name, "error": error, "result": result}
            self._show_task("task_result", {**payload, "interrupts": []})

    def _shows_tasks(self, node: Node) -> bool:
        return not node.hidden and bool({"tasks", "debug"} & self.modes)

    def _show_start(self, node: Node, payload: dict[str, Any]) -> None:
        """A task's start, with the run's and the node's own metadata and tags, as the
        `messages` stream shows them, less what the task's other fields and namespace
        already say."""
        given = {**(self.config.get("metadata") or {}), **(node.metadata or {})}
        metadata = {k: v for k, v in given.items() if k not in _TASK_BOOKKEEPING}
        if tags := user_tags(self.config.get("tags")):
            metadata["tags"] = tags
        if metadata:
            payload["metadata"] = metadata
        self._show_task("task", payload)

    def _show_task(self, kind: str, payload: dict[str, Any]) -> None:
        """A part of the `tasks` stream, and of the `debug` stream as a `kind` event."""
        if "tasks" in self.modes:
            self.emit(self.ns, "tasks", payload)
        if "debug" in self.modes:
            self.emit(self.ns, "debug", _debug(self.step, kind, payload))

    def _state_writes(self, task: Task) -> list[tuple[str, Any]]:
        keys = self.graph.state_key_set
        return [(k, v) for k, v in task.writes if k in keys]

    def _emit_update(
        self, task: Task, state_writes: list[tuple[str, Any]], *, cached: bool
    ) -> None:
        """The `updates` part of a task's state writes; `cached` when they were not made
        now (the node cache's, or saved by an earlier attempt of the step). A key the
        task wrote more than once shows each write, in order, as LangGraph shows them."""
        if "updates" not in self.modes:
            return
        keys = self.graph.output_channel if self.output_keys is None else self.output_keys
        # The call's `output_keys` may name channels beyond the state (a Pregel's).
        writes = state_writes if self.output_keys is None else task.writes
        if isinstance(keys, str):
            values = [v for k, v in writes if k == keys]
            shown = values if len(values) > 1 else next(iter(values), None)
        else:
            chosen = writes if keys is None else [(k, v) for k, v in writes if k in keys]
            if len({k for k, _ in chosen}) < len(chosen):
                shown = [{k: v} for k, v in chosen]
            else:
                shown = dict(chosen) or None
        update: dict[str, Any] = {task.name: shown}
        if cached:
            update["__metadata__"] = {"cached": True}
        self.emit(self.ns, "updates", update)

    def _holds_task_end(self, task: Task) -> bool:
        """Whether the end parts of `task`, the one task of its step that the cache
        does not serve, wait until the step's writes are applied, as LangGraph's do when
        it runs a lone task in the caller's thread and streams nothing live: they go out
        with the step's `values`, showing what applying changed in place (the ids
        `add_messages` gives), and not at all when applying fails. Not for a failure, a
        question or a cached result (shown before the step goes on), nor in a subgraph
        (its parts reach the caller's stream as they are made)."""
        return not (
            task.cached
            or task.error is not None
            or task.interrupted
            or self.ns
            or self.subgraphs
            or self.graph.stream_eager
            or not self.modes.isdisjoint(("custom", "messages"))
        )

    def _release_held(self) -> None:
        held, self._held, self._lone = self._held, None, None
        if held is not None:
            self._emit_task_end(held, now=True)

    def _emit_task_end(self, task: Task, *, now: bool = False) -> None:
        if task.node.hidden:
            return
        if not now and task is self._lone and self._holds_task_end(task):
            self._held = task
            return
        state_writes = self._state_writes(task)
        if task.error is None and not task.interrupted:
            self._emit_messages(task, state_writes)
            self._emit_update(task, state_writes, cached=task.cached)
        if {"tasks", "debug"} & self.modes:
            payload = {
                "id": task.id,
                "name": task.name,
                "error": task.error,
                "result": task_result(state_writes),
                "interrupts": [
                    {"value": i.value, "id": i.id, "response_schema": i.response_schema}
                    for i in task.interrupts
                ],
            }
            self._show_task("task_result", payload)

    def _message_routes(self) -> list[tuple[StreamMessagesHandler, Emit]]:
        """Where the messages a node returns or pushes are shown: this call's stream when
        it wants them, and the streams of callers that observe this call."""
        routes: list[tuple[StreamMessagesHandler, Emit]] = [(o, o.emit) for o in self._observers]
        if self._messages is not None and "messages" in self.modes:
            routes.insert(0, (self._messages, self.emit))
        return routes

    def _stream_pushed(self, task: Task, message: BaseMessage) -> None:
        meta = self._run_metadata(task)
        for handler, emit in self._message_routes():
            handler.fresh(message, self.ns)
            emit(self.ns, "messages", (message, meta))

    def mark_messages_seen(self, values: Iterable[Any]) -> None:
        """The messages among `values` (or in a list or tuple of them) are not news to
        the `messages` stream: a node or `@task` call that was given them may return
        them again (the whole conversation, with the reply added)."""
        routes = self._message_routes()
        if not routes:
            return
        for value in values:
            for item in value if isinstance(value, list | tuple) else (value,):
                if isinstance(item, BaseMessage) and item.id is not None:
                    for handler, _ in routes:
                        handler.mark_seen(item.id, self.ns)

    def _emit_messages(self, task: Task, state_writes: list[tuple[str, Any]]) -> None:
        """Messages a node wrote that no chat model streamed, each whole, once."""
        routes = self._message_routes()
        if not routes:
            return
        meta = self._run_metadata(task)
        if task.handed_up is not None:
            # LangGraph shows what a node returns; this one raised, its writes are the
            # command a graph it ran raised up to it.
            return
        for handler, emit in routes:
            for _, value in state_writes:
                for item in value if isinstance(value, list) else (value,):
                    if not isinstance(item, BaseMessage) or isinstance(item, RemoveMessage):
                        continue
                    if handler.fresh(item, self.ns):
                        emit(self.ns, "messages", (item, meta))


async def _settled(futures: list[asyncio.Future[None]]) -> None:
    """Wait for `futures` to end even if the awaiting task is cancelled (again) meanwhile:
    a second cancel must not let the call return while its tasks still save."""
    stopped: asyncio.CancelledError | None = None
    pending = set(futures)
    while pending:
        try:
            _, pending = await asyncio.wait(pending)
        except asyncio.CancelledError as exc:
            stopped = exc
    if stopped is not None:
        raise stopped


async def _to_the_end(future: asyncio.Future[None]) -> None:
    """Await `future` to its end even if the awaiting task is cancelled meanwhile (see
    `_settled`), then its outcome."""
    await _settled([future])
    future.result()


def given_values(value: Any) -> list[Any]:
    """The top-level values of a node's input (a dict, a pydantic or dataclass state):
    where the messages it was given are. Another input (a `Send` packet's object) has
    none, as LangGraph looks at no other."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, pydantic.BaseModel):
        return [getattr(value, name) for name in type(value).model_fields]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    return []


def _untracked_left_out(packet: Any, untracked: frozenset[str]) -> Any:
    """A `Send` as saved: a state it carries without its untracked values, which are
    never saved (a resumed packet's task runs without them, as in LangGraph)."""
    if not isinstance(packet, Send) or not isinstance(packet.arg, dict):
        return packet
    if untracked.isdisjoint(packet.arg):
        return packet
    kept = {k: v for k, v in packet.arg.items() if k not in untracked}
    return Send(packet.node, kept, timeout=packet.timeout)


def task_result(state_writes: list[tuple[str, Any]]) -> dict[str, Any]:
    """A task's writes as the `tasks` stream shows them: by key, a key written more than
    once as `{"$writes": [each value, in order]}`. What an entrypoint saves for its next
    call (`previous`) is not its result, and not shown, as in LangGraph."""
    values: dict[str, list[Any]] = {}
    for key, value in state_writes:
        if key != PREVIOUS:
            values.setdefault(key, []).append(value)
    return {k: vs[0] if len(vs) == 1 else {"$writes": vs} for k, vs in values.items()}


def own_namespace(ns: tuple[str, ...], graph: CompiledGraph) -> tuple[str, ...]:
    """The namespace a subgraph run in task namespace `ns` runs and saves in. One compiled
    with checkpointer=True drops the task ids (call numbers stay), so its state carries
    over from one run of its node to the next (LangGraph's stateful subgraphs)."""
    if graph.checkpointer is True:
        return tuple(part.split(":")[0] for part in ns)
    return ns


def own_config(config: dict[str, Any], graph: CompiledGraph) -> dict[str, Any]:
    """A config naming a task namespace of `graph`, turned to where its checkpoints are."""
    conf = config.get("configurable") or {}
    ns = conf.get("checkpoint_ns")
    if not ns or graph.checkpointer is not True:
        return config
    own = "|".join(own_namespace(tuple(ns.split("|")), graph))
    return {**config, "configurable": {**conf, "checkpoint_ns": own}}


def _with_keys(keys: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the other configurable `keys` under its own."""
    return {**config, "configurable": {**keys, **config["configurable"]}}


def with_checkpoint_map(config: dict[str, Any], metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A subgraph's checkpoint config names the versions of the graphs around it too
    (`checkpoint_map`, by namespace), as LangGraph's do: running the top graph with it
    then replays each graph on the way down from its version of that time."""
    parents = (metadata or {}).get("parents")
    if not parents:
        return config
    conf = config["configurable"]
    checkpoint_map = {**parents, conf["checkpoint_ns"]: conf["checkpoint_id"]}
    return {**config, "configurable": {**conf, "checkpoint_map": checkpoint_map}}


def with_interrupts(values: Any, interrupts: list[Interrupt]) -> dict[str, Any]:
    """A state with the questions that stopped the run; a value that is not a dict (an
    entrypoint's) gives way to them, as in LangGraph."""
    shown = values if isinstance(values, dict) else {}
    return {**shown, INTERRUPT: tuple(interrupts)}


def _server_info(configurable: dict[str, Any]) -> ServerInfo | None:
    """Which assistant and graph a server runs this call for, and its user."""
    assistant_id, graph_id = configurable.get("assistant_id"), configurable.get("graph_id")
    if assistant_id is None or graph_id is None:
        return None
    user = configurable.get("langgraph_auth_user")
    return ServerInfo(assistant_id=str(assistant_id), graph_id=str(graph_id), user=user)


def _discard(_chunk: Any) -> None:
    return None


def _debug(step: int, kind: str, payload: Any) -> dict[str, Any]:
    return {
        "step": step,
        "timestamp": datetime.now(UTC).isoformat(),
        "type": kind,
        "payload": payload,
    }


# Metadata keys a task's start in the `tasks` stream leaves out: its id, node, step,
# triggers, path and namespace are the payload's own fields.
_TASK_BOOKKEEPING = EXCLUDED_METADATA_KEYS


# Nor is a checkpoint's metadata, with the mark tracers know a graph's runs by.
_NOT_SAVED = _TASK_BOOKKEEPING | {"ls_integration"}


def _restore(task: Task, statuses: dict[str, TaskStatus]) -> None:
    """What the step's saved writes say of `task`: its answers so far, and whether it
    finished (or failed into its error handler) and with what."""
    status = statuses.get(task.id)
    if status is None:
        return
    if status.resume is not None:
        task.resume = status.resume
    if status.finished:
        task.done = True
        task.writes = list(status.output)
    elif status.handled:
        task.done = task.handled = True
        task.error = restore_error(status.error)


def _set_runtime(pad: context.Scratchpad, runtime: Runtime[Any]) -> None:
    """Give the task a new runtime, where its node looks for it too (its config, which
    an untraced subgraph's task has none of)."""
    pad.runtime = runtime
    if pad.config:
        pad.config["configurable"][CONFIG_KEY_RUNTIME] = runtime


def _code_steps(node: Node) -> int:
    """How many steps the node's code is in its sequence (LangGraph's numbering): none for
    the input node, a chain's steps, else one."""
    if node.runnable is None:
        return 0 if node.subgraph is None else 1
    return len(steps_of(node.runnable))
