"""The reminder agent's side effects, in the `reminders` table.

`add` is idempotent on the tool call id: the row is inserted only if no reminder has
that id yet, so a tool call re-run after a crash, a resume or a fork never acts twice.
`deliver` lets one run say a due reminder: the first to mark it, or that run again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.agents.reminder_store import Reminder
from app.db.database import Database
from app.db.models import ReminderRow
from app.limits import canonical_uuid
from app.services.common import new_id, now


def as_dict(row: ReminderRow) -> Reminder:
    return {
        "id": row.reminder_id,
        "owner": row.owner,
        "thread_id": row.thread_id,
        "text": row.text,
        "due": row.due,
        "due_at": row.due_at and row.due_at.isoformat(),
        "status": row.status,
        "delivered_at": row.delivered_at and row.delivered_at.isoformat(),
        "tool_call_id": row.tool_call_id,
        "created_at": row.created_at.isoformat(),
    }


class SQLReminderStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._insert: Any = postgresql.insert if db.dialect == "postgresql" else sqlite.insert

    async def add(
        self,
        *,
        owner: str,
        thread_id: str,
        text: str,
        due: str | None,
        due_at: datetime | None,
        assistant_id: str | None,
        tool_call_id: str,
    ) -> Reminder:
        async with self.db.write() as session:
            await session.execute(
                self._insert(ReminderRow)
                .values(
                    reminder_id=new_id(),
                    owner=owner,
                    thread_id=thread_id,
                    text=text,
                    due=due,
                    due_at=due_at,
                    status="unscheduled" if due_at is None else "scheduled",
                    assistant_id=assistant_id,
                    tool_call_id=tool_call_id,
                    created_at=now(),
                )
                .on_conflict_do_nothing(index_elements=["tool_call_id"])
            )
            row = await session.scalar(
                select(ReminderRow).where(ReminderRow.tool_call_id == tool_call_id)
            )
        assert row is not None
        return as_dict(row)

    async def list(self, *, owner: str) -> list[Reminder]:
        async with self.db.read() as session:
            rows = await session.scalars(
                select(ReminderRow)
                .where(ReminderRow.owner == owner)
                .order_by(ReminderRow.created_at, ReminderRow.reminder_id)
            )
            return [as_dict(row) for row in rows]

    async def deliver(self, *, reminder_id: str, owner: str, thread_id: str, run_id: str) -> bool:
        try:
            # What a run was sent as the reminder's id (a client may send `remind` anything).
            reminder_id = canonical_uuid(reminder_id)
        except (ValueError, AttributeError, TypeError):
            return False  # no such reminder
        async with self.db.write() as session:
            marked = await session.execute(
                update(ReminderRow)
                .where(
                    ReminderRow.reminder_id == reminder_id,
                    ReminderRow.owner == owner,
                    ReminderRow.thread_id == thread_id,
                    or_(
                        ReminderRow.delivered_at.is_(None),
                        and_(ReminderRow.run_id == run_id, ReminderRow.status == "delivered"),
                    ),
                )
                .values(
                    status="delivered",
                    run_id=run_id,
                    delivered_at=func.coalesce(ReminderRow.delivered_at, now()),
                )
                .execution_options(synchronize_session=False)
            )
        return marked.rowcount == 1  # type: ignore[attr-defined,no-any-return]
