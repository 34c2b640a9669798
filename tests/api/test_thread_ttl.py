"""A thread's time to live (`ttl` on create and PATCH, as langgraph-sdk sends it): shown
with `include=ttl`; once a thread has not changed for its minutes, the sweep deletes it,
or prunes it to its latest turn and counts again; a thread that changed since is looked
at again later. On SQLite and PostgreSQL; rows are made old in the database rather than
waited for."""

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

from app.config import Settings
from app.db.models import ThreadRow, ThreadTTLRow
from app.main import create_app
from tests.api.conftest import ServeApp
from tests.api.graphs import GRAPHS
from tests.helpers import database_execute, eventually, said

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def make_old(database_url: str, thread_id: str, *, changed: bool) -> None:
    """The thread's look is due; unless `changed`, its last change was long ago too (set
    first, so that the sweep never sees the look due on a thread changed lately)."""
    if not changed:
        await database_execute(
            database_url,
            sa.update(ThreadRow)
            .where(ThreadRow.thread_id == thread_id)
            .values(updated_at=LONG_AGO),
        )
    await database_execute(
        database_url,
        sa.update(ThreadTTLRow)
        .where(ThreadTTLRow.thread_id == thread_id)
        .values(expires_at=LONG_AGO),
    )


async def test_threads_go_when_their_time_to_live_runs_out(
    serve_app: ServeApp, database_url: str
) -> None:
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), ttl_sweep_s=0.05)
    client = get_client(url=serve_app(create_app(settings)))

    doomed = await client.threads.create(ttl=60)
    shown = await client.threads.get(doomed["thread_id"], include=["ttl"])
    assert shown["ttl"] == {
        "strategy": "delete",
        "ttl_minutes": 60.0,
        "expires_at": shown["ttl"]["expires_at"],
    }
    assert at(shown["ttl"]["expires_at"]) == at(doomed["updated_at"]) + timedelta(minutes=60)
    await client.runs.wait(doomed["thread_id"], "echo", input=said("hi"))

    kept = await client.threads.create(ttl={"ttl": 30, "strategy": "keep_latest"})
    for text in ("one", "two"):
        last = await client.runs.wait(kept["thread_id"], "echo", input=said(text))
    turns = await client.threads.get_history(kept["thread_id"], limit=100)

    busy_elsewhere = await client.threads.create(ttl=1)
    moved = await client.threads.update(busy_elsewhere["thread_id"], metadata={"a": 1}, ttl=120)
    later = (await client.threads.get(moved["thread_id"], include=["ttl"]))["ttl"]
    assert later["ttl_minutes"] == 120.0
    assert at(later["expires_at"]) == at(moved["updated_at"]) + timedelta(minutes=120)

    plain = await client.threads.create()
    assert (await client.threads.get(plain["thread_id"], include=["ttl"]))["ttl"] is None

    await make_old(database_url, doomed["thread_id"], changed=False)
    await make_old(database_url, kept["thread_id"], changed=False)
    await make_old(database_url, busy_elsewhere["thread_id"], changed=True)

    async def gone() -> bool:
        try:
            await client.threads.get(doomed["thread_id"])
        except NotFoundError:
            return True
        return False

    await eventually(gone, "the expired thread to be deleted")
    with pytest.raises(NotFoundError):
        await client.threads.get_history(doomed["thread_id"])

    async def pruned() -> dict | None:
        thread = await client.threads.get(kept["thread_id"], include=["ttl"])
        return thread if at(thread["ttl"]["expires_at"]) > LONG_AGO else None

    still = await eventually(pruned, "the keep_latest thread to be pruned and counted again")
    assert still["values"] == last
    assert at(still["ttl"]["expires_at"]) > datetime.now(UTC) + timedelta(minutes=29)
    assert len(await client.threads.get_history(kept["thread_id"], limit=100)) < len(turns)

    async def looked_again() -> dict | None:
        thread = await client.threads.get(moved["thread_id"], include=["ttl"])
        return thread["ttl"] if at(thread["ttl"]["expires_at"]) > LONG_AGO else None

    again = await eventually(looked_again, "a changed thread to be looked at again later")
    assert at(again["expires_at"]) == at(moved["updated_at"]) + timedelta(minutes=120)
    assert (await client.threads.get(plain["thread_id"]))["thread_id"] == plain["thread_id"]


async def test_a_bad_time_to_live_is_refused_naming_it(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        for ttl in (
            0,
            -5,
            "soon",
            "5",
            True,
            {"ttl": 5, "strategy": "archive"},
            {"ttl": 1e12},
            {"minutes": 5},
        ):
            body = {"ttl": ttl if isinstance(ttl, dict) else {"ttl": ttl}}
            refused = await http.post("/threads", json=body)
            assert refused.status_code == 422 and refused.json()["detail"][0]["loc"][:2] == [
                "body",
                "ttl",
            ], (ttl, refused.text)
        bare = await http.post("/threads", json={"ttl": 30})
        shown = await http.get(f"/threads/{bare.json()['thread_id']}", params={"include": "ttl"})
        assert (shown.json()["ttl"]["ttl_minutes"], shown.json()["ttl"]["strategy"]) == (
            30.0,
            "delete",
        )
        thread = (await http.post("/threads", json={})).json()
        bad = await http.patch(
            f"/threads/{thread['thread_id']}", json={"metadata": {}, "ttl": {"ttl": 0}}
        )
        assert bad.status_code == 422
        include = await http.get(f"/threads/{thread['thread_id']}", params={"include": "color"})
        assert include.status_code == 422 and "include" in include.text


async def test_a_patch_may_set_the_time_to_live_alone(server: str) -> None:
    """LangGraph's JS client sends `{"ttl": ...}` alone to change a thread's time to live;
    a patch without metadata leaves the metadata as it was."""
    async with httpx.AsyncClient(base_url=server) as http:
        thread = (await http.post("/threads", json={"metadata": {"a": 1}})).json()
        url = f"/threads/{thread['thread_id']}"
        patched = await http.patch(url, json={"ttl": {"ttl": 45}})
        assert patched.status_code == 200, patched.text
        assert (await http.patch(url, json={})).status_code == 200
        shown = (await http.get(url, params={"include": "ttl"})).json()
        assert shown["metadata"] == {"a": 1} and shown["ttl"]["ttl_minutes"] == 45.0


@pytest.mark.slow
async def test_a_run_admitted_as_the_time_to_live_runs_out_is_never_deleted_under_it(
    serve_app: ServeApp, database_url: str
) -> None:
    """Threads whose time to live (1.2 s) runs out about when a run is made on them: each
    run either finds its thread gone (404) or runs to its end on a thread that stays.
    The sweep read a thread idle, then deleted it under a run admitted meanwhile (the
    run ended 409, rolled back)."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), ttl_sweep_s=0.02)
    url = serve_app(create_app(settings))
    spread = random.Random(7)
    limits = asyncio.Semaphore(16)

    async def one(http: httpx.AsyncClient, delay: float) -> int:
        async with limits:
            made = await http.post("/threads", json={"ttl": {"ttl": 0.02, "strategy": "delete"}})
            thread_id = made.json()["thread_id"]
            await asyncio.sleep(delay)  # the input: runs spread over the thread's expiry
            body = {"assistant_id": "echo", "input": said("hi")}
            answer = await http.post(f"/threads/{thread_id}/runs/wait", json=body)
            return answer.status_code

    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        delays = [spread.uniform(1.0, 1.4) for _ in range(96)]
        codes = await asyncio.gather(*(one(http, delay) for delay in delays))
    assert set(codes) <= {200, 404}, sorted(codes)
