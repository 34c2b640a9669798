"""What tests share: an app served over a real socket, the input of a turn, the official
client and threads through it, a stream drained into its parts, waiting for a condition
(a poll with a deadline: a test never sleeps in place of one), rows read straight from
the database, and the commands asyncpg sends outside statements (BEGIN, COMMIT)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import asyncpg
import httpx
import uvicorn
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from sqlalchemy import Executable, Row
from starlette.types import ASGIApp

from engine.checkpoint.sql.connect import create_engine

T = TypeVar("T")

# Serving an app.

ServeApp = Callable[[ASGIApp], str]
"""Serves an app in a thread until the test ends; its base URL (the `serve_app` fixture)."""


class QuietServer(uvicorn.Server):
    """Leaves the process's signal handlers alone: several servers start and stop in one
    test process, and a stopped one left as the SIGTERM handler would make sse-starlette
    end every later stream in the process. (uvicorn installs none outside the main thread;
    a server in the test's own loop runs in it.)"""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _listening(port: int) -> tuple[socket.socket, str]:
    """A loopback socket bound here, before uvicorn gets it, so that no other process can
    take the port between choosing and listening; and its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    host, bound = sock.getsockname()
    return sock, f"http://{host}:{bound}"


def _server(app: ASGIApp, options: dict[str, Any]) -> QuietServer:
    return QuietServer(uvicorn.Config(app, **{"log_level": "warning", **options}))


@contextlib.contextmanager
def serving(app: ASGIApp, port: int = 0, stop_s: float = 10.0, **options: Any) -> Iterator[str]:
    """`app` under uvicorn in a thread of its own (with its own event loop), on `port` (a
    free one by default), until the block ends; its base URL. `options` go to
    `uvicorn.Config`. On leaving, the app's shutdown runs, as a server process's would,
    and a server still up after `stop_s` fails the test."""
    sock, url = _listening(port)
    server = _server(app, options)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError(f"uvicorn did not start {app!r}")
            thread.join(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=stop_s)
        sock.close()
    assert not thread.is_alive(), f"the server at {url} did not stop"


@contextlib.asynccontextmanager
async def serving_here(app: ASGIApp, **options: Any) -> AsyncIterator[str]:
    """`serving`, in the running event loop: the server shares the test's loop, so a
    request the app handles slowly holds up everything else in the test, as it would in
    a server process."""
    sock, url = _listening(0)
    server = _server(app, options)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                raise RuntimeError(f"uvicorn did not start {app!r}") from task.exception()
            await asyncio.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        await task
        sock.close()


# A turn's input.


def said(text: str, **fields: Any) -> dict[str, Any]:
    """A run's input of one human message saying `text` (`fields`: more of the message's)."""
    return {"messages": [{"role": "user", "content": text, **fields}]}


# The official client, and threads.


def client(url: str, **options: Any) -> LangGraphClient:
    """The official client of the server at `url` (`options`: `get_client`'s, e.g. headers)."""
    return get_client(url=url, **options)


def new_id() -> str:
    """A fresh id, e.g. of a thread a run creates (`if_not_exists="create"`)."""
    return str(uuid.uuid4())


async def new_thread(api: LangGraphClient | httpx.AsyncClient, **body: Any) -> str:
    """A thread made through the official client or plain HTTP (`body`: what POST
    /threads takes); its id."""
    if isinstance(api, LangGraphClient):
        return str((await api.threads.create(**body))["thread_id"])
    answer = await api.post("/threads", json=body)
    assert answer.is_success, answer.text
    return str(answer.json()["thread_id"])


async def joined_runs(
    client: httpx.AsyncClient, body: dict[str, Any], runs: int = 2
) -> tuple[str, list[str]]:
    """A new thread and `runs` background runs of `body` on it, each joined before the
    next: the thread's id and the runs' ids."""
    thread_id = await new_thread(client)
    run_ids = []
    for _ in range(runs):
        created = await client.post(f"/threads/{thread_id}/runs", json=body)
        run_ids.append(created.json()["run_id"])
        await client.get(f"/threads/{thread_id}/runs/{run_ids[-1]}/join")
    return thread_id, run_ids


async def collect(stream: AsyncIterator[Any]) -> list[tuple[str, Any]]:
    """A stream of the official client, drained: its (event, data) pairs."""
    return [(part.event, part.data) async for part in stream]


async def follow_thread(
    api: httpx.AsyncClient,
    thread_id: str,
    events: list[tuple[str, Any]],
    *,
    timeout_s: float = 60.0,
    **params: Any,
) -> None:
    """Append every (event, data) of the thread's SSE stream (all its runs, as they come)
    to `events`, until the stream ends or the task is cancelled."""
    async with api.stream(
        "GET",
        f"/threads/{thread_id}/stream",
        params=params or None,
        timeout=httpx.Timeout(timeout_s, read=None),
    ) as response:
        response.raise_for_status()
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line.removeprefix("data:"))))


# Waiting for a condition.


async def eventually(
    check: Callable[[], Awaitable[T | None] | T | None],
    what: str,
    timeout: float = 30.0,
    every: float = 0.05,
) -> T:
    """The first truthy result of `check` (a coroutine function, or a plain one),
    polled every `every` seconds; fails naming `what` after `timeout` (a deadline for a
    test that would hang, not a speed bound)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(every)


async def until_status(
    api: LangGraphClient, thread_id: str, run_id: str, status: str
) -> dict[str, Any]:
    """The run once its status is `status`."""

    async def reached() -> dict[str, Any] | None:
        run = await api.runs.get(thread_id, run_id)
        return dict(run) if run["status"] == status else None

    return await eventually(reached, f"run {run_id} to be {status}")


# The database.


async def database_rows(database_url: str, statement: Executable) -> list[Row[Any]]:
    """The rows of one statement, on an engine of its own: what the server stored, read
    whether or not the server still runs."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            return list(await connection.execute(statement))
    finally:
        await engine.dispose()


async def database_execute(database_url: str, statement: Executable) -> None:
    """Run one statement in a transaction of its own, on an engine of its own: a test
    setting what it cannot reach through the API (a row made old)."""
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(statement)
    finally:
        await engine.dispose()


# Round trips.


@contextlib.contextmanager
def asyncpg_commands() -> Iterator[list[str]]:
    """The commands asyncpg sends as simple queries meanwhile (BEGIN, COMMIT, ...)."""
    sent: list[str] = []
    execute = asyncpg.Connection.execute

    async def noted(self: asyncpg.Connection, query: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(query)
        return await execute(self, query, *args, **kwargs)

    asyncpg.Connection.execute = noted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        asyncpg.Connection.execute = execute  # type: ignore[method-assign]
