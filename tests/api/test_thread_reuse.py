"""A deleted thread's id makes a new thread, however the thread went (delete, a failed
`supersteps` create, a prune) and however the new one is made (POST /threads, with
`supersteps`, a run with `if_not_exists: create`); a run of the deleted thread that is
still going never writes into the new one. On SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from app import retention
from app.config import Settings
from app.main import create_app
from engine.checkpoint.sql.saver import SQLSaver
from tests.api import held_graph
from tests.api.graphs import GRAPHS
from tests.api.held_graph import held_thread
from tests.helpers import ServeApp, eventually, new_id, new_thread, said


async def assert_fresh_and_usable(server: str, thread_id: str) -> None:
    """The thread has no history of the deleted one, and runs and updates write in it."""
    client = get_client(url=server)
    assert await client.threads.get_history(thread_id) == []
    done = await client.runs.wait(thread_id, "echo", input=said("again"))
    assert "__error__" not in done, done
    assert [m["content"] for m in done["messages"]] == ["again", "You said: again"]
    written = await client.threads.update_state(thread_id, said("x"))
    assert written["checkpoint"]["thread_id"] == thread_id
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"
    assert [m["content"] for m in thread["values"]["messages"]][-1] == "x"


async def used_and_deleted(server: str) -> str:
    """A thread that had a turn, deleted."""
    client = get_client(url=server)
    thread_id = new_id()
    await client.threads.create(thread_id=thread_id)
    await client.runs.wait(thread_id, "echo", input=said("hi"))
    await client.threads.delete(thread_id)
    return thread_id


async def test_a_deleted_threads_id_makes_a_new_thread(server: str) -> None:
    thread_id = await used_and_deleted(server)
    made = await get_client(url=server).threads.create(thread_id=thread_id)
    assert made["thread_id"] == thread_id and made["values"] is None
    await assert_fresh_and_usable(server, thread_id)


async def test_a_run_that_creates_its_thread_reuses_a_deleted_id(server: str) -> None:
    thread_id = await used_and_deleted(server)
    client = get_client(url=server)
    done = await client.runs.wait(thread_id, "echo", input=said("new"), if_not_exists="create")
    assert "__error__" not in done, done
    assert [m["content"] for m in done["messages"]] == ["new", "You said: new"]
    assert (await client.threads.get(thread_id))["status"] == "idle"


async def test_supersteps_reuse_a_deleted_id(server: str) -> None:
    """After a `supersteps` create that failed (its thread removed), and after a delete."""
    async with httpx.AsyncClient(base_url=server) as api:

        async def create(values: Any) -> httpx.Response:
            step = {"updates": [{"values": values, "as_node": "talk"}]}
            body = {"thread_id": thread_id, "metadata": {"graph_id": "echo"}, "supersteps": [step]}
            return await api.post("/threads", json=body)

        thread_id = new_id()
        refused = await create({"messages": 3})
        assert refused.status_code == 422, refused.text
        made = await create({"messages": [{"role": "ai", "content": "first"}]})
        assert made.status_code == 200, made.text
        assert [m["content"] for m in made.json()["values"]["messages"]] == ["first"]
        assert (await api.delete(f"/threads/{thread_id}")).status_code == 204
        again = await create({"messages": [{"role": "ai", "content": "second"}]})
        assert again.status_code == 200, again.text
        assert [m["content"] for m in again.json()["values"]["messages"]] == ["second"]
        assert (await api.delete(f"/threads/{thread_id}")).status_code == 204
    await get_client(url=server).threads.create(thread_id=thread_id)
    await assert_fresh_and_usable(server, thread_id)


async def test_a_pruned_threads_id_makes_a_new_thread(server: str) -> None:
    client = get_client(url=server)
    thread_id = new_id()
    await client.threads.create(thread_id=thread_id, ttl={"ttl": 60, "strategy": "delete"})
    await client.runs.wait(thread_id, "echo", input=said("hi"))
    assert await client.threads.prune([thread_id], strategy="delete") == {"pruned_count": 1}
    await client.threads.create(thread_id=thread_id, ttl={"ttl": 60, "strategy": "delete"})
    await assert_fresh_and_usable(server, thread_id)


async def test_a_run_of_the_deleted_thread_never_writes_into_the_new_one(
    serve_app: ServeApp, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose cancel does not reach it in time (its worker is slow to hear, say) goes
    on after its thread was deleted and a new one made under the id: its step is refused
    (the run lost its row with the thread), and the new thread is as it was made."""
    app, client, thread_id = await held_thread(serve_app, database_url)
    pool = app.state.services.runs.pool
    monkeypatch.setattr(pool, "cancel_local", lambda run_id: False)  # the cancel is lost
    try:
        old = await client.runs.create(thread_id, "held", input={"log": ["old"]})
        await eventually(lambda: held_graph.WAITING.is_set(), "the old run to reach its node")
        await client.threads.delete(thread_id)
        await client.threads.create(thread_id=thread_id)
        await client.runs.wait(thread_id, "echo", input=said("new"))
    finally:
        held_graph.GATE.set()
    await eventually(lambda: old["run_id"] not in pool.running, "the old run to end on its refusal")
    history = await client.threads.get_history(thread_id)
    assert history and all(s["metadata"].get("run_id") != old["run_id"] for s in history)
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"
    assert [m["content"] for m in thread["values"]["messages"]] == ["new", "You said: new"]


@pytest.mark.parametrize("cancel", ["reaches it", "is lost", "races the delete"])
async def test_clients_of_a_run_hear_its_end_when_its_thread_is_deleted(
    serve_app: ServeApp,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    cancel: str,
) -> None:
    """A thread deleted while its run executes: whoever waits for the run (`join`,
    `runs/wait`) is answered, whether the delete's cancel stopped it (its checkpoints
    going as the stopped step is marked failed, too), or it went on to its end; nobody
    waits forever, and the server warns of nothing (a delete is no fault)."""
    app, client, thread_id = await held_thread(serve_app, database_url)
    pool = app.state.services.runs.pool
    if cancel == "is lost":
        monkeypatch.setattr(pool, "cancel_local", lambda run_id: False)
    if cancel == "races the delete":
        # The delete's removal of the checkpoints comes between the stopped run's read
        # of its state and its mark of the stopped step (as under load).
        saver = app.state.services.runs.executor.saver
        mark = saver.aput_writes

        async def after_the_checkpoints_went(config: Any, *args: Any) -> None:
            await saver.adelete_thread(config["configurable"]["thread_id"])
            await mark(config, *args)

        monkeypatch.setattr(saver, "aput_writes", after_the_checkpoints_went)
    try:
        run = await client.runs.create(thread_id, "held", input={"log": ["old"]})
        await eventually(lambda: held_graph.WAITING.is_set(), "the run to reach its node")
        joined = asyncio.create_task(client.runs.join(thread_id, run["run_id"]))
        awaited = app.state.services.runs.results.awaited
        await eventually(lambda: run["run_id"] in awaited, "the join to wait")
        await client.threads.delete(thread_id)
    finally:
        held_graph.GATE.set()
    try:
        # Its end recorded before the thread went: what it saved, or its failure to
        # read back a state already gone.
        ended = await asyncio.wait_for(joined, 30)
        assert ended == {"log": ["old"]} or "__error__" in ended, ended
    except httpx.HTTPStatusError as refused:  # its row went with the thread first
        assert refused.response.status_code == 409
    await eventually(lambda: run["run_id"] not in pool.running, "the run to end")
    assert await client.threads.search(ids=[thread_id]) == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_delete_cut_short_by_a_crash_is_finished_after_a_restart(
    serve_app: ServeApp, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between a delete's two halves (the checkpoints went, the row stayed) left
    a thread that read as empty and took runs that failed: a process started after it
    finishes the delete, and leaves every other thread be."""
    monkeypatch.setattr(retention, "FINISH_DELETES_AFTER_S", 0.1)
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS))
    client = get_client(url=serve_app(create_app(settings)))
    cut, kept = await new_thread(client), await new_thread(client)
    for thread_id in (cut, kept):
        await client.runs.wait(thread_id, "echo", input=said("hello"))
    saver = SQLSaver.from_url(database_url)
    try:
        await saver.adelete_thread(cut)  # the delete's first half; then the crash
    finally:
        await saver.aclose()
    assert (await client.threads.get(cut))["thread_id"] == cut

    restarted = get_client(url=serve_app(create_app(settings)))

    async def finished() -> bool:
        return [t["thread_id"] for t in await restarted.threads.search()] == [kept]

    await eventually(finished, "the cut delete to be finished")
    assert (await restarted.threads.get_state(kept))["values"]["messages"]
