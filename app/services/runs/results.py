"""Reading runs: a run by id, a thread's runs, a run's recorded result and the saved
values its `values` events show. A run belongs to the user who created it, on their own
thread: every read names the owner, and another user's run is answered exactly as a
missing one."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any, Protocol

from sqlalchemy import select

from app.db.database import Database
from app.db.models import AssistantRow, RunRow, ThreadRow
from app.errors import Conflict, NotFound
from app.graphs import GraphRegistry
from app.jsonable import to_json, with_keys
from app.services.common import parse_uuid
from app.services.runs.statements import ENDED, FINAL, STATUS
from app.services.threads import owned
from engine import CompiledGraph
from engine.errors import CheckpointNotFoundError


class Ended(Protocol):
    """What a run's answer needs of its row: a `RunRow`, or an `ENDED` row of one."""

    @property
    def run_id(self) -> str: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def assistant_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def checkpoint_id(self) -> str | None: ...
    @property
    def result(self) -> Any: ...


class RunResults:
    def __init__(self, db: Database, graphs: GraphRegistry) -> None:
        self.db = db
        self.graphs = graphs
        # Clients waiting here on each run, and the results of those runs once they ended
        # here (as most do): the row need not be read again. Only awaited results are
        # made (by the executor), and kept only while awaited: a long chat's result is
        # its whole state.
        self.awaited: Counter[str] = Counter()
        self.outcomes: dict[str, str] = {}
        # The rows of awaited runs that ended elsewhere, as `is_final` read them: the
        # waiters answer from them (None: the run is gone).
        self.ended: dict[str, Ended | None] = {}

    def graph_of(self, assistant: AssistantRow) -> CompiledGraph:
        graph = self.graphs.get(assistant.graph_id)
        if graph is None:
            raise NotFound(f"Graph '{assistant.graph_id}' is not served here.")
        return graph

    async def get(self, thread_id: str, run_id: str, *, owner: str) -> RunRow:
        key = parse_uuid(run_id, "run_id")
        tid = parse_uuid(thread_id, "thread_id")
        async with self.db.read() as session:
            run = await session.get(RunRow, key)
        if run is None or run.thread_id != tid or run.owner != owner:
            raise NotFound(f"Run '{run_id}' not found in thread '{thread_id}'.")
        return run

    async def list(
        self, thread_id: str, *, limit: int, offset: int, status: str | None, owner: str
    ) -> list[RunRow]:
        tid = parse_uuid(thread_id, "thread_id")
        async with self.db.read() as session:
            owned(await session.get(ThreadRow, tid), thread_id, owner)
            query = select(RunRow).where(RunRow.thread_id == tid)
            if status:
                query = query.where(RunRow.status == status)
            rows = await session.scalars(
                query.order_by(RunRow.run_id.desc()).limit(limit).offset(offset)
            )
            return list(rows)

    async def ended_row(self, run_id: str) -> Ended | None:
        """The row of a run, as its answer needs it; None when the run is gone."""
        rows = await self.db.read_one(ENDED, {"run": run_id})
        return rows[0] if rows else None

    def deliver(self, run_id: str, answer: str) -> None:
        """The answer of a run that ended in another process, sent with the notification
        of its end (`RunRow.awaited`): its waiters here answer with it, reading nothing."""
        if run_id in self.awaited:
            self.outcomes[run_id] = answer

    async def is_final(self, run_id: str) -> bool:
        if run_id in self.outcomes:
            return True
        if run_id in self.awaited:  # its waiters read the row next: read it now
            run = await self.ended_row(run_id)
            if run is not None and run.status not in FINAL:
                return False
            self.ended[run_id] = run
            return True
        rows = await self.db.read_one(STATUS, {"run": run_id})
        return not rows or rows[0].status in FINAL

    async def answer(self, run: Ended) -> str:
        """A run's recorded result as JSON text: its checkpoint's saved values followed
        by `result` (interrupts), or `result` alone when it names no checkpoint; for a
        run stopped before it started, its thread's values."""
        if run.checkpoint_id is None and run.result is None and run.status == "interrupted":
            return to_json(await self._thread_values(run))
        if run.checkpoint_id is None:
            return to_json(run.result)
        found = await self._saved_values(run, [run.checkpoint_id])
        if run.checkpoint_id not in found:
            raise Conflict(
                f"Run '{run.run_id}' ended at checkpoint '{run.checkpoint_id}', which was "
                "deleted (the thread was pruned) or is not readable here (its graph is not "
                "served): its values are gone."
            )
        return to_json(with_keys(found[run.checkpoint_id], run.result or {}))

    async def _thread_values(self, run: Ended) -> Any:
        """The values of the thread of a run stopped before it started (it has none of
        its own): what its waiters get, as from LangGraph's server ({} for none)."""
        async with self.db.read() as session:
            thread = await session.get(ThreadRow, run.thread_id)
        if thread is None or thread.checkpoint_id is None:
            return (thread and thread.values) or {}
        found = await self._saved_values(run, [thread.checkpoint_id])
        return found.get(thread.checkpoint_id, {})

    async def saved_values(self, run_id: str, checkpoint_ids: list[str]) -> dict[str, str]:
        """The JSON of the saved values of checkpoints of the run's thread, by id (those
        found): what the run's recorded `values` events showed."""
        run = await self.ended_row(run_id)
        if run is None:
            return {}
        found = await self._saved_values(run, checkpoint_ids)
        return {checkpoint_id: to_json(values) for checkpoint_id, values in found.items()}

    async def _saved_values(self, run: Ended, checkpoint_ids: list[str]) -> dict[str, Any]:
        """The saved values of checkpoints of the run's thread, by id (those found), read
        with the run's graph (its assistant's; its thread's if the assistant is gone)."""
        assistant = self.graphs.system_rows.get(run.assistant_id)  # they never change
        thread = None
        if assistant is None:
            async with self.db.read() as session:
                assistant = await session.get(AssistantRow, run.assistant_id)
                thread = None if assistant else await session.get(ThreadRow, run.thread_id)
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
            owned(await session.get(ThreadRow, tid), thread_id, owner)
        return tid
