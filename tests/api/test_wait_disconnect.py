"""`runs/wait` honours `on_disconnect`, as the stream routes do and as LangGraph's server
does: a run whose waiting client leaves is cancelled (`interrupted`) when it was created
with `on_disconnect: "cancel"`, on a thread and stateless alike; by default it goes on."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import sqlalchemy as sa

from app.db.models import RunRow
from tests.helpers import client, database_rows, eventually, new_thread, until_status

# Long enough that a run still running when the client leaves is not about to end.
SLOW = {"delay": 120.0}


async def leave(waiting: Awaitable[Any], started: Callable[[], Awaitable[Any]]) -> None:
    """Wait in a task until `started()` is truthy, then drop the request (its task
    cancelled: the connection is closed)."""
    task = asyncio.ensure_future(waiting)
    try:
        await eventually(started, "the run to start")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def leave_thread_run(
    server: str, graph_input: dict[str, Any], ends: str, **options: Any
) -> None:
    """A run on a new thread whose waiting client (the official one) leaves once it runs
    ends `ends`."""
    api = client(server)
    thread_id = await new_thread(api)

    async def running() -> list[Any]:
        return [r for r in await api.runs.list(thread_id) if r["status"] == "running"]

    waiter = client(server)
    await leave(waiter.runs.wait(thread_id, "slow", input=graph_input, **options), running)
    await waiter.http.client.aclose()
    [run] = await api.runs.list(thread_id)
    await until_status(api, thread_id, run["run_id"], ends)


async def test_a_thread_run_is_cancelled_when_its_waiting_client_leaves(server: str) -> None:
    await leave_thread_run(server, SLOW, "interrupted", on_disconnect="cancel")


async def test_a_run_goes_on_when_its_waiting_client_leaves_by_default(server: str) -> None:
    await leave_thread_run(server, {"delay": 0.5}, "success")


async def test_a_stateless_run_is_cancelled_when_its_waiting_client_leaves(
    server: str, database_url: str
) -> None:
    async def statuses() -> list[str]:
        return [s for (s,) in await database_rows(database_url, sa.select(RunRow.status))]

    async def running() -> bool:
        return await statuses() == ["running"]

    async def interrupted() -> bool:
        return await statuses() == ["interrupted"]

    async with httpx.AsyncClient(base_url=server, timeout=None) as http:
        body = {"assistant_id": "slow", "input": SLOW, "on_disconnect": "cancel"}
        await leave(http.post("/runs/wait", json=body), running)
    await eventually(interrupted, "the stateless run to be interrupted")
