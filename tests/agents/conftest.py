"""Fixtures for the reminder agent: real local HTTP services and a fresh reminder store."""

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
import uvicorn
from fastapi import FastAPI

from app.agents.reminder_store import InMemoryReminderStore, get_store, set_store
from tests.agents.helpers import Serve, demo_app


class QuietServer(uvicorn.Server):
    """Leaves the process's signal handlers alone: several servers start and stop in one
    test process, and a stopped one left as the SIGTERM handler would make sse-starlette
    end every later stream in the process."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Run apps under uvicorn on free ports, in the test's own event loop.

    Sharing the loop is what the agent does in the server too: a slow request must not
    hold up anything else, and tests of that would hide bugs if servers had their own thread.
    """
    running: list[tuple[uvicorn.Server, asyncio.Task[None], socket.socket]] = []

    async def start(app: FastAPI) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        server = QuietServer(uvicorn.Config(app, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        running.append((server, task, sock))
        while not server.started:
            if task.done():
                raise RuntimeError("uvicorn did not start") from task.exception()
            await asyncio.sleep(0.01)
        host, port = sock.getsockname()
        return f"http://{host}:{port}"

    yield start
    for server, task, sock in running:
        server.should_exit = True
        await task
        sock.close()


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


@pytest.fixture(autouse=True)
def store() -> Iterator[InMemoryReminderStore]:
    """Each test gets an empty store; the process-wide one is put back afterwards."""
    previous = get_store()
    fresh = InMemoryReminderStore()
    set_store(fresh)
    yield fresh
    set_store(previous)
