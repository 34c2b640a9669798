"""Wire model of a reminder the agent set."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Reminder(BaseModel):
    id: str
    owner: str
    thread_id: str
    text: str
    due: str | None = Field(description="When, in the words the agent was given.")
    due_at: str | None = Field(
        description="When it fires (ISO 8601, UTC); null when no time could be read from `due`."
    )
    status: Literal["unscheduled", "scheduled", "sending", "delivered", "undeliverable"] = Field(
        description="`sending`: its delivery run is queued or running."
    )
    delivered_at: str | None = Field(description="When the agent said it in its thread.")
    tool_call_id: str
    created_at: str
