"""Which tasks are due at a checkpoint, and how a step's writes change the channels."""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.channels import Channel
from engine.checkpoint.ids import pull_task_id, task_id
from engine.constants import (
    CALLED_BY,
    ERROR,
    ERROR_SOURCE,
    INTERRUPT,
    PULL,
    PUSH,
    RESUME,
    SCHEDULED,
    TASKS,
)
from engine.errors import InvalidUpdateError, NodeError, ParentCommand
from engine.pregel.node import Node, Writes
from engine.types import Interrupt, Send, TimeoutPolicy

CONTROL = frozenset({CALLED_BY, ERROR, ERROR_SOURCE, INTERRUPT, RESUME, SCHEDULED})
log = logging.getLogger(__name__)


@dataclass(slots=True)
class Task:
    id: str
    name: str
    path: tuple[Any, ...]
    node: Node
    input: Any
    triggers: tuple[str, ...]
    writes: Writes = field(default_factory=list)
    output: Any = None
    # True when this task's writes were restored from the saver: it does not run again.
    done: bool = False
    interrupts: list[Interrupt] = field(default_factory=list)
    # Stopped by an interrupt, or by a breakpoint inside its subgraph (which asks nothing).
    interrupted: bool = False
    error: BaseException | None = None
    resume: list[Any] = field(default_factory=list)
    # True when the writes came from the node cache rather than a run of the node.
    cached: bool = False
    # Channels the task's routers folded its writes into (copies), with those writes:
    # the barrier takes them rather than running the reducers again.
    folded: dict[str, tuple[Channel, list[Any], Channel]] | None = None
    # The node's timeout, or the one its Send packet gave.
    timeout: TimeoutPolicy | None = None
    # Failed, and its node's error handler took the failure: the step goes on.
    handled: bool = False
    # For an error handler's task: the failure it handles.
    failure: NodeError | None = None
    # Its output is the command a graph it ran raised up to it (`Command.PARENT`), as
    # raised: the node returned none of it, so the `messages` stream shows none of its
    # writes, and its run ends with that error, as LangGraph's node run does.
    handed_up: ParentCommand | None = None

    def sort_key(self) -> tuple[int, Any]:
        if not self.path:
            # An update_state task: no node ran, the caller's list gives the order.
            return (0, "")
        if self.path[0] == PULL:
            # By the node its path names: an error handler's is its failed node's, and
            # its writes follow those of the nodes before that one, as in LangGraph.
            return (1, self.path[1])
        if self.path[0] == PUSH:
            return (2, self.path[1])
        return (0, "")


def prepare_tasks(
    *,
    nodes: dict[str, Node],
    channels: dict[str, Channel],
    versions: dict[str, int],
    seen: dict[str, dict[str, int]],
    trigger_to_nodes: dict[str, list[str]],
    updated: Iterable[str] | None,
    deferred: Iterable[str] = (),
    checkpoint_id: str,
    ns: str,
    step: int,
    stop: int,
    read: bool = True,
) -> list[Task]:
    """Push tasks for the Send packets written last step, then pull tasks for every node
    one of whose trigger channels has a version the node has not seen."""
    tasks: list[Task] = []
    topic = channels.get(TASKS)
    if topic is not None and topic.is_available():
        for idx, packet in enumerate(topic.value):
            if not isinstance(packet, Send):
                raise InvalidUpdateError(f"Expected a Send packet, got {packet!r}.")
            node = nodes.get(packet.node)
            if node is None:
                log.warning("Ignoring a Send to unknown node %r.", packet.node)
                continue
            tid = task_id(checkpoint_id, ns, step, packet.node, PUSH, idx)
            timeout = packet.timeout or node.timeout
            path = (PUSH, idx, False)
            tasks.append(Task(tid, packet.node, path, node, packet.arg, (PUSH,), timeout=timeout))
    # Nodes of a step that read the state alike (one reader per schema) read it once, and
    # each gets a shallow copy, as in LangGraph: a pydantic state is validated once a step.
    read_once: dict[int, Any] = {}
    if updated is None:
        candidates: Iterable[str] = nodes
    else:
        # Nodes whose triggers the last step wrote, and deferred nodes: one left waiting
        # then is due still, though nothing it reads changed since.
        named = {name for chan in updated for name in trigger_to_nodes.get(chan, ())}
        candidates = sorted(named.union(deferred))
    for name in candidates:
        node = nodes[name]
        node_seen = seen.get(name, {})
        for chan in node.triggers:
            if versions.get(chan, 0) > node_seen.get(chan, 0) and channels[chan].is_available():
                break
        else:
            continue
        tid = pull_task_id(checkpoint_id, ns, step, name)
        value = None
        if read:
            key = id(node.read)
            if key in read_once:
                value = copy.copy(read_once[key])
            else:
                value = read_once[key] = node.read(channels, step, stop)
        tasks.append(
            Task(tid, name, (PULL, name), node, value, node.triggers, timeout=node.timeout)
        )
    if any(t.node.defer for t in tasks) and not all(t.node.defer for t in tasks):
        # Deferred nodes wait, still due, until nothing else is.
        tasks = [t for t in tasks if not t.node.defer]
    return tasks


_last_version = 0
_version_lock = threading.Lock()


def new_version(floor: int) -> int:
    """A version above `floor` (the highest version in the state) and unique within the
    thread.

    Two branches forked from one checkpoint must not hand out the same version for a
    channel, or a saver that stores values by (channel, version) would mix them up; a
    microsecond clock (strictly increasing in this process) keeps them apart.
    """
    global _last_version
    with _version_lock:
        _last_version = max(_last_version + 1, time.time_ns() // 1000)
        return max(_last_version, floor + 1)


def apply_writes(
    channels: dict[str, Channel],
    versions: dict[str, int],
    seen: dict[str, dict[str, int]],
    tasks: Iterable[Task],
    *,
    live: set[str],
    next_version: int | None = None,
) -> set[str]:
    """Fold one step's writes into the channels at the barrier.

    Writes are applied in task-path order so that reducers see parallel writers in a
    fixed order whatever order the tasks finished in. Returns the updated channels.
    `live` tracks which ephemeral channels hold a value: those are the only ones a new
    step must clear, so a step costs what it touched, not the size of the graph.
    """
    ordered = sorted(tasks, key=Task.sort_key)
    if next_version is None:
        next_version = new_version(max(versions.values(), default=0))
    consumed: set[str] = set()
    for task in ordered:
        if task.triggers and task.triggers[0] != PUSH:
            node_seen = dict(seen.get(task.name, {}))
            for chan in task.triggers:
                if chan in versions:
                    node_seen[chan] = versions[chan]
            seen[task.name] = node_seen
            consumed.update(task.triggers)
    for chan in consumed:
        ch = channels.get(chan)
        if ch is not None and ch.consume():
            versions[chan] = next_version
    pending: dict[str, list[Any]] = {}
    writer: dict[str, Task | None] = {}
    for task in ordered:
        for chan, value in task.writes:
            if chan not in channels:
                continue
            pending.setdefault(chan, []).append(value)
            writer[chan] = task if writer.get(chan, task) is task else None
    updated: set[str] = set()
    for chan, values in pending.items():
        ch = channels[chan]
        folded = _folded(writer[chan], ch, chan, values)
        if folded is not None:
            # The task's router already folded these writes into a copy: take it.
            channels[chan] = ch = folded
            versions[chan] = next_version
            if ch.is_available():
                updated.add(chan)
        elif ch.update(values):
            versions[chan] = next_version
            if ch.is_available():
                updated.add(chan)
    for chan in list(live):
        if chan not in pending:
            ch = channels[chan]
            if ch.update(()):
                versions[chan] = next_version
                if ch.is_available():
                    updated.add(chan)
    live.clear()
    for chan in pending:
        ch = channels[chan]
        if ch.fades and ch.is_available():
            live.add(chan)
    return updated


def _folded(task: Task | None, base: Channel, chan: str, values: list[Any]) -> Channel | None:
    """The copy of `base` a task's router made with exactly these writes folded in."""
    if task is None or task.folded is None:
        return None
    found = task.folded.get(chan)
    if found is None:
        return None
    copy, used, copied_from = found
    if copied_from is not base or len(used) != len(values):
        return None
    if any(a is not b for a, b in zip(used, values, strict=True)):
        return None
    return copy


@dataclass(slots=True)
class TaskStatus:
    """What the saved writes of one step say about one task."""

    output: Writes = field(default_factory=list)
    interrupts: list[Interrupt] = field(default_factory=list)
    resume: list[Any] | None = None
    error: Any = None
    # The task failed and its node's error handler took the failure.
    handled: bool = False
    # For a `@task` call, not a task of the step: the task (or call) that made it.
    caller: str | None = None

    @property
    def finished(self) -> bool:
        return bool(self.output)

    @property
    def pending_interrupts(self) -> list[Interrupt]:
        return [] if self.finished else self.interrupts


def task_statuses(pending: Iterable[tuple[str, str, Any]], null_task: str) -> dict[str, TaskStatus]:
    """A task finished iff it saved an output write; its last interrupt is pending until
    then. Writes of the null task are a Command's input, not a task's activity."""
    out: dict[str, TaskStatus] = {}
    for tid, chan, value in pending:
        if tid == null_task:
            continue
        status = out.setdefault(tid, TaskStatus())
        if chan == INTERRUPT:
            status.interrupts = list(value)
        elif chan == ERROR:
            status.error = value
        elif chan == ERROR_SOURCE:
            status.handled = True
        elif chan == CALLED_BY:
            status.caller = value
        elif chan == RESUME:
            status.resume = list(value)
        elif chan not in CONTROL:
            status.output.append((chan, value))
    return out


def answered_by(statuses: dict[str, TaskStatus]) -> dict[str, str]:
    """Which task or call each pending interrupt's answer goes to: the innermost that
    asked it, as an interrupt in a `@task` call stops its callers too."""

    def depth(tid: str) -> int:
        caller = statuses[tid].caller if tid in statuses else None
        return 0 if caller is None else 1 + depth(caller)

    by_id: dict[str, str] = {}
    for tid in sorted(statuses, key=depth):
        for question in statuses[tid].pending_interrupts:
            by_id[question.id] = tid
    return by_id
