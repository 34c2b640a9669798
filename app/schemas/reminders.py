"""Wire model of a reminder the agent set."""

from __future__ import annotations

from pydantic import BaseModel


class Reminder(BaseModel):
    id: str
    owner: str
    thread_id: str
    text: str
    due: str | None
    tool_call_id: str
    created_at: str
