"""Limits (issue 8): body size (413), messages per request (413), open streams per user and
queued runs per user (429 with Retry-After). Each user has their own share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import httpx
import pytest

from tests.helpers import eventually
from tests.security.conftest import SecureServer, StartSecure

LIMITS = {
    "max_body_bytes": 4096,
    "max_messages": 3,
    "max_streams_per_user": 2,
    "max_queued_runs_per_user": 2,
    # Nothing executes runs: what is queued stays queued.
    "run_workers": False,
}

on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
async def limited(start_secure: StartSecure) -> SecureServer:
    return await start_secure("api_key", **LIMITS)


@pytest.fixture
async def alice(limited: SecureServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=limited.url, headers=limited.headers["alice"], timeout=10
    ) as http:
        yield http


@pytest.fixture
async def bob(limited: SecureServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=limited.url, headers=limited.headers["bob"], timeout=10
    ) as http:
        yield http


def messages(count: int) -> dict[str, list[dict[str, str]]]:
    return {"messages": [{"role": "user", "content": f"m{i}"} for i in range(count)]}


@on_sqlite
async def test_request_bodies_are_bounded(alice: httpx.AsyncClient) -> None:
    big = {"metadata": {"blob": "x" * 5000}}
    declared = await alice.post("/threads", json=big)
    assert declared.status_code == 413
    assert declared.json() == {"detail": "Request body too large: at most 4096 bytes."}

    async def chunks() -> AsyncIterator[bytes]:
        """A body without Content-Length, sent in parts."""
        yield b'{"metadata": {"blob": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}}'

    streamed = await alice.post(
        "/threads", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413 and "too large" in streamed.json()["detail"]
    assert (await alice.post("/threads", json={"metadata": {"blob": "x" * 3000}})).is_success
    assert (await alice.post("/threads/count", json={})).json() == 1


@on_sqlite
async def test_messages_per_request_are_bounded(alice: httpx.AsyncClient) -> None:
    thread_id = (await alice.post("/threads", json={})).json()["thread_id"]
    too_many = await alice.post(
        f"/threads/{thread_id}/runs", json={"assistant_id": "echo", "input": messages(4)}
    )
    assert too_many.status_code == 413
    assert too_many.json()["detail"] == "input.messages has 4 messages; at most 3 per request."
    update = await alice.post(
        f"/threads/{thread_id}/runs",
        json={"assistant_id": "echo", "command": {"update": messages(4)}},
    )
    assert update.status_code == 413 and "command.update.messages" in update.json()["detail"]
    state = await alice.post(f"/threads/{thread_id}/state", json={"values": messages(4)})
    assert state.status_code == 413 and "values.messages" in state.json()["detail"]
    fine = await alice.post(
        f"/threads/{thread_id}/runs", json={"assistant_id": "echo", "input": messages(3)}
    )
    assert fine.is_success


@on_sqlite
async def test_queued_chat_turns_are_bounded_too(
    alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    """A turn on a thread of one's own queues in one statement on PostgreSQL, which
    checks the same limit."""
    run = {"assistant_id": "echo", "input": messages(1)}

    async def turn(client: httpx.AsyncClient) -> httpx.Response:
        thread_id = (await client.post("/threads", json={})).json()["thread_id"]
        return await client.post(f"/threads/{thread_id}/runs", json=run)

    for _ in range(2):
        assert (await turn(alice)).is_success
    refused = await turn(alice)
    assert refused.status_code == 429
    assert "queued runs" in refused.json()["detail"]
    assert (await turn(bob)).is_success


async def test_queued_runs_per_user_are_bounded(
    alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    run = {"assistant_id": "echo", "input": messages(1)}
    for _ in range(2):
        assert (await alice.post("/runs", json=run)).is_success
    refused = await alice.post("/runs", json=run)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) > 0
    assert "queued runs" in refused.json()["detail"]
    assert (await alice.post("/runs/batch", json=[run])).status_code == 429
    # Bob's queue is his own.
    assert (await bob.post("/runs", json=run)).is_success
    # Cancelled runs leave the queue.
    assert (await alice.post("/runs/cancel", json={"status": "pending"})).status_code == 204
    assert (await alice.post("/runs", json=run)).is_success


@on_sqlite
async def test_open_streams_per_user_are_bounded(
    alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    thread_id = (await alice.post("/threads", json={})).json()["thread_id"]
    bobs_thread = (await bob.post("/threads", json={})).json()["thread_id"]
    async with AsyncExitStack() as streams:
        for _ in range(2):
            opened = await streams.enter_async_context(
                alice.stream("GET", f"/threads/{thread_id}/stream")
            )
            assert opened.status_code == 200
        refused = await alice.get(f"/threads/{thread_id}/stream")
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) > 0
        assert "open streams" in refused.json()["detail"]
        # A stream that starts a run is refused before the run is made.
        started = await alice.post(
            f"/threads/{thread_id}/runs/stream", json={"assistant_id": "echo"}
        )
        assert started.status_code == 429
        assert (await alice.get(f"/threads/{thread_id}/runs")).json() == []
        async with bob.stream("GET", f"/threads/{bobs_thread}/stream") as his:
            assert his.status_code == 200

    # Closed streams give their slots back.
    async def opens() -> bool:
        async with alice.stream("GET", f"/threads/{thread_id}/stream") as again:
            return again.status_code == 200

    await eventually(opens, "the closed streams' slots to come back")
