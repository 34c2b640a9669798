"""The reminders the agent set for the caller, across all their threads."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import CurrentUser, Reminders
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES
from app.schemas.reminders import Reminder

router = APIRouter(tags=["Reminders"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)


@router.get("/reminders")
async def list_reminders(reminders: Reminders, user: CurrentUser) -> list[Reminder]:
    """The caller's reminders from every thread, oldest first."""
    return [Reminder(**r) for r in await reminders.list(owner=user.user_id)]
