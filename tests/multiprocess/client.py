"""What the multi-process tests do as a client: HTTP calls, polling, SQL reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import psycopg

# Shared with the other tests; imported from here by the multi-process ones.
from tests.helpers import eventually, new_thread, said

__all__ = ["eventually", "new_thread", "said"]

TIMEOUT = httpx.Timeout(30.0, connect=5.0)
FINAL = frozenset({"success", "error", "timeout", "interrupted"})


def client(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, timeout=TIMEOUT)


async def readiness(url: str) -> httpx.Response:
    """`/ok?check_db=1` on a connection of its own, as a load balancer probes (a pooled
    keep-alive connection may be closed by the server just as it is reused)."""
    async with client(url) as api:
        return await api.get("/ok", params={"check_db": 1})


async def create_run(api: httpx.AsyncClient, thread_id: str, **body: Any) -> dict[str, Any]:
    """A background run; the response is the run as created (pending)."""
    response = await api.post(f"/threads/{thread_id}/runs", json=body)
    response.raise_for_status()
    return response.json()  # type: ignore[no-any-return]


async def run_and_join(
    sender: httpx.AsyncClient, joiner: httpx.AsyncClient, thread_id: str, **body: Any
) -> Any:
    """Create a run through one API and wait for its result through another (see
    `test_waiting_through_the_api_that_created_the_run` for why not the same one)."""
    run = await create_run(sender, thread_id, **body)
    return await get_json(joiner, f"/threads/{thread_id}/runs/{run['run_id']}/join")


async def finished(api: httpx.AsyncClient, thread_id: str, run_id: str) -> dict[str, Any]:
    """The run once final, by polling its status (works through any API)."""

    async def final() -> dict[str, Any] | None:
        run = await get_json(api, f"/threads/{thread_id}/runs/{run_id}")
        return run if run["status"] in FINAL else None

    return await eventually(final, f"run {run_id} to end")


async def get_json(api: httpx.AsyncClient, path: str, **params: Any) -> Any:
    response = await api.get(path, params=params)
    response.raise_for_status()
    return response.json()


async def sql(url: str, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of one query, read straight from the database the processes share."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(query, params)
        return await cursor.fetchall()
