"""Where `add_reminder` writes: a small protocol, so the graph runs with or without a database.

The store is handed to each run in its config, as `configurable["reminder_store"]`
(`REMINDER_STORE`): the server hands every run its SQL-backed store (`app.container`);
tests and scripts that run the graph on its own hand an `InMemoryReminderStore`. The tools
and the `remind` node read it from the config of their call (`reminder_store`).
"""

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

Reminder = dict[str, Any]
"""`{"id", "owner", "thread_id", "text", "due", "due_at", "status", "delivered_at",
"tool_call_id", "created_at"}`, JSON-ready (times as ISO strings). `status` is
`unscheduled` (no time could be read from `due`), `scheduled`, `sending` (its delivery
run exists), `delivered` or `undeliverable` (its thread or assistant is gone)."""


class ReminderStore(Protocol):
    """The agent's side effects; each is idempotent, so a re-run call never acts twice."""

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
        """Set a reminder (scheduled at `due_at`, when there is one); a second call with
        the same `tool_call_id` returns the first one and writes nothing."""
        ...

    async def list(self, *, owner: str) -> list[Reminder]:
        """The owner's reminders across all threads, oldest first."""
        ...

    async def deliver(self, *, reminder_id: str, owner: str, thread_id: str, run_id: str) -> bool:
        """Mark the owner's reminder of this thread delivered by `run_id`: True if this
        run is the one that delivers it (first, or again after a crash), False if another
        run did (or there is no such reminder), so it is said once in the thread."""
        ...


class InMemoryReminderStore:
    """A `ReminderStore` in a dict: for tests and for running the graph outside the server."""

    def __init__(self) -> None:
        self._by_call: dict[str, Reminder] = {}

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
        """No await between the lookup and the insert, so concurrent calls cannot both write."""
        existing = self._by_call.get(tool_call_id)
        if existing is not None:
            return dict(existing)
        reminder: Reminder = {
            "id": str(uuid.uuid4()),
            "owner": owner,
            "thread_id": thread_id,
            "text": text,
            "due": due,
            "due_at": due_at and due_at.isoformat(),
            "status": "unscheduled" if due_at is None else "scheduled",
            "delivered_at": None,
            "tool_call_id": tool_call_id,
            "created_at": datetime.now(UTC).isoformat(),
            "run_id": None,
        }
        self._by_call[tool_call_id] = reminder
        return _public(reminder)

    async def list(self, *, owner: str) -> list[Reminder]:
        """Insertion order is creation order."""
        return [_public(r) for r in self._by_call.values() if r["owner"] == owner]

    async def deliver(self, *, reminder_id: str, owner: str, thread_id: str, run_id: str) -> bool:
        for reminder in self._by_call.values():
            if (reminder["id"], reminder["owner"], reminder["thread_id"]) != (
                reminder_id,
                owner,
                thread_id,
            ):
                continue
            if reminder["delivered_at"] is not None and reminder["run_id"] != run_id:
                return False
            reminder["delivered_at"] = reminder["delivered_at"] or datetime.now(UTC).isoformat()
            reminder.update(status="delivered", run_id=run_id)
            return True
        return False


def _public(reminder: Reminder) -> Reminder:
    return {k: v for k, v in reminder.items() if k != "run_id"}


REMINDER_STORE = "reminder_store"
"""The key of a run's `configurable` that holds its `ReminderStore`."""


class NoReminderStore(LookupError):
    """A run's config hands no reminder store."""


def reminder_store(config: Mapping[str, Any]) -> ReminderStore:
    """The reminder store a run's config hands its graph (`configurable[REMINDER_STORE]`)."""
    store = (config.get("configurable") or {}).get(REMINDER_STORE)
    if store is None:
        raise NoReminderStore(
            f"no reminder store in this run's config: hand one as configurable[{REMINDER_STORE!r}]"
        )
    return store  # type: ignore[no-any-return]
