"""Threads through the official client (raw HTTP where it has no method), on SQLite and on
PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from app.config import Settings
from app.main import create_app
from engine.checkpoint.sql import saver as saver_module
from tests.api import held_graph
from tests.api.graphs import GRAPHS
from tests.api.held_graph import held_thread
from tests.helpers import ServeApp, eventually, new_thread, said


async def test_create_get_update_search_count(server: str) -> None:
    client = get_client(url=server)
    thread_id = str(uuid.uuid4())
    made = await client.threads.create(
        thread_id=thread_id, metadata={"user": {"id": "u1", "plan": "pro"}, "tags": ["x", "y"]}
    )
    assert made["thread_id"] == thread_id and made["status"] == "idle"
    assert made["values"] is None and made["interrupts"] == {}
    assert await client.threads.get(thread_id) == made
    assert await client.threads.create(thread_id=thread_id, if_exists="do_nothing") == made
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=thread_id)
    changed = await client.threads.update(thread_id, metadata={"title": "Hi"})
    assert changed["metadata"] == {**made["metadata"], "title": "Hi"}
    assert changed["updated_at"] > made["updated_at"]

    asked = (await client.threads.create(metadata={"user": {"id": "u2"}}))["thread_id"]
    await client.runs.wait(asked, "asker", input={"question": "name?"})
    echoed = await new_thread(client)
    await client.runs.wait(echoed, "echo", input=said("hello"))

    def ids(found: list[dict[str, object]]) -> list[object]:
        return [t["thread_id"] for t in found]

    assert ids(await client.threads.search(metadata={"user": {"id": "u1"}})) == [thread_id]
    assert ids(await client.threads.search(metadata={"tags": ["y"]})) == [thread_id]
    assert ids(await client.threads.search(metadata={"graph_id": "asker"})) == [asked]
    assert ids(await client.threads.search(status="interrupted")) == [asked]
    assert ids(await client.threads.search(values={"question": "name?"})) == [asked]
    matching = await client.threads.search(
        values={"messages": [{"content": "hello", "type": "human"}]}
    )
    assert ids(matching) == [echoed]
    assert ids(await client.threads.search()) == [echoed, asked, thread_id]
    oldest = await client.threads.search(sort_by="created_at", sort_order="asc", limit=2)
    assert ids(oldest) == [thread_id, asked]
    assert ids(await client.threads.search(ids=[asked, echoed], offset=1)) == [asked]
    assert await client.threads.count() == 3
    assert await client.threads.count(status="idle") == 2
    assert await client.threads.count(metadata={"user": {"plan": "pro"}}) == 1
    picked = await client.threads.search(
        select=["thread_id", "status"], extract={"last": "values.messages[-1].content"}
    )
    assert picked[0] == {
        "thread_id": echoed,
        "status": "idle",
        "extracted": {"last": "You said: hello"},
    }
    async with httpx.AsyncClient(base_url=server) as http:
        first = await http.post("/threads/search", json={"limit": 2})
        assert first.headers["X-Pagination-Total"] == "3"
        assert first.headers["X-Pagination-Next"] == "2"
        last = await http.post("/threads/search", json={"limit": 2, "offset": 2})
        assert "X-Pagination-Next" not in last.headers
        minimal = await http.patch(
            f"/threads/{thread_id}",
            json={"metadata": {"more": 1}},
            headers={"Prefer": "return=minimal"},
        )
        assert minimal.status_code == 204
    # By default the thread changed last comes first, as in a chat's list: the one just
    # continued goes to the top (LangGraph's server sorts so; sorting by `created_at`
    # left it where it was).
    await client.runs.wait(asked, "asker", command={"resume": "bob"})
    assert ids(await client.threads.search()) == [asked, thread_id, echoed]


async def test_copy_delete_prune(server: str) -> None:
    client = get_client(url=server)
    thread_id = (await client.threads.create(metadata={"kind": "chat"}))["thread_id"]
    await client.runs.wait(thread_id, "echo", input=said("one"))
    await client.runs.wait(thread_id, "echo", input=said("two"))
    copy = await client.threads.copy(thread_id)
    assert copy["thread_id"] != thread_id
    assert copy["metadata"] == (await client.threads.get(thread_id))["metadata"]
    assert copy["values"] == (await client.threads.get(thread_id))["values"]
    history = await client.threads.get_history(thread_id, limit=100)
    copied = await client.threads.get_history(copy["thread_id"], limit=100)
    assert [s["checkpoint"]["checkpoint_id"] for s in copied] == [
        s["checkpoint"]["checkpoint_id"] for s in history
    ]
    assert {s["checkpoint"]["thread_id"] for s in copied} == {copy["thread_id"]}

    assert await client.threads.prune([copy["thread_id"]], strategy="keep_latest") == {
        "pruned_count": 1
    }
    kept = await client.threads.get_history(copy["thread_id"], limit=100)
    assert len(kept) < len(copied)
    assert (await client.threads.get_state(copy["thread_id"]))["values"] == copy["values"]

    await client.threads.delete(thread_id)
    with pytest.raises(NotFoundError):
        await client.threads.get(thread_id)
    with pytest.raises(NotFoundError):
        await client.threads.get_history(thread_id)
    pruned = await client.threads.prune([copy["thread_id"], str(uuid.uuid4())])
    assert pruned == {"pruned_count": 1}
    assert await client.threads.count() == 0


async def test_a_copy_cut_short_leaves_no_thread(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy stopped as it writes the checkpoints (as by a crash) leaves no thread: its
    row is written in the same transaction, not a thread without them before it."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "echo", input=said("hello"))

    def dies(*_: Any) -> None:
        raise RuntimeError("the process stops here")

    monkeypatch.setattr(saver_module, "_renamed", dies)
    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.post(f"/threads/{thread_id}/copy")).status_code == 500
    assert [thread["thread_id"] for thread in await client.threads.search()] == [thread_id]
    monkeypatch.undo()
    copy = await client.threads.copy(thread_id)
    source = await client.threads.get(thread_id)
    assert (copy["values"], copy["status"]) == (source["values"], "idle")


async def test_delete_cancels_a_running_run(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    run = await client.runs.create(thread_id, "slow", input={"delay": 5})
    await client.threads.delete(thread_id)
    with pytest.raises(NotFoundError):
        await client.runs.get(thread_id, run["run_id"])
    assert await client.threads.search() == []


async def test_bad_requests(server: str) -> None:
    client = get_client(url=server)
    unknown = str(uuid.uuid4())
    for call in (
        client.threads.get(unknown),
        client.threads.update(unknown, metadata={}),
        client.threads.delete(unknown),
        client.threads.copy(unknown),
    ):
        with pytest.raises(NotFoundError):
            await call
    for bad in (
        client.threads.get("nope"),
        client.threads.create(thread_id="nope"),
        client.threads.search(ids=["nope"]),
        client.threads.prune(["nope"]),
        client.threads.create(ttl=0),
    ):
        with pytest.raises(UnprocessableEntityError):
            await bad
    async with httpx.AsyncClient(base_url=server) as http:
        for method, path in (
            ("GET", "/threads/nope"),
            ("DELETE", "/threads/nope"),
            ("POST", "/threads/nope/copy"),
        ):
            response = await http.request(method, path)
            assert response.status_code == 422 and "thread_id" in response.json()["detail"]
        for extract, problem in (
            ({"x": "values..a"}, "is not a path"),
            ({"x": "created_at"}, "does not start with one of"),
            ({"status": "values.a"}, "is not a name"),
            ({"a-b": "values.a"}, "is not a name"),
        ):
            bad_path = await http.post("/threads/search", json={"extract": extract})
            assert bad_path.status_code == 422 and problem in bad_path.text


async def test_a_copy_or_state_update_racing_a_delete_is_whole_or_404(server: str) -> None:
    """A copy made as its thread is deleted is a whole copy or a 404 (it was a 200 with an
    empty thread, copied after the checkpoints went); state updates at that moment are
    a 200, 404 or 409 (busy), never a 500 (the head they moved was gone)."""
    client = get_client(url=server)
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        for _ in range(8):
            thread_id = await new_thread(client)
            await client.runs.wait(thread_id, "echo", input=said("hi"))
            t = f"/threads/{thread_id}"
            update = {"values": {"messages": [{"role": "user", "content": "u"}]}}
            answers = await asyncio.gather(
                http.post(f"{t}/copy"),
                *(http.post(f"{t}/state", json=update) for _ in range(3)),
                http.delete(t),
                http.post(f"{t}/copy"),
            )
            copies, updates = [answers[0], answers[-1]], answers[1:4]
            assert {a.status_code for a in updates} <= {200, 404, 409}, [a.text for a in updates]
            for copy in copies:
                assert copy.status_code in (200, 404), copy.text
                if copy.status_code == 200:
                    values = (await http.get(f"/threads/{copy.json()['thread_id']}/state")).json()
                    assert [m["content"] for m in values["values"]["messages"]][:2] == [
                        "hi",
                        "You said: hi",
                    ]


async def test_a_thread_with_a_run_on_it_is_not_pruned_to_its_latest_turn(
    serve_app: ServeApp, database_url: str
) -> None:
    """The latest turn of a thread with a run on it is the run's unfinished one: pruned
    to it, the thread kept only that, and rolling the run back then left nothing. Such a
    prune is a 409, and the thread keeps every turn."""
    _, client, thread_id = await held_thread(serve_app, database_url)
    held_graph.GATE.set()
    await client.runs.wait(thread_id, "held", input={"log": ["first"]})
    held_graph.GATE.clear()
    held_graph.WAITING.clear()
    try:
        run = await client.runs.create(thread_id, "held", input={"log": ["second"]})
        await eventually(held_graph.WAITING.is_set, "the run to reach its node")
        with pytest.raises(ConflictError, match="busy"):
            await client.threads.prune([thread_id], strategy="keep_latest")
        await client.runs.cancel(thread_id, run["run_id"], action="rollback")
    finally:
        held_graph.GATE.set()
    state = await eventually(
        lambda: _idle_state(client, thread_id), "the rolled-back run to leave the thread"
    )
    assert state["values"] == {"log": ["first", "held"]}
    assert await client.threads.prune([thread_id], strategy="keep_latest") == {"pruned_count": 1}
    assert (await client.threads.get_state(thread_id))["values"] == state["values"]


async def _idle_state(client: Any, thread_id: str) -> dict[str, Any] | None:
    if (await client.threads.get(thread_id))["status"] != "idle":
        return None
    return dict(await client.threads.get_state(thread_id))


async def test_a_run_stopped_before_it_started_answers_its_threads_values(
    serve_app: ServeApp, database_url: str
) -> None:
    """Waiting on a run cancelled while it was still pending answered `null`: it has no
    values of its own, and its waiters get its thread's, as from LangGraph's server."""
    _, client, thread_id = await held_thread(serve_app, database_url)
    held_graph.GATE.set()
    first = await client.runs.wait(thread_id, "held", input={"log": ["first"]})
    held_graph.GATE.clear()
    held_graph.WAITING.clear()
    try:
        await client.runs.create(thread_id, "held", input={"log": ["second"]})
        await eventually(held_graph.WAITING.is_set, "the run to reach its node")
        queued = await client.runs.create(thread_id, "held", input={"log": ["third"]})
        waiting = asyncio.create_task(client.runs.join(thread_id, queued["run_id"]))
        await client.runs.cancel(thread_id, queued["run_id"])
        assert await asyncio.wait_for(waiting, 30) == first
        assert await client.runs.join(thread_id, queued["run_id"]) == first
    finally:
        held_graph.GATE.set()


async def test_metadata_graph_id_names_a_served_graph(server: str) -> None:
    """It names the graph that reads the thread's state: one not served here is refused
    before anything is written, not saved and then unreadable."""
    client = get_client(url=server)
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "echo", input=said("hi"))
    before = await client.threads.get(thread["thread_id"])
    for refused in (
        client.threads.update(thread["thread_id"], metadata={"graph_id": "nope"}),
        client.threads.create(metadata={"graph_id": "nope"}),
        client.threads.create(metadata={"graph_id": 7}),
    ):
        with pytest.raises(UnprocessableEntityError, match="graph_id"):
            await refused
    assert await client.threads.get(thread["thread_id"]) == before
    assert len(await client.threads.search()) == 1


async def test_a_thread_whose_graph_is_no_longer_served(
    serve_app: ServeApp, database_url: str
) -> None:
    """A server started without the graph a thread ran (a project changed) lists it,
    reads and copies it without its values, and refuses its state by naming the graph."""
    with_echo = get_client(url=serve_app(create_app(_settings(database_url, GRAPHS))))
    thread = await with_echo.threads.create()
    await with_echo.runs.wait(thread["thread_id"], "echo", input=said("hi"))
    client = get_client(
        url=serve_app(create_app(_settings(database_url, {"asker": GRAPHS["asker"]})))
    )
    shown = await client.threads.get(thread["thread_id"])
    assert (shown["thread_id"], shown["values"]) == (thread["thread_id"], None)
    assert [t["thread_id"] for t in await client.threads.search()] == [thread["thread_id"]]
    copied = await client.threads.copy(thread["thread_id"])
    assert (await with_echo.threads.get(copied["thread_id"]))["values"]["messages"]
    with pytest.raises(NotFoundError, match="'echo' is not served"):
        await client.threads.get_state(thread["thread_id"])


def _settings(database_url: str, graphs: dict[str, str]) -> Settings:
    return Settings(database_url=database_url, graphs=json.dumps(graphs))
