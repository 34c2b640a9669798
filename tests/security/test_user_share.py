"""One user's share of a process's run places (`THREADLINE_MAX_RUNNING_RUNS_PER_USER`): a
user's burst of slow runs keeps the rest of that user's runs in the queue, and other
users' turns start at once beside them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from app.db.database import Database
from app.db.models import RunRow
from app.runs.pool import WorkerPool
from app.services.common import now
from tests.helpers import eventually
from tests.security.conftest import SecureServer, StartSecure

SLOW = {"assistant_id": "slow", "input": {"delay": 60}}
ECHO = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}


@pytest.fixture
async def shared(start_secure: StartSecure) -> SecureServer:
    return await start_secure("api_key", workers=4, max_running_runs_per_user=2)


@pytest.fixture
async def clients(shared: SecureServer) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    users = {}
    for name in ("alice", "bob"):
        users[name] = httpx.AsyncClient(
            base_url=shared.url, headers=shared.headers[name], timeout=10
        )
    try:
        yield users
    finally:
        for client in users.values():
            await client.post("/runs/cancel", json={"status": "all"})
            await client.aclose()


async def _statuses(client: httpx.AsyncClient, runs: list[tuple[str, str]]) -> list[str]:
    found = [(await client.get(f"/threads/{t}/runs/{r}")).json()["status"] for t, r in runs]
    return sorted(found)


async def test_a_users_burst_leaves_places_for_others(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    bob, alice = clients["bob"], clients["alice"]
    runs = []
    for _ in range(4):
        run = (await bob.post("/runs", json=SLOW)).json()
        runs.append((run["thread_id"], run["run_id"]))

    async def two_running() -> bool:
        return await _statuses(bob, runs) == ["pending", "pending", "running", "running"]

    await eventually(two_running, "two of bob's runs running, two queued")
    # Alice's turn starts at once, beside bob's runs: the pool has room for her.
    chat = (await alice.post("/threads", json={})).json()["thread_id"]
    answer = await alice.post(f"/threads/{chat}/runs/wait", json=ECHO)
    assert answer.status_code == 200
    assert answer.json()["messages"][-1]["content"] == "You said: hi"
    assert await two_running()
    # The end of one of bob's runs lets the next of his start.
    for thread_id, run_id in runs:
        if (await bob.get(f"/threads/{thread_id}/runs/{run_id}")).json()["status"] == "running":
            break
    cancel = await bob.post(f"/threads/{thread_id}/runs/{run_id}/cancel")
    assert cancel.status_code in (200, 202, 204)

    async def next_started() -> bool:
        return await _statuses(bob, runs) == ["interrupted", "pending", "running", "running"]

    await eventually(next_started, "the next of bob's runs running in the freed place")


def _pending(owner: str) -> RunRow:
    stamp = now()
    return RunRow(
        run_id=str(uuid.uuid4()),
        thread_id=str(uuid.uuid4()),
        assistant_id=str(uuid.uuid4()),
        status="pending",
        metadata_={},
        kwargs={},
        owner=owner,
        attempt=0,
        created_at=stamp,
        updated_at=stamp,
    )


async def test_a_claim_takes_no_more_of_a_user_than_the_share(database_url: str) -> None:
    """One claim may find several runs of one owner: those past the share go back to the
    queue as they were, and the places they leave go to the next owners."""
    bobs = [_pending("bob") for _ in range(4)]
    alices = [_pending("alice") for _ in range(2)]
    db = Database(database_url)
    await db.prepare()
    try:
        async with db.write() as session:
            session.add_all([*bobs, *alices])
        pool = WorkerPool(db, concurrency=8, lease_s=20.0, heartbeat_s=0.5, user_share=2)
        claimed = await pool.claim(4)
        assert sorted(run.owner for run in claimed) == ["alice", "alice", "bob", "bob"]
        async with db.read() as session:
            query = select(RunRow.owner, RunRow.attempt, RunRow.worker_id)
            left = (await session.execute(query.where(RunRow.status == "pending"))).all()
        assert [tuple(row) for row in left] == [("bob", 0, None)] * 2
        assert await pool.claim(4) == []
    finally:
        await db.close()


async def test_a_claim_ends_when_this_process_counts_more_than_the_database(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database may count fewer runs of an owner here than the process does (a run
    whose end is recorded but whose task is finishing): the claim puts that owner's runs
    back and ends, rather than taking them again and again; runs it took before a later
    round failed are still returned (they are held here)."""
    db = Database(database_url)
    await db.prepare()
    try:
        async with db.write() as session:
            session.add_all([_pending("bob"), _pending("bob")])
        pool = WorkerPool(db, concurrency=8, lease_s=20.0, heartbeat_s=0.5, user_share=1)
        pool.owners["ending"] = "bob"
        assert await asyncio.wait_for(pool.claim(2), timeout=30) == []
        del pool.owners["ending"]
        rounds = 0
        claim_rows = pool._claim_rows

        async def failing_after_one(room: int) -> list[Any]:
            nonlocal rounds
            rounds += 1
            if rounds > 1:
                raise OSError("the database went away")
            return await claim_rows(room)

        monkeypatch.setattr(pool, "_claim_rows", failing_after_one)
        [taken] = await pool.claim(2)
        assert pool.owners == {taken.run_id: "bob"}
    finally:
        await db.close()
