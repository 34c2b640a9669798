"""Where `add_reminder` writes: a small protocol, so the graph runs with or without a database.

The server installs its SQL-backed store at startup with `set_store`; tests and scripts that
run the graph on its own get a process-wide in-memory store.
"""

import uuid
from datetime import UTC, datetime
from typing import Any, Protocol

Reminder = dict[str, Any]
"""`{"id", "owner", "thread_id", "text", "due", "tool_call_id", "created_at"}`, JSON-ready."""


class ReminderStore(Protocol):
    """The agent's only side effect; `add` is idempotent so a re-run tool never acts twice."""

    async def add(
        self, *, owner: str, thread_id: str, text: str, due: str | None, tool_call_id: str
    ) -> Reminder:
        """Set a reminder; a second call with the same `tool_call_id` returns the first one
        and writes nothing."""
        ...

    async def list(self, *, owner: str) -> list[Reminder]:
        """The owner's reminders across all threads, oldest first."""
        ...


class InMemoryReminderStore:
    """A `ReminderStore` in a dict: for tests and for running the graph outside the server."""

    def __init__(self) -> None:
        self._by_call: dict[str, Reminder] = {}

    async def add(
        self, *, owner: str, thread_id: str, text: str, due: str | None, tool_call_id: str
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
            "tool_call_id": tool_call_id,
            "created_at": datetime.now(UTC).isoformat(),
        }
        self._by_call[tool_call_id] = reminder
        return dict(reminder)

    async def list(self, *, owner: str) -> list[Reminder]:
        """Insertion order is creation order."""
        return [dict(r) for r in self._by_call.values() if r["owner"] == owner]


_store: ReminderStore = InMemoryReminderStore()


def set_store(store: ReminderStore) -> None:
    """Install the store every reminder tool uses from now on (the server calls this once)."""
    global _store
    _store = store


def get_store() -> ReminderStore:
    """The installed store, read at call time so `set_store` after import still applies."""
    return _store
