"""A thread's state: read a version, update one (a fork when it is not the head), list
the history of every branch, and the conversation tree of its turns.

A thread's checkpoints are read with the graph named by its metadata `graph_id`; a thread
that has none yet has an empty state and no history.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import functools
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import convert_to_messages
from sqlalchemy import select

from app.db.models import RunRow, ThreadRow
from app.errors import Conflict, Invalid, NotFound
from app.jsonable import json_and_text, jsonable
from app.limits import HISTORY_PAGE_TEXT
from app.schemas.runs import CheckpointRef
from app.schemas.state import (
    Checkpoint,
    HistoryQuery,
    StateUpdate,
    SubgraphState,
    ThreadState,
    ThreadStorage,
    ThreadTask,
    ThreadTree,
    Turn,
    TurnStatus,
)
from app.schemas.threads import ThreadCreate
from app.services.common import (
    MESSAGE_ERRORS,
    check_command,
    check_messages,
    check_values,
    command_of,
    error_message,
    parse_uuid,
    served_graph,
    snapshot_of,
)
from engine import CompiledGraph, InvalidUpdateError, PregelTask, StateSnapshot
from engine.checkpoint.base import VersionInfo
from engine.checkpoint.sql.saver import ThreadDeletedError
from engine.types import StateUpdate as GraphUpdate

if TYPE_CHECKING:
    from app.config import Settings
    from app.db.database import Database
    from app.services.threads import ThreadService
    from engine.checkpoint.sql.saver import SQLSaver

EMPTY = ThreadState(
    values={},
    next=[],
    tasks=[],
    interrupts=[],
    checkpoint=None,
    parent_checkpoint=None,
    metadata=None,
    created_at=None,
)


# Snapshots on the wire.


def thread_state(snapshot: StateSnapshot, values: Any = None) -> ThreadState:
    """The version on the wire; `values`: its values as JSON types, when made already."""
    return ThreadState(
        values=jsonable(snapshot.values) if values is None else values,
        next=list(snapshot.next),
        tasks=[_task(t) for t in snapshot.tasks],
        interrupts=jsonable(snapshot.interrupts),
        checkpoint=(checkpoint := _checkpoint(snapshot.config)),
        parent_checkpoint=(parent := _checkpoint(snapshot.parent_config)),
        metadata=jsonable(snapshot.metadata),
        created_at=snapshot.created_at,
        checkpoint_id=checkpoint and checkpoint.checkpoint_id,
        parent_checkpoint_id=parent and parent.checkpoint_id,
    )


def _checkpoint(config: dict[str, Any] | None) -> Checkpoint | None:
    conf = (config or {}).get("configurable") or {}
    if not conf.get("checkpoint_id"):
        return None
    return Checkpoint(
        thread_id=conf["thread_id"],
        checkpoint_ns=conf.get("checkpoint_ns", ""),
        checkpoint_id=conf["checkpoint_id"],
        checkpoint_map=conf.get("checkpoint_map"),
    )


def _task(task: PregelTask) -> ThreadTask:
    nested = task.state if isinstance(task.state, StateSnapshot) else None
    where = task.state.get("configurable") if isinstance(task.state, dict) else None
    return ThreadTask(
        id=task.id,
        name=task.name,
        path=jsonable(task.path),
        error=None if task.error is None else str(task.error),
        interrupts=jsonable(task.interrupts),
        checkpoint=SubgraphState(**where) if where else None,
        state=None if nested is None else thread_state(nested),
        result=jsonable(task.result),
    )


# Reading and updating.


def requested_version(checkpoint: CheckpointRef | None, checkpoint_id: str | None) -> CheckpointRef:
    """The version a request names in `checkpoint`, or with the `checkpoint_id` given
    apart (the older form); both naming different versions is a 422."""
    ref = checkpoint or CheckpointRef()
    if checkpoint_id and ref.checkpoint_id and ref.checkpoint_id != checkpoint_id:
        raise Invalid(
            f"checkpoint_id {checkpoint_id!r} and checkpoint.checkpoint_id "
            f"{ref.checkpoint_id!r} name different versions: give one."
        )
    return ref.model_copy(update={"checkpoint_id": checkpoint_id}) if checkpoint_id else ref


def version_config(thread_id: str, ref: CheckpointRef | None) -> dict[str, Any]:
    """The engine's config for the version `ref` names: a namespace ("" for the thread's
    graph, "node:task_id|..." for a subgraph's state inside it) and a checkpoint id in
    it (the namespace's latest when there is none)."""
    conf: dict[str, Any] = {
        "thread_id": thread_id,
        "checkpoint_ns": ref.checkpoint_ns if ref else "",
    }
    if ref is not None and ref.checkpoint_id:
        conf["checkpoint_id"] = parse_uuid(ref.checkpoint_id, "checkpoint_id")
    return {"configurable": conf}


async def read_version(
    graph: CompiledGraph, config: dict[str, Any], *, subgraphs: bool = False
) -> StateSnapshot:
    """The state at the version `config` names, read with the graph (or the subgraph)
    that wrote it. 404 when the thread has no such version: a checkpoint id it does not
    have, or a namespace that names no subgraph state of the thread."""
    conf = config["configurable"]
    ns, checkpoint_id = conf["checkpoint_ns"], conf.get("checkpoint_id")
    try:
        snapshot = await snapshot_of(graph, config, subgraphs=subgraphs)
    except ValueError:  # the namespace names no subgraph of this graph
        if not ns:
            raise
        snapshot = None
    if snapshot is not None and (snapshot.metadata is not None or not (ns or checkpoint_id)):
        return snapshot
    raise missing_version(conf)


def missing_version(conf: dict[str, Any]) -> NotFound:
    """The 404 of a version `conf` names that its thread does not have."""
    ns, checkpoint_id = conf["checkpoint_ns"], conf.get("checkpoint_id")
    thread = f"thread '{conf['thread_id']}'"
    if checkpoint_id:
        where = f" in namespace {ns!r}" if ns else ""
        return NotFound(f"Checkpoint '{checkpoint_id}' not found{where} in {thread}.")
    return NotFound(
        f"checkpoint_ns {ns!r} names no subgraph state of {thread}: the namespaces are "
        "those that tasks' `checkpoint` name (GET /threads/{id}/state?subgraphs=true)."
    )


def _before(before: str | None) -> dict[str, Any] | None:
    """`before` (the checkpoint id the query's check found in it) as a config."""
    return None if before is None else {"configurable": {"checkpoint_id": before}}


# The conversation tree.


class _Outcome(NamedTuple):
    """What the tree needs of a run: its input, the version it was asked to start from,
    when it was made, and how it ended."""

    status: str
    input: Any
    checkpoint_id: str | None
    created_at: datetime
    interrupted: bool


# Runs whose last checkpoint shows a reply: not one still going, nor one that failed.
REPLIED = frozenset({"success", "interrupted"})


@dataclass
class _Branching:
    """The checkpoint tree of a thread's root namespace, cut into turns."""

    versions: dict[str, VersionInfo]
    children: dict[str | None, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for v in sorted(self.versions.values()):
            parent = v.parent_id if v.parent_id in self.versions else None
            self.children.setdefault(parent, []).append(v.checkpoint_id)

    def next_in_turn(self, checkpoint_id: str) -> str | None:
        """The child that continues the turn: the oldest that is not a new input."""
        for child in self.children.get(checkpoint_id, ()):
            if self.versions[child].source != "input":
                return child
        return None

    def starts_turn(self, v: VersionInfo) -> bool:
        if v.source == "input" or v.parent_id not in self.versions:
            return True
        return self.next_in_turn(v.parent_id) != v.checkpoint_id

    def chain(self, start: str) -> list[str]:
        ids = [start]
        while (following := self.next_in_turn(ids[-1])) is not None:
            ids.append(following)
        return ids

    def carried_on(self, outcomes: dict[str, _Outcome]) -> dict[str, list[str]]:
        """Runs that went on from the thread's head of their time without writing a
        version of its graph, by that version: answers to a question a subgraph asked
        again (only the subgraph's state changed), resumes that failed, runs that have
        not written yet."""
        writers = {v.run_id for v in self.versions.values()}
        written = sorted(
            (datetime.fromisoformat(v.created_at), v.checkpoint_id)
            for v in self.versions.values()
            if v.created_at
        )
        carried: dict[str, list[str]] = {}
        for run_id, run in outcomes.items():
            if run_id in writers or run.input is not None or run.checkpoint_id is not None:
                continue
            before = bisect.bisect_left(written, (run.created_at,))
            if before:
                carried.setdefault(written[before - 1][1], []).append(run_id)
        return carried


def _turn(
    branching: _Branching,
    start: VersionInfo,
    ids: list[str],
    turns: dict[str, Turn],
    turn_of: dict[str, str],
    outcomes: dict[str, _Outcome],
    carried: dict[str, list[str]],
) -> Turn:
    """A turn from its checkpoints. One that opens with an input is a child of the turn
    whose end it continues; one forked from inside a turn is that turn's sibling: with
    that turn's input (a regenerate), or with its own (an edit of that turn's message).
    Its runs are those that wrote its checkpoints and those that went on from them
    without writing one; the last to go on from its last checkpoint tells how it stands."""
    if start.source != "input" and start.parent_id in turn_of:
        forked_from = turns[turn_of[start.parent_id]]
        parent_turn = forked_from.parent_turn_id
        given, user_message = forked_from.input, forked_from.user_message
    else:
        parent_turn = turn_of.get(start.parent_id) if start.parent_id else None
        if parent_turn is not None and turns[parent_turn].last_checkpoint_id != start.parent_id:
            parent_turn = turns[parent_turn].parent_turn_id
        opener = outcomes.get(start.run_id or "")
        given = opener.input if opener else None
        user_message = _human(given)
    last = branching.versions[ids[-1]]
    writer = outcomes.get(last.run_id or "")
    later = carried.get(last.checkpoint_id)
    runs = (r for i in ids for r in (branching.versions[i].run_id, *carried.get(i, ())) if r)
    return Turn(
        turn_id=start.checkpoint_id,
        parent_turn_id=parent_turn,
        first_checkpoint_id=start.checkpoint_id,
        last_checkpoint_id=last.checkpoint_id,
        parent_checkpoint_id=start.parent_id,
        run_ids=list(dict.fromkeys(runs)),
        input=given,
        user_message=user_message,
        reply=None,
        status=_status(outcomes[later[-1]] if later else writer),
        sibling_index=0,
        sibling_count=1,
        children=[],
        created_at=start.created_at,
    )


def _human(given: Any) -> dict[str, Any] | None:
    """The human message that an input adds: the last of its `messages`."""
    messages = given.get("messages") if isinstance(given, dict) else None
    if isinstance(messages, list):
        messages = messages[-1] if messages else None
    if messages is None:
        return None
    try:
        [message] = jsonable(convert_to_messages([messages]))
    except MESSAGE_ERRORS:
        return None
    return message if message.get("type") == "human" else None


def _status(ender: _Outcome | None) -> TurnStatus:
    """How the run that last went on from the turn's last checkpoint (or wrote it) stands
    (no run: a state update)."""
    if ender is None:
        return "done"
    if ender.status in ("pending", "running"):
        return "busy"
    if ender.status == "success":
        return "interrupted" if ender.interrupted else "done"
    return "cancelled" if ender.status == "interrupted" else "error"


# The service: a thread's state, its updates, its history and its tree.


class StateService:
    """Threads' states through their graphs and the saver; the thread service finds
    (and refreshes) each thread's row."""

    def __init__(
        self, db: Database, saver: SQLSaver, threads: ThreadService, settings: Settings
    ) -> None:
        self.db = db
        self.saver = saver
        self.threads = threads
        self.settings = settings

    async def get_state(
        self, thread_id: str, ref: CheckpointRef | None, *, subgraphs: bool, owner: str
    ) -> ThreadState:
        """The head's state, or the version `ref` names (404 if the thread has no such)."""
        thread = await self.threads.get(thread_id, owner=owner)
        graph = self.threads.graph_of(thread)
        config = version_config(thread.thread_id, ref)
        if graph is None:  # nothing ran on the thread: it has no version but the empty one
            if ref is not None and (ref.checkpoint_id or ref.checkpoint_ns):
                raise missing_version(config["configurable"])
            return EMPTY
        return thread_state(await read_version(graph, config, subgraphs=subgraphs))

    async def create_thread(self, body: ThreadCreate, *, owner: str) -> ThreadRow:
        """A new thread; with `supersteps`, the versions they write in the graph its
        metadata `graph_id` names, one after the other. When they cannot be written the
        thread is not made (422), and an existing thread (`if_exists: do_nothing`) is
        returned as it is."""
        create = functools.partial(
            self.threads.create, body.thread_id, body.metadata, ttl=body.ttl, owner=owner
        )
        if not body.supersteps:
            return await create(body.if_exists)
        graph_id = (body.metadata or {}).get("graph_id")
        if not isinstance(graph_id, str):
            raise Invalid(
                "supersteps: the thread's metadata must name the graph whose state they "
                'write ({"graph_id": ...}).'
            )
        graph = served_graph(self.threads.graphs, graph_id)
        supersteps = []
        for step in body.supersteps:
            for update in step.updates:
                check_messages(update.values, self.settings.max_messages, "supersteps")
                check_values(graph, update.values, "supersteps: values")
                check_command(graph, update.command, "supersteps: command")
            supersteps.append(
                [
                    GraphUpdate(
                        command_of(u.command.model_dump()) if u.command else u.values,  # type: ignore[arg-type]
                        u.as_node,
                    )
                    for u in step.updates
                ]
            )
        existing_wins = bool(body.thread_id) and body.if_exists == "do_nothing"
        if existing_wins:
            with contextlib.suppress(NotFound):
                return await self.threads.get(body.thread_id, owner=owner)
        try:
            thread = await create("raise")
        except Conflict:
            if not existing_wins:
                raise
            return await create("do_nothing")  # made by another request meanwhile
        config = {
            "configurable": {"thread_id": thread.thread_id},
            "metadata": {"thread_id": thread.thread_id, "graph_id": graph_id},
        }
        try:
            await graph.abulk_update_state(config, supersteps)
        except BaseException as exc:
            await self.threads.remove(thread.thread_id)
            if isinstance(exc, (InvalidUpdateError, *MESSAGE_ERRORS)):
                raise Invalid(f"supersteps: cannot write the state: {error_message(exc)}") from None
            raise
        await self.threads.refresh(thread.thread_id, graph)
        return await self.threads.get(thread.thread_id, owner=owner)

    async def update_state(self, thread_id: str, body: StateUpdate, *, owner: str) -> Checkpoint:
        """Write `values` as if `as_node` had, on the head or on the version named (which
        forks the thread), in the thread's graph or, with `checkpoint_ns`, in a subgraph's
        state (which its parent's next run continues from); the thread row then shows the
        new head. Refused while runs are pending or running on the thread: they would
        continue from a head that moved. Updates of one thread take turns (`changing`),
        each on the head the one before it left: none is lost off the head."""
        thread = await self.threads.get(thread_id, owner=owner)
        check_messages(body.values, self.settings.max_messages, "values")
        graph = self.threads.graph_of(thread)
        if graph is None:
            raise Conflict(
                f"Thread '{thread.thread_id}' has no graph yet: run it once, or create it with "
                "metadata graph_id."
            )
        ref = requested_version(body.checkpoint, body.checkpoint_id)
        if not ref.checkpoint_ns:  # a subgraph's keys are its own
            check_values(graph, body.values, "values")
        config = version_config(thread.thread_id, ref)
        metadata = thread.metadata_ or {}
        config["metadata"] = {
            "thread_id": thread.thread_id,
            **{k: metadata[k] for k in ("graph_id", "assistant_id") if k in metadata},
        }
        async with self.threads.changing(thread.thread_id) as change:
            if await change.busy():
                raise Conflict(f"Thread '{thread.thread_id}' is busy: wait for its runs to end.")
            if ref.checkpoint_id or ref.checkpoint_ns:
                await read_version(graph, config)
            try:
                written = await graph.aupdate_state(config, body.values, as_node=body.as_node)
            except (InvalidUpdateError, *MESSAGE_ERRORS) as exc:
                raise Invalid(f"Cannot update the state: {error_message(exc)}") from None
            except ThreadDeletedError:  # deleted meanwhile
                raise NotFound(f"Thread '{thread.thread_id}' not found.") from None
            await change.refresh(graph)
        checkpoint = _checkpoint(written)
        assert checkpoint is not None
        return checkpoint

    async def storage(self, thread_id: str, *, owner: str) -> ThreadStorage:
        """The bytes the thread's versions take, as stored, and what they hold."""
        thread = await self.threads.get(thread_id, owner=owner)
        found = await self.saver.astorage(thread.thread_id)
        parts = dataclasses.asdict(found)
        parts["channel_values"]["by_channel"] = parts.pop("by_channel")
        return ThreadStorage(thread_id=thread.thread_id, total_bytes=found.total_bytes, **parts)

    async def history(
        self, thread_id: str, query: HistoryQuery, *, owner: str
    ) -> list[ThreadState]:
        """Versions of every branch, newest first: of the thread's graph, or with
        `checkpoint_ns`, of that subgraph's state."""
        thread = await self.threads.get(thread_id, owner=owner)
        graph = self.threads.graph_of(thread)
        if graph is None:
            return []
        config = version_config(thread.thread_id, query.checkpoint)
        where = query.metadata
        if config["configurable"]["checkpoint_ns"]:
            await read_version(graph, config)  # a 404 for a namespace it has no state in
            if where and where.get("thread_id") == thread.thread_id:
                # A subgraph's versions do not repeat the thread's id, and all are its own.
                where = {k: v for k, v in where.items() if k != "thread_id"}
        found = graph.aget_state_history(
            config, filter=where, before=_before(query.before), limit=query.limit
        )
        # A page of a long thread's versions is megabytes of JSON each: it ends at the
        # version that takes it past HISTORY_PAGE_TEXT (the client pages on with
        # `before`), and other requests are served between versions. Values a client
        # does not select are neither converted nor counted.
        shown = not query.select or "values" in query.select
        states: list[ThreadState] = []
        size = 0
        async with contextlib.aclosing(found):
            async for snapshot in found:
                values, text = json_and_text(snapshot.values) if shown else ({}, "")
                states.append(thread_state(snapshot, values))
                size += len(text)
                if size > HISTORY_PAGE_TEXT:
                    break
                await asyncio.sleep(0)
        return states

    async def tree(self, thread_id: str, *, owner: str) -> ThreadTree:
        """The thread's turns as a tree, from checkpoint bookkeeping and the runs table."""
        thread = await self.threads.get(thread_id, owner=owner)
        branching = _Branching(
            {v.checkpoint_id: v for v in await self.saver.alist_versions(thread.thread_id)}
        )
        if not branching.versions:
            return ThreadTree(
                thread_id=thread.thread_id,
                head_checkpoint_id=None,
                head_turn_id=None,
                head_path=[],
                turns=[],
            )
        outcomes = await self._outcomes(thread.thread_id)
        carried = branching.carried_on(outcomes)
        turns: dict[str, Turn] = {}
        turn_of: dict[str, str] = {}
        for v in sorted(branching.versions.values()):
            if not branching.starts_turn(v):
                continue
            ids = branching.chain(v.checkpoint_id)
            turn_of.update(dict.fromkeys(ids, v.checkpoint_id))
            turns[v.checkpoint_id] = _turn(branching, v, ids, turns, turn_of, outcomes, carried)
        await self._add_replies(thread.thread_id, branching, outcomes, list(turns.values()))
        siblings: dict[str | None, list[str]] = {}
        for turn in turns.values():
            siblings.setdefault(turn.parent_turn_id, []).append(turn.turn_id)
        for parent, group in siblings.items():
            for index, turn_id in enumerate(group):
                turns[turn_id].sibling_index, turns[turn_id].sibling_count = index, len(group)
            if parent is not None:
                turns[parent].children = group
        head = max(branching.versions)
        path = [turn_of[head]]
        while (parent := turns[path[-1]].parent_turn_id) is not None:
            path.append(parent)
        return ThreadTree(
            thread_id=thread.thread_id,
            head_checkpoint_id=head,
            head_turn_id=turn_of[head],
            head_path=path[::-1],
            turns=list(turns.values()),
        )

    async def _add_replies(
        self,
        thread_id: str,
        branching: _Branching,
        outcomes: dict[str, _Outcome],
        turns: list[Turn],
    ) -> None:
        """Each turn's reply: the last message at its last checkpoint, when it is an AI
        message and the run that wrote that checkpoint ended without failing (a run still
        going, or one that failed, shows none). The saver reads one message a turn."""
        ended = [
            turn
            for turn in turns
            if (writer := outcomes.get(branching.versions[turn.last_checkpoint_id].run_id or ""))
            and writer.status in REPLIED
        ]
        found = await self.saver.alast_elements(
            thread_id, "messages", [turn.last_checkpoint_id for turn in ended]
        )
        for turn in ended:
            reply = jsonable(found.get(turn.last_checkpoint_id))
            turn.reply = reply if isinstance(reply, dict) and reply.get("type") == "ai" else None

    async def _outcomes(self, thread_id: str) -> dict[str, _Outcome]:
        """Input and ending of each run of the thread, oldest first: never the values of
        a result (a checkpoint, or for rows from before references, the whole state)."""
        query = (
            select(
                RunRow.run_id,
                RunRow.status,
                RunRow.kwargs,
                RunRow.created_at,
                RunRow.result["__interrupt__"],
            )
            .where(RunRow.thread_id == thread_id)
            .order_by(RunRow.created_at)
        )
        async with self.db.read() as session:
            rows = await session.execute(query)
        return {
            run_id: _Outcome(
                status, kwargs.get("input"), kwargs.get("checkpoint_id"), made, bool(interrupts)
            )
            for run_id, status, kwargs, made, interrupts in rows
        }
