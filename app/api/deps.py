"""Request dependencies: one per service of the container (`app/container.py`), the
caller, a stream slot.

Each reads the services built for the app (`app.state.services`) from the request, so
none shows in the OpenAPI document. They are async though they await nothing: FastAPI
runs a plain function dependency in a worker thread, a hop that cost every request a
wait for the GIL on a busy process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.auth import Principal
from app.container import Services
from app.db.database import Database
from app.services.assistants import AssistantService
from app.services.crons import CronService
from app.services.mcp import McpService
from app.services.reminders import SQLReminderStore
from app.services.runs.service import RunService
from app.services.state import StateService
from app.services.store import StoreService
from app.services.threads import ThreadService


def _services(request: Request) -> Services:
    return request.app.state.services  # type: ignore[no-any-return]


def _service(name: str) -> Callable[[Request], Awaitable[Any]]:
    """The dependency that gives the container's service `name`."""

    async def get(request: Request) -> Any:
        return getattr(_services(request), name)

    return get


Threads = Annotated[ThreadService, Depends(_service("threads"))]
Runs = Annotated[RunService, Depends(_service("runs"))]
Assistants = Annotated[AssistantService, Depends(_service("assistants"))]
Mcp = Annotated[McpService, Depends(_service("mcp"))]
State = Annotated[StateService, Depends(_service("state"))]
Store = Annotated[StoreService, Depends(_service("store"))]
Crons = Annotated[CronService, Depends(_service("crons"))]
Reminders = Annotated[SQLReminderStore, Depends(_service("reminders"))]
Db = Annotated[Database, Depends(_service("db"))]

_api_key = APIKeyHeader(
    name="x-api-key",
    auto_error=False,
    description="An API key (THREADLINE_AUTH=api_key) or a token (jwt); what langgraph-sdk "
    "sends for its `api_key`.",
)
_bearer = HTTPBearer(auto_error=False, description="An API key or a token, as a bearer token.")


async def current_user(
    request: Request,
    api_key: Annotated[str | None, Security(_api_key)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    """The caller, from `x-api-key` or `Authorization: Bearer` (401 when the mode needs a
    credential and it is missing or bad)."""
    auth = _services(request).auth
    return await auth.authenticate(api_key or (bearer.credentials if bearer else None))


CurrentUser = Annotated[Principal, Depends(current_user)]


async def stream_slot(request: Request, user: CurrentUser) -> AsyncIterator[Callable[[], None]]:
    """One of the caller's open streams (429 when all are taken), so that one user cannot
    hold every connection of the server. The stream gives it back with its last event
    (`event_stream`); one that never started streams gives it back after the response."""
    with _services(request).streams.hold(user.user_id) as release:
        yield release


# Taken before the handler runs (no run starts on a refused stream).
StreamSlot = Annotated[Callable[[], None], Depends(stream_slot, scope="request")]
