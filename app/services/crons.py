"""Crons: create, search, count, change and delete them. Each belongs to the user who
created it (its runs are theirs): another user's cron is answered exactly as a missing one.
The scheduler that starts their runs is `app.runs.crons`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Select, func, select

from app.db.models import CronRow
from app.errors import Invalid, NotFound, validation_problems
from app.graphs import system_assistant_id
from app.schedules import next_run
from app.schemas.crons import RUN_FIELDS, CronCreate, CronFilter, CronPatch, CronSearch
from app.schemas.crons import ThreadCronCreate as ThreadCronBody
from app.schemas.runs import RunCreate
from app.services.common import (
    check_context,
    check_run_body,
    json_contains,
    new_id,
    now,
    parse_uuid,
)

if TYPE_CHECKING:
    from app.db.database import Database
    from app.services.assistants import AssistantService
    from app.services.runs.service import RunService
    from app.services.threads import ThreadService
    from app.webhooks import Webhooks
    from engine import CompiledGraph

_SORT_COLUMNS = {"next_run_date": CronRow.next_run_at}


def run_body(cron: CronRow) -> RunCreate:
    """The run an occurrence of `cron` starts: its payload, its metadata plus its id, and
    its id in the config's `configurable` too, where LangGraph's server gives it to the
    graph."""
    config = dict(cron.payload.get("config") or {})
    config["configurable"] = {**(config.get("configurable") or {}), "cron_id": cron.cron_id}
    return RunCreate.model_validate(
        {
            **cron.payload,
            "config": config,
            "metadata": {**(cron.metadata_ or {}), "cron_id": cron.cron_id},
            **({"on_completion": cron.on_run_completed} if cron.thread_id is None else {}),
        }
    )


def _first_run(
    schedule: str, timezone: str | None, end_time: datetime | None, after: datetime
) -> datetime:
    """A new cron's first run: 422 when none comes before its `end_time` (it would never
    run; a cron changed to end so is ended: it is how a client stops one)."""
    first = next_run(schedule, timezone, end_time, after)
    if first is None:
        raise Invalid(
            f"end_time: {end_time:%Y-%m-%dT%H:%M:%SZ} is before the schedule's next "
            "occurrence: the cron would never run."
        )
    return first


def _check_run(cron: CronRow, graph: CompiledGraph) -> None:
    """422 unless `cron`'s payload makes a run every occurrence can start with, on
    `graph` (its assistant's)."""
    try:
        body = run_body(cron)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise Invalid(f"The cron's runs could not start: {problems}.") from None
    check_run_body(graph, body)


def _mine(cron: CronRow | None, cron_id: str, owner: str) -> CronRow:
    if cron is None or cron.owner != owner:
        raise NotFound(f"Cron '{cron_id}' not found.")
    return cron


class CronService:
    """Crons over the database; their runs' assistants, threads and webhooks are checked
    through the services that own them."""

    def __init__(
        self,
        db: Database,
        assistants: AssistantService,
        threads: ThreadService,
        runs: RunService,
        webhooks: Webhooks,
    ) -> None:
        self.db = db
        self.assistants = assistants
        self.threads = threads
        self.runs = runs
        self.webhooks = webhooks

    async def create(self, thread_id: str | None, body: ThreadCronBody, *, owner: str) -> CronRow:
        """A cron on the owner's thread, or (no thread) one whose runs each get a new thread;
        its first run is the schedule's first occurrence from now."""
        assistant = await self.assistants.resolve(body.assistant_id, owner=owner)
        graph = self.runs.graph_of(assistant)
        check_context(graph, assistant, body)
        await self.webhooks.check(body.webhook)
        if thread_id is not None:
            thread_id = (await self.threads.get(thread_id, owner=owner)).thread_id
        stamp = now()
        cron = CronRow(
            cron_id=new_id(),
            owner=owner,
            assistant_id=assistant.assistant_id,
            thread_id=thread_id,
            schedule=body.schedule,
            timezone=body.timezone,
            end_time=body.end_time,
            enabled=body.enabled,
            on_run_completed=body.on_run_completed if isinstance(body, CronCreate) else None,
            payload=body.payload(),
            metadata_=dict(body.metadata or {}),
            next_run_at=_first_run(body.schedule, body.timezone, body.end_time, stamp),
            created_at=stamp,
            updated_at=stamp,
        )
        _check_run(cron, graph)
        async with self.db.write() as session:
            if thread_id is not None:  # deleted since it was read: the cron would outlive it
                await self.threads.locked_thread(session, thread_id)
            session.add(cron)
        return cron

    async def get(self, cron_id: str, *, owner: str) -> CronRow:
        """The owner's cron; else 404, the same for missing and foreign."""
        key = parse_uuid(cron_id, "cron_id")
        async with self.db.read() as session:
            return _mine(await session.get(CronRow, key), cron_id, owner)

    async def update(self, cron_id: str, body: CronPatch, *, owner: str) -> CronRow:
        """Change the owner's cron (see `CronPatch`)."""
        given = body.model_fields_set
        found = await self.get(cron_id, owner=owner)
        if found.thread_id is not None and body.on_run_completed not in (None, "keep"):
            raise Invalid(
                "on_run_completed: a cron on a thread keeps it (only 'keep' is taken); "
                "deleting a run's thread is for a cron whose runs get a new one."
            )
        assistant = await self.assistants.resolve(found.assistant_id, owner=owner)
        graph = self.runs.graph_of(assistant)
        if body.context is not None:
            check_context(graph, assistant, body)
        await self.webhooks.check(body.webhook)
        async with self.db.write() as session:
            # Locked (PostgreSQL): two metadata merges at once would each keep only theirs.
            locked = await session.get(CronRow, found.cron_id, with_for_update=True)
            cron = _mine(locked, cron_id, owner)
            payload = dict(cron.payload)
            for name, value in body.model_dump(
                include=given & RUN_FIELDS, exclude_unset=True, mode="json"
            ).items():
                if value is None:
                    payload.pop(name, None)
                else:
                    payload[name] = value
            cron.payload = payload
            if body.metadata is not None:
                cron.metadata_ = {**(cron.metadata_ or {}), **body.metadata}
            if body.on_run_completed is not None:
                cron.on_run_completed = body.on_run_completed
            restart = bool(given & {"schedule", "timezone", "end_time"}) or (
                body.enabled is True and not cron.enabled
            )
            if body.schedule is not None:
                cron.schedule = body.schedule
            if "timezone" in given:
                cron.timezone = body.timezone
            if "end_time" in given:
                cron.end_time = body.end_time
            if body.enabled is not None:
                cron.enabled = body.enabled
            stamp = now()
            if restart:
                cron.next_run_at = next_run(cron.schedule, cron.timezone, cron.end_time, stamp)
            cron.updated_at = stamp
            _check_run(cron, graph)
        return cron

    async def delete(self, cron_id: str, *, owner: str) -> None:
        """Delete the owner's cron: no run of it starts afterwards."""
        key = parse_uuid(cron_id, "cron_id")
        async with self.db.write() as session:
            await session.delete(_mine(await session.get(CronRow, key), cron_id, owner))

    def _filtered(self, query: Select[Any], where: CronFilter, owner: str) -> Select[Any]:
        """`query` restricted to the owner's crons that the filter matches, in SQL."""
        query = query.where(CronRow.owner == owner)
        if where.assistant_id is not None:
            try:
                assistant_id = parse_uuid(where.assistant_id, "assistant_id")
            except Invalid:  # a graph id: its system assistant
                assistant_id = system_assistant_id(where.assistant_id)
            query = query.where(CronRow.assistant_id == assistant_id)
        if where.thread_id is not None:
            query = query.where(CronRow.thread_id == parse_uuid(where.thread_id, "thread_id"))
        if where.enabled is not None:
            query = query.where(CronRow.enabled == where.enabled)
        if where.metadata:
            query = query.where(json_contains(self.db.dialect, CronRow.metadata_, where.metadata))
        return query

    async def search(self, body: CronSearch, *, owner: str) -> tuple[list[CronRow], int]:
        """One page of matching crons, and how many match in all. Crons without a value of
        the sorted column (no thread, no end) come last either way, on both databases."""
        column = _SORT_COLUMNS.get(body.sort_by) or getattr(CronRow, body.sort_by)
        direction = column.asc() if body.sort_order == "asc" else column.desc()
        tiebreak = CronRow.cron_id.asc() if body.sort_order == "asc" else CronRow.cron_id.desc()
        query = self._filtered(select(CronRow), body, owner).order_by(
            direction.nulls_last(), tiebreak
        )
        async with self.db.read() as session:
            rows = list(await session.scalars(query.limit(body.limit).offset(body.offset)))
        return rows, await self.count(body, owner=owner)

    async def count(self, where: CronFilter, *, owner: str) -> int:
        """How many crons match, counted in SQL."""
        async with self.db.read() as session:
            total = await session.scalar(
                self._filtered(select(func.count()).select_from(CronRow), where, owner)
            )
        return int(total or 0)
