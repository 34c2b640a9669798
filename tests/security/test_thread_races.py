"""Requests racing on one thread (issue 22's bursts, and a probe's): whatever comes
first, each is answered 2xx or 4xx, never 500, and the thread ends as its answers say,
on both databases."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import sqlalchemy as sa
from langgraph_sdk.errors import NotFoundError

from app.config import Settings
from app.db.models import RunRow
from app.main import create_app
from tests.api import held_graph
from tests.api.graphs import GRAPHS
from tests.api.held_graph import held_thread
from tests.helpers import ServeApp, database_rows, eventually, new_id, said

ROUNDS = 4


async def test_a_thread_is_deleted_whatever_its_pending_runs_do(
    serve_app: ServeApp, database_url: str
) -> None:
    """Its runs are cancelled one by one; one rolled back meanwhile (by a cancel, or a
    run with `rollback`) is gone already, and the delete goes on (it answered 404
    'Run ... not found' and left the thread busy)."""
    _, client, thread_id = await held_thread(serve_app, database_url)
    try:
        await client.runs.create(thread_id, "held", input={"log": ["held"]})
        await eventually(held_graph.WAITING.is_set, "the run to reach its node")
        pending = [
            (await client.runs.create(thread_id, "echo", input=said(f"p{i}")))["run_id"]
            for i in range(8)
        ]
        answers = await asyncio.gather(
            client.threads.delete(thread_id),
            *(client.runs.cancel(thread_id, run_id, action="rollback") for run_id in pending),
            return_exceptions=True,
        )
    finally:
        held_graph.GATE.set()
    deleted, *cancels = answers
    assert deleted is None, deleted
    for answer in cancels:  # done, or its run gone with the thread
        assert answer is None or isinstance(answer, NotFoundError), answer
    with pytest.raises(NotFoundError):
        await client.threads.get(thread_id)


async def test_first_runs_of_a_new_thread_at_once_are_all_admitted(
    serve_app: ServeApp, database_url: str
) -> None:
    """On a process that queues every run (an API replica: `serve --no-worker`), runs
    made at once with `if_not_exists: create` on one new id all find the thread the
    first made (the others' inserts of it collided: 500)."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), run_workers=False)
    url = serve_app(create_app(settings))
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        for strategy in ("enqueue", "interrupt", "rollback"):
            thread_id = new_id()
            body = {
                "assistant_id": "echo",
                "input": said("hi"),
                "if_not_exists": "create",
                "multitask_strategy": strategy,
            }
            answers = await asyncio.gather(
                *(http.post(f"/threads/{thread_id}/runs", json=body) for _ in range(10))
            )
            assert [a.status_code for a in answers] == [200] * 10, [a.text for a in answers]


async def test_no_run_outlives_its_deleted_thread(server: str, database_url: str) -> None:
    """A run admitted as its thread is deleted is refused (404) or goes with it: it was
    inserted after the delete, and stayed without a thread for good."""
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        for _ in range(ROUNDS):
            thread_id = (await http.post("/threads", json={})).json()["thread_id"]
            body = {"assistant_id": "echo", "input": said("hi")}
            answers = await asyncio.gather(
                *(http.post(f"/threads/{thread_id}/runs", json=body) for _ in range(4)),
                http.delete(f"/threads/{thread_id}"),
                *(http.post(f"/threads/{thread_id}/runs", json=body) for _ in range(4)),
            )
            assert {a.status_code for a in answers} <= {200, 204, 404}, [a.text for a in answers]
            left = await database_rows(
                database_url, sa.select(RunRow.run_id).where(RunRow.thread_id == thread_id)
            )
            assert not left, left


async def test_one_of_several_deletes_at_once_deletes(server: str) -> None:
    """Deletes of one thread, of one run, and prunes of one thread, sent at once: one of
    each says it deleted, the others find nothing (every one said it did)."""
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "echo", "input": said("hi")}
        run_id = (
            (await http.post(f"/threads/{thread_id}/runs/wait", json=body))
            .headers["content-location"]
            .rsplit("/", 1)[1]
        )
        runs = await asyncio.gather(
            *(http.delete(f"/threads/{thread_id}/runs/{run_id}") for _ in range(6))
        )
        assert sorted(a.status_code for a in runs) == [204] + [404] * 5, [a.text for a in runs]
        threads = await asyncio.gather(*(http.delete(f"/threads/{thread_id}") for _ in range(6)))
        assert sorted(a.status_code for a in threads) == [204] + [404] * 5
        pruned_ids = [(await http.post("/threads", json={})).json()["thread_id"]]
        prunes = await asyncio.gather(
            *(http.post("/threads/prune", json={"thread_ids": pruned_ids}) for _ in range(6))
        )
        assert sorted(a.json()["pruned_count"] for a in prunes) == [0] * 5 + [1]
