"""Fixtures for the reminder agent: real local HTTP services and a fresh reminder store."""

import contextlib
import socket
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI

from app.agents.reminder_store import InMemoryReminderStore
from tests.agents.helpers import Serve, demo_app
from tests.helpers import serving_here


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Run apps under uvicorn on free ports, in the test's own event loop
    (`tests.helpers.serving_here`).

    Sharing the loop is what the agent does in the server too: a slow request must not
    hold up anything else, and tests of that would hide bugs if servers had their own thread.
    """
    async with contextlib.AsyncExitStack() as running:

        async def start(app: FastAPI) -> str:
            return await running.enter_async_context(serving_here(app, lifespan="off"))

        yield start


@pytest.fixture
async def forecast_url(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> str:
    """The built-in forecast endpoint on a real port; `get_forecast` is pointed at it."""
    url = await serve(demo_app()) + "/demo/forecast"
    monkeypatch.setenv("THREADLINE_FORECAST_URL", url)
    return url


@pytest.fixture
def dead_url(monkeypatch: pytest.MonkeyPatch) -> str:
    """A forecast URL on a port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/demo/forecast"
    monkeypatch.setenv("THREADLINE_FORECAST_URL", url)
    return url


@pytest.fixture
def store() -> InMemoryReminderStore:
    """An empty reminder store, for a test to hand its agent (`compile_agent(store=...)`)."""
    return InMemoryReminderStore()
