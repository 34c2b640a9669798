"""The reminders the agent set for the caller, across all their threads."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import Ctx
from app.schemas.reminders import Reminder

router = APIRouter(tags=["Reminders"])


@router.get("/reminders")
async def list_reminders(ctx: Ctx) -> list[Reminder]:
    return [Reminder(**r) for r in await ctx.reminders.list(owner="local")]
