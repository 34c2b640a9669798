"""A thread's state and history through the official client, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from sqlalchemy import func, select

from app.services import state as state_service
from engine.checkpoint.sql.models import save_table, thread_table
from tests.helpers import database_rows, new_thread, said


async def test_a_history_page_ends_past_its_text_budget(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of a long thread's history is bounded by the JSON its values take (a page
    of 1,000 versions of 3,000 messages was half a gigabyte, built while the server
    served nothing else): it ends at the version that goes past the budget, and the
    client pages on with `before` through the same versions."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    for text in ("one", "two", "three"):
        await client.runs.wait(thread_id, "echo", input=said(text))
    whole = await client.threads.get_history(thread_id, limit=100)
    sizes = [len(json.dumps(v["values"], separators=(",", ":"))) for v in whole]
    budget = sizes[0] + sizes[1] - 1
    monkeypatch.setattr(state_service, "HISTORY_PAGE_TEXT", budget)
    expected, taken = [0], 0  # where each page starts: after the version that went past
    for at, size in enumerate(sizes):
        taken += size
        if taken > budget:
            expected.append(at + 1)
            taken = 0
    pages: list[list[dict[str, Any]]] = []
    before = None
    while page := await client.threads.get_history(thread_id, limit=100, before=before):
        pages.append(page)
        before = page[-1]["checkpoint"]
    assert [len(page) for page in pages] == [
        b - a for a, b in zip(expected, [*expected[1:], len(whole)], strict=False) if b > a
    ]
    assert [v for page in pages for v in page] == whole and len(whole) == 9
    # Values not selected are not counted: the run view's page of bookkeeping is whole.
    async with httpx.AsyncClient(base_url=server) as http:
        found = await http.post(
            f"/threads/{thread_id}/history", json={"limit": 100, "select": ["checkpoint"]}
        )
    assert found.json() == [{"checkpoint": v["checkpoint"]} for v in whole]


async def test_state_and_history_after_turns(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    empty = await client.threads.get_state(thread_id)
    assert empty["values"] == {} and empty["next"] == [] and empty["checkpoint"] is None
    assert await client.threads.get_history(thread_id) == []
    await client.runs.wait(thread_id, "echo", input=said("one"))
    await client.runs.wait(thread_id, "echo", input=said("two"))

    state = await client.threads.get_state(thread_id)
    assert [m["content"] for m in state["values"]["messages"]] == [
        "one",
        "You said: one",
        "two",
        "You said: two",
    ]
    assert state["next"] == [] and state["tasks"] == [] and state["interrupts"] == []
    assert state["checkpoint"]["thread_id"] == thread_id
    assert state["checkpoint"]["checkpoint_ns"] == ""
    assert state["metadata"]["source"] == "loop" and state["metadata"]["graph_id"] == "echo"
    assert state["created_at"]

    history = await client.threads.get_history(thread_id, limit=100)
    assert len(history) == 6  # input, before talk, after talk: per turn
    assert history[0]["checkpoint"] == state["checkpoint"]
    ids = [s["checkpoint"]["checkpoint_id"] for s in history]
    assert ids == sorted(ids, reverse=True)
    assert [s["parent_checkpoint"] for s in history[:-1]] == [s["checkpoint"] for s in history[1:]]
    assert history[-1]["parent_checkpoint"] is None
    assert len(await client.threads.get_history(thread_id)) == 6  # default limit 10
    assert len(await client.threads.get_history(thread_id, limit=2)) == 2
    older = await client.threads.get_history(thread_id, before=ids[1])
    assert [s["checkpoint"]["checkpoint_id"] for s in older] == ids[2:]
    also_older = await client.threads.get_history(thread_id, before=history[1]["checkpoint"])
    assert also_older == older
    inputs = await client.threads.get_history(thread_id, metadata={"source": "input"})
    assert [s["metadata"]["step"] for s in inputs] == [2, -1]
    assert inputs[0]["next"] == ["__start__"]

    due = history[1]
    assert due["next"] == ["talk"] and due["tasks"][0]["name"] == "talk"
    assert due["tasks"][0]["result"]["messages"][0]["content"] == "You said: two"
    assert await client.threads.get_state(thread_id, checkpoint_id=ids[1]) == due
    assert await client.threads.get_state(thread_id, checkpoint=due["checkpoint"]) == due
    picked = await client.threads.get_state(thread_id, select=["next", "values.messages"])
    assert picked == {"next": [], "values": {"messages": state["values"]["messages"]}}

    async with httpx.AsyncClient(base_url=server) as http:
        got = await http.get(f"/threads/{thread_id}/history", params={"limit": 1, "before": ids[0]})
        assert [s["checkpoint"]["checkpoint_id"] for s in got.json()] == [ids[1]]
        by_config = await http.post(
            f"/threads/{thread_id}/history",
            json={"limit": 1, "before": {"configurable": {"checkpoint_id": ids[0]}}},
        )
        assert by_config.json() == got.json()
        malformed = await http.get(f"/threads/{thread_id}/state/not-a-checkpoint")
        assert malformed.status_code == 422 and "checkpoint_id" in malformed.json()["detail"]
        bad_select = await http.get(f"/threads/{thread_id}/state", params={"select": "colour"})
        assert bad_select.status_code == 422
    with pytest.raises(NotFoundError):
        await client.threads.get_state(thread_id, checkpoint_id=str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        await client.threads.get_state(str(uuid.uuid4()))


async def test_a_new_thread_has_no_version_but_the_empty_one(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    assert (await client.threads.get_state(thread_id))["values"] == {}
    with pytest.raises(NotFoundError, match="not found in thread"):
        await client.threads.get_state(thread_id, checkpoint_id=str(uuid.uuid4()))
    with pytest.raises(NotFoundError, match="names no subgraph state"):
        await client.threads.get_state(thread_id, checkpoint={"checkpoint_ns": "inner:1"})


async def test_interrupts_and_state_updates(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "asker", input={"question": "name?"})
    thread = await client.threads.get(thread_id)
    state = await client.threads.get_state(thread_id)
    assert thread["status"] == "interrupted" and state["next"] == ["ask"]
    [task] = state["tasks"]
    assert task["interrupts"][0]["value"] == {"question": "name?"}
    assert state["interrupts"] == task["interrupts"]
    assert thread["interrupts"] == {task["id"]: task["interrupts"]}

    written = await client.threads.update_state(thread_id, {"answers": ["by hand"]}, as_node="ask")
    assert written["checkpoint"]["thread_id"] == thread_id
    # Also as LangGraph's server answers (the JS SDK reads `configurable`).
    assert written["configurable"] == written["checkpoint"]
    assert written["checkpoint_id"] == written["checkpoint"]["checkpoint_id"]
    after = await client.threads.get_state(thread_id)
    assert after["checkpoint"] == written["checkpoint"]
    assert after["next"] == ["done"] and after["metadata"]["source"] == "update"
    assert after["parent_checkpoint"] == state["checkpoint"]
    assert after["checkpoint_id"] == after["checkpoint"]["checkpoint_id"]
    assert after["parent_checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    thread = await client.threads.get(thread_id)
    assert thread["values"]["answers"] == ["by hand"] and thread["interrupts"] == {}
    finished = await client.runs.wait(thread_id, "asker", input=None)
    assert finished["answers"] == ["by hand", "done"]

    forked = await client.threads.update_state(
        thread_id, {"question": "age?"}, checkpoint=state["checkpoint"], as_node="__start__"
    )
    fork = await client.threads.get_state(thread_id)
    assert fork["checkpoint"] == forked["checkpoint"]
    assert fork["parent_checkpoint"] == state["checkpoint"]
    assert fork["values"]["question"] == "age?" and fork["next"] == ["ask"]
    history = await client.threads.get_history(thread_id, limit=100)
    children = [s for s in history if s["parent_checkpoint"] == state["checkpoint"]]
    assert len(children) == 2  # the old branch stays
    assert (await client.threads.get(thread_id))["values"] == fork["values"]

    with pytest.raises(UnprocessableEntityError):
        await client.threads.update_state(thread_id, {"answers": ["x"]}, as_node="nope")
    # A key the state does not have (a typo) would change nothing: refused, naming it.
    with pytest.raises(UnprocessableEntityError, match=r"no keys \['answer'\]"):
        await client.threads.update_state(thread_id, {"answer": ["x"]}, as_node="ask")
    with pytest.raises(NotFoundError):
        await client.threads.update_state(thread_id, {}, checkpoint_id=str(uuid.uuid4()))
    with pytest.raises(UnprocessableEntityError):
        await client.threads.update_state(thread_id, {}, checkpoint_id="nope")
    no_graph = await new_thread(client)
    with pytest.raises(ConflictError):
        await client.threads.update_state(no_graph, {"answers": ["x"]})


async def test_update_refused_while_busy(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "slow", input={"delay": 0})
    run = await client.runs.create(thread_id, "slow", input={"delay": 0.3})
    with pytest.raises(ConflictError, match="busy"):
        await client.threads.update_state(thread_id, {"log": ["x"]}, as_node="step2")
    await client.runs.join(thread_id, run["run_id"])
    await client.threads.update_state(thread_id, {"log": ["x"]}, as_node="step2")
    assert (await client.threads.get_state(thread_id))["values"]["log"][-1] == "x"


async def test_subgraph_state(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "nested", input={"question": "deep?"})
    state = await client.threads.get_state(thread_id)
    [task] = state["tasks"]
    assert state["next"] == ["inner"] and task["state"] is None
    where = task["checkpoint"]
    # As LangGraph's server names it: the namespace (its latest version), no more.
    assert list(where) == ["thread_id", "checkpoint_ns"]
    assert where["thread_id"] == thread_id and where["checkpoint_ns"].startswith("inner:")
    deep = await client.threads.get_state(thread_id, subgraphs=True)
    inner = deep["tasks"][0]["state"]
    assert (
        inner["next"] == ["ask"] and inner["checkpoint"]["checkpoint_ns"] == where["checkpoint_ns"]
    )
    assert inner["interrupts"][0]["value"] == {"question": "deep?"}
    assert await client.threads.get_state(thread_id, checkpoint=where) == inner
    inner_history = await client.threads.get_history(thread_id, checkpoint=where, limit=100)
    assert inner_history[0] == inner
    assert {s["checkpoint"]["checkpoint_ns"] for s in inner_history} == {where["checkpoint_ns"]}
    with pytest.raises(NotFoundError):
        await client.threads.get_state(thread_id, checkpoint={**where, "checkpoint_ns": "nope:1"})


async def test_storage_of_a_thread(server: str, database_url: str) -> None:
    """`GET /threads/{id}/storage`: the bytes of the thread's rows, exactly as stored,
    shared out between checkpoints, each channel's values and pending writes."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    async with httpx.AsyncClient(base_url=server) as http:
        empty = (await http.get(f"/threads/{thread_id}/storage")).json()
        assert empty["total_bytes"] == 0 and empty["channel_values"]["by_channel"] == {}
        for text in ("one", "two", "three"):
            await client.runs.wait(thread_id, "echo", input=said(text))
        report = (await http.get(f"/threads/{thread_id}/storage")).json()
        assert (await http.get(f"/threads/{uuid.uuid4()}/storage")).status_code == 404

    saves, threads = save_table.c, thread_table.c
    stored = (
        select(func.sum(func.length(saves.data)))
        .join(thread_table, saves.thread == threads.id)
        .where(threads.thread_id == thread_id)
    )
    [(row_bytes,)] = await database_rows(database_url, stored)
    parts = [report[key]["bytes"] for key in ("checkpoints", "channel_values", "pending_writes")]
    assert report["thread_id"] == thread_id
    assert report["total_bytes"] == sum(parts) == row_bytes
    assert report["checkpoints"]["count"] == 9  # input, before and after talk: per turn
    assert report["pending_writes"]["count"] > 0 and min(parts) > 0
    channels = report["channel_values"]["by_channel"]
    assert channels["messages"]["versions"] == 6  # the input's, then the reply's: per turn
    assert sum(c["bytes"] for c in channels.values()) == report["channel_values"]["bytes"]
    assert report["channel_values"]["count"] == sum(c["versions"] for c in channels.values())


async def test_two_different_versions_named_at_once_are_refused(server: str) -> None:
    """`checkpoint_id` beside a `checkpoint` naming another version is a 422 (one of
    the two was silently dropped); the same version twice is fine."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    for text in ("one", "two"):
        await client.runs.wait(thread_id, "echo", input=said(text))
    ids = [s["checkpoint"]["checkpoint_id"] for s in await client.threads.get_history(thread_id)]
    t = f"/threads/{thread_id}"
    both = {"checkpoint_id": ids[1], "checkpoint": {"checkpoint_id": ids[2]}}
    same = {"checkpoint_id": ids[1], "checkpoint": {"checkpoint_id": ids[1]}}
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        for path, body in (
            (f"{t}/runs/wait", {"assistant_id": "echo", "input": said("x")}),
            (f"{t}/state", {"values": {"messages": [{"role": "user", "content": "x"}]}}),
        ):
            refused = await http.post(path, json={**body, **both})
            assert refused.status_code == 422 and "name different versions" in refused.text
            assert (await http.post(path, json={**body, **same})).status_code == 200


async def test_a_state_its_saved_writes_cannot_make_is_a_conflict(server: str) -> None:
    """A run that fails as its step's writes clash leaves them saved (as LangGraph does:
    they were saved as each task ended), and no read of the head can apply them: the
    state and a resume are a 409 that says why (LangGraph's server: 400), the thread and
    its history stay readable, and a run from an older version goes on from there."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "clash", input={})
    failed = await client.runs.create(thread_id, "clash", command={"resume": "asked"})
    await client.runs.join(thread_id, failed["run_id"])
    assert (await client.runs.get(thread_id, failed["run_id"]))["status"] == "error"
    async with httpx.AsyncClient(base_url=server) as http:
        state = await http.get(f"/threads/{thread_id}/state")
        assert state.status_code == 409, state.text
        assert "cannot be read" in state.json()["detail"]
        assert "At key 'x'" in state.json()["detail"]
        resume = await http.post(
            f"/threads/{thread_id}/runs", json={"assistant_id": "clash", "command": {"resume": 1}}
        )
        assert resume.status_code == 409, resume.text
        assert (await http.get(f"/threads/{thread_id}")).status_code == 200
        copied = await http.post(f"/threads/{thread_id}/copy")
        assert copied.status_code == 200, copied.text
        copy_id = copied.json()["thread_id"]
        assert (await http.get(f"/threads/{copy_id}/state")).status_code == 409
    history = await client.threads.get_history(thread_id)
    assert [version["next"] for version in history] == [["put", "ask"], ["__start__"]]
    again = await client.runs.wait(
        thread_id, "clash", input={}, checkpoint_id=history[-1]["checkpoint_id"]
    )
    assert again["x"] == "put"


async def test_a_run_whose_writes_clash_keeps_the_steps_before(server: str) -> None:
    """Only a run that saved nothing but its input is undone when its state cannot be
    read: one that failed steps later keeps those steps, as in LangGraph."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    with pytest.raises(Exception, match="InvalidUpdateError"):
        await client.runs.wait(thread_id, "clash_later", input={"x": "given"})
    assert (await client.threads.get(thread_id))["status"] == "error"
    history = await client.threads.get_history(thread_id)
    assert [version["next"] for version in history] == [["put", "again"], ["first"], ["__start__"]]
    with pytest.raises(ConflictError):
        await client.threads.get_state(thread_id)


async def test_history_keeps_integers_beyond_64_bits_exact(server: str) -> None:
    """History is made in C but for what C cannot write: an int beyond 64 bits comes
    back exact, as the state shows it (it came back a float, and 10**400 was a 500).
    (httpx here: langgraph-sdk's encoder refuses such ints.)"""
    thread_id = await new_thread(get_client(url=server))
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        for exponent in (20, 400):
            run = {"assistant_id": "power", "input": exponent}
            ran = await http.post(f"/threads/{thread_id}/runs/wait", json=run)
            assert ran.is_success, ran.text
            state = (await http.get(f"/threads/{thread_id}/state")).json()
            history = await http.post(f"/threads/{thread_id}/history", json={"limit": 1})
            assert history.status_code == 200, history.text
            assert state["values"] == history.json()[0]["values"] == {"value": 10**exponent}
