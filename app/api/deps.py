"""Request dependencies: the services (`app/container.py`), the caller, a stream slot."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.auth import Principal
from app.container import Services


async def get_services(request: Request) -> Services:
    """Async though it awaits nothing: FastAPI runs a plain function dependency in a
    worker thread, a hop that cost every request a wait for the GIL on a busy process."""
    return request.app.state.services  # type: ignore[no-any-return]


Svc = Annotated[Services, Depends(get_services)]

_api_key = APIKeyHeader(
    name="x-api-key",
    auto_error=False,
    description="An API key (THREADLINE_AUTH=api_key) or a token (jwt); what langgraph-sdk "
    "sends for its `api_key`.",
)
_bearer = HTTPBearer(auto_error=False, description="An API key or a token, as a bearer token.")


async def current_user(
    services: Svc,
    api_key: Annotated[str | None, Security(_api_key)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    """The caller, from `x-api-key` or `Authorization: Bearer` (401 when the mode needs a
    credential and it is missing or bad)."""
    return await services.auth.authenticate(api_key or (bearer.credentials if bearer else None))


CurrentUser = Annotated[Principal, Depends(current_user)]


async def stream_slot(services: Svc, user: CurrentUser) -> AsyncIterator[Callable[[], None]]:
    """One of the caller's open streams (429 when all are taken), so that one user cannot
    hold every connection of the server. The stream gives it back with its last event
    (`event_stream`); one that never started streams gives it back after the response."""
    with services.streams.hold(user.user_id) as release:
        yield release


# Taken before the handler runs (no run starts on a refused stream).
StreamSlot = Annotated[Callable[[], None], Depends(stream_slot, scope="request")]
