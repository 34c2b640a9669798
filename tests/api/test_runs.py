"""Runs through the official client over a real server, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from app.config import Settings
from app.main import create_app
from tests import helpers
from tests.api.graphs import GRAPHS
from tests.helpers import collect, eventually, new_id, said, until_status

HELLO = said("hello there")


@pytest.fixture
def client(server: str) -> LangGraphClient:
    return helpers.client(server)


async def test_stream_modes(client: LangGraphClient) -> None:
    parts = await collect(
        client.runs.stream(
            new_id(),
            "echo",
            input=HELLO,
            stream_mode=["values", "updates", "messages-tuple"],
            if_not_exists="create",
        )
    )
    names = [name for name, _ in parts]
    assert names[0] == "metadata"
    assert names.count("values") == 2
    assert parts[-1][1]["messages"][-1]["content"] == "You said: hello there"
    reply = parts[-1][1]["messages"][-1]
    assert [d for n, d in parts if n == "updates"] == [{"talk": {"messages": [reply]}}]
    chunks = [d for n, d in parts if n == "messages"]
    assert len(chunks) == 4
    assert {c[0]["id"] for c in chunks} == {"reply-1"}
    assert {c[1]["langgraph_node"] for c in chunks} == {"talk"}
    assert "".join(c[0]["content"] for c in chunks) == "You said: hello there"


async def test_a_rejoined_stream_reads_modes_as_a_json_array(
    client: LangGraphClient, server: str
) -> None:
    """LangGraph's JS client sends a list in a query as one JSON array: a run's stream
    rejoined with `stream_mode=["updates"]` keeps that mode (it was a 422), as repeated
    keys do; an unknown name in the array is still a 422 naming it."""
    thread_id = await helpers.new_thread(client)
    run = await client.runs.create(
        thread_id, "echo", input=HELLO, stream_mode=["values", "updates"]
    )
    await client.runs.join(thread_id, run["run_id"])
    path = f"/threads/{thread_id}/runs/{run['run_id']}/stream"
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        as_array = await http.get(path, params={"stream_mode": '["updates"]'})
        repeated = await http.get(path, params={"stream_mode": ["updates"]})
        both = await http.get(path, params={"stream_mode": '["values","updates"]'})
        unknown = await http.get(path, params={"stream_mode": '["updates","everything"]'})
        deep = await http.get(path, params={"stream_mode": "[" * 5000})
        thread = await http.get(f"/threads/{thread_id}/stream", params={"stream_mode": '["x"]'})
    assert as_array.status_code == 200
    assert as_array.text == repeated.text
    assert "event: updates" in as_array.text and "event: values" not in as_array.text
    assert "event: values" in both.text and "event: updates" in both.text
    assert unknown.status_code == 422 and "everything" in unknown.text
    assert deep.status_code == 422
    assert thread.status_code == 422 and '"input":"x"' in thread.text


async def test_a_batch_runs_each_on_its_thread_or_stateless(client: LangGraphClient) -> None:
    """`runs.create_batch`: a payload naming a thread (langgraph-sdk's `RunCreate`
    declares `thread_id`) runs there, one without runs stateless; an unknown thread is
    a 404 unless the payload says `if_not_exists: create`."""
    thread_id = await helpers.new_thread(client)
    fresh = new_id()
    on_thread, stateless, created = await client.runs.create_batch(
        [
            {"assistant_id": "echo", "input": said("one"), "thread_id": thread_id},
            {"assistant_id": "echo", "input": said("two")},
            {"assistant_id": "echo", "thread_id": fresh, "if_not_exists": "create"},
        ]
    )
    assert on_thread["thread_id"] == thread_id
    assert stateless["thread_id"] not in (thread_id, fresh)
    assert created["thread_id"] == fresh
    await client.runs.join(thread_id, on_thread["run_id"])
    state = await client.threads.get_state(thread_id)
    assert state["values"]["messages"][-1]["content"] == "You said: one"
    with pytest.raises(NotFoundError):
        await client.runs.create_batch([{"assistant_id": "echo", "thread_id": new_id()}])


async def test_a_batch_as_the_javascript_client_sends_it(server: str) -> None:
    """langgraph-sdk's JavaScript `createBatch` sends each payload as given, in camelCase,
    beside the `assistant_id` it adds: every key is read as its field (an unknown one
    is still refused), and one given both ways must say the same."""
    thread_id = new_id()
    payload = {
        "assistantId": "echo",
        "assistant_id": "echo",
        "input": said("one"),
        "threadId": thread_id,
        "ifNotExists": "create",
        "streamMode": ["values"],
        "multitaskStrategy": "reject",
    }
    async with httpx.AsyncClient(base_url=server) as http:
        answer = await http.post("/runs/batch", json=[payload])
        assert answer.status_code == 200, answer.text
        [run] = answer.json()
        assert run["thread_id"] == thread_id and run["multitask_strategy"] == "reject"
        for wrong in ({"assistantId": "asker"}, {"colourScheme": 1}):
            refused = await http.post("/runs/batch", json=[{**payload, **wrong}])
            assert refused.status_code == 422, refused.text


async def test_events_mode(client: LangGraphClient) -> None:
    """`events` streams what `astream_events(version="v2")` yields, as LangGraph's server
    does: the graph's run (named after its graph id, with the run's id), each node's run
    tagged with its step, the chat model's tokens inside it, the node's output."""
    parts = await collect(
        client.runs.stream(
            new_id(), "echo", input=HELLO, stream_mode=["events", "values"], if_not_exists="create"
        )
    )
    run_id = parts[0][1]["run_id"]
    assert [name for name, _ in parts if name != "events"] == ["metadata", "values", "values"]
    events = [data for name, data in parts if name == "events"]
    kinds = [(e["event"], e["name"]) for e in events]
    assert kinds[:3] == [
        ("on_chain_start", "echo"),
        ("on_chain_start", "talk"),
        ("on_chat_model_start", "EchoModel"),
    ]
    assert kinds[-3:] == [
        ("on_chain_stream", "talk"),
        ("on_chain_end", "talk"),
        ("on_chain_end", "echo"),
    ]
    root, node = events[0], events[1]
    assert root["run_id"] == run_id and root["parent_ids"] == []
    assert root["data"] == {"input": HELLO}
    assert node["tags"] == ["graph:step:1"] and node["parent_ids"] == [run_id]
    assert node["metadata"]["langgraph_node"] == "talk"
    assert node["metadata"]["run_id"] == run_id
    tokens = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert "".join(e["data"]["chunk"]["content"] for e in tokens) == "You said: hello there"
    assert {e["parent_ids"][-1] for e in tokens} == {node["run_id"]}
    final = [data for name, data in parts if name == "values"][-1]
    assert events[-3]["data"] == {"chunk": {"messages": [final["messages"][-1]]}}
    assert events[-1]["data"] == {"output": final}


async def test_events_mode_from_a_sync_node(client: LangGraphClient) -> None:
    """Events of a tool called in a sync node (in a worker thread) come in order, under
    the node's run; a resumed run's events start with the graph's run again."""
    thread_id = new_id()
    await client.runs.wait(thread_id, "asker", input={"question": "?"}, if_not_exists="create")
    parts = await collect(
        client.runs.stream(thread_id, "asker", command={"resume": "yes"}, stream_mode="events")
    )
    events = [data for name, data in parts if name == "events"]
    assert [(e["event"], e["name"]) for e in events] == [
        ("on_chain_start", "asker"),
        ("on_chain_start", "ask"),
        ("on_chain_stream", "ask"),
        ("on_chain_end", "ask"),
        ("on_chain_start", "done"),
        ("on_tool_start", "count_answers"),
        ("on_tool_end", "count_answers"),
        ("on_chain_stream", "done"),
        ("on_chain_end", "done"),
        ("on_chain_end", "asker"),
    ]
    node, tool_end = events[4], events[6]
    assert tool_end["parent_ids"] == [parts[0][1]["run_id"], node["run_id"]]
    assert tool_end["data"] == {"output": 1, "input": {"answers": ["yes"]}}


async def test_a_run_config_reaches_the_graph_whole(client: LangGraphClient) -> None:
    """`run_name` names the graph's run and a key of the client's own goes with the
    config, as LangGraph's server passes them; the metadata says which attempt it is;
    callbacks, which JSON cannot give, are refused."""
    config = {"run_name": "greeter", "tenant": "acme", "configurable": {"k": 1}}
    parts = await collect(
        client.runs.stream(
            new_id(),
            "echo",
            input=HELLO,
            config=config,  # type: ignore[arg-type]
            stream_mode="events",
            if_not_exists="create",
        )
    )
    [start, *_] = [data for name, data in parts if name == "events"]
    assert (start["event"], start["name"]) == ("on_chain_start", "greeter")
    assert start["metadata"]["run_attempt"] == 1
    async with httpx.AsyncClient(base_url=client.http.client.base_url) as http:
        body = {"assistant_id": "echo", "input": HELLO, "config": {"callbacks": [{"h": 1}]}}
        answer = await http.post("/runs/wait", json=body)
        assert answer.status_code == 422
        [error] = answer.json()["detail"]
        assert error["loc"] == ["body", "config"] and "['callbacks']" in error["ctx"]["error"]
        # An assistant's config is held to the same; a run name is a name.
        for config in ({"run_id": "abc"}, {"run_name": {"a": 1}}, {"run_name": "x" * 201}):
            made = await http.post("/assistants", json={"graph_id": "echo", "config": config})
            assert made.status_code == 422, made.text
            body["config"] = config
            assert (await http.post("/runs/wait", json=body)).status_code == 422


async def test_messages_mode_accumulates(client: LangGraphClient) -> None:
    parts = await collect(
        client.runs.stream(
            new_id(), "echo", input=HELLO, stream_mode="messages", if_not_exists="create"
        )
    )
    names = [name for name, _ in parts]
    assert names[:2] == ["metadata", "messages/metadata"]
    partial = [d[0]["content"] for n, d in parts if n == "messages/partial"]
    assert partial == ["You", "You said:", "You said: hello", "You said: hello there"]
    complete = [d[0] for n, d in parts if n == "messages/complete"]
    assert [m["type"] for m in complete] == ["ai"]


async def test_interrupt_then_resume(client: LangGraphClient) -> None:
    thread_id = new_id()
    first = await client.runs.wait(
        thread_id, "asker", input={"question": "name?"}, if_not_exists="create"
    )
    assert first["__interrupt__"][0]["value"] == {"question": "name?"}
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    assert list(thread["interrupts"].values())[0][0]["value"] == {"question": "name?"}
    resumed = await collect(
        client.runs.stream(thread_id, "asker", command={"resume": "bob"}, stream_mode="updates")
    )
    assert [d for n, d in resumed if n == "updates"] == [
        {"ask": {"answers": ["bob"]}},
        {"done": {"answers": ["done"]}},
    ]
    assert (await client.threads.get(thread_id))["status"] == "idle"
    await expect_status(409, client.runs.wait(thread_id, "asker", command={"resume": "again"}))


async def test_a_resume_by_an_id_no_longer_waiting_is_refused(client: LangGraphClient) -> None:
    """A map of answers by interrupt id (a card of an older question answered again) that
    names an interrupt not waiting is refused, not saved whole as the answer."""
    thread_id = new_id()
    first = await client.runs.wait(
        thread_id, "asker", input={"question": "name?"}, if_not_exists="create"
    )
    old_id = first["__interrupt__"][0]["id"]
    stale = {"0" * 32: "bob"}
    await expect_status(409, client.runs.wait(thread_id, "asker", command={"resume": stale}))
    done = await client.runs.wait(thread_id, "asker", command={"resume": {old_id: "bob"}})
    assert done["answers"] == ["bob", "done"]


# The events of a run of the slow graph streaming `values` and `updates`.
SLOW_EVENTS = ["metadata", "values", "updates", "values", "updates", "values"]


async def test_background_run_join_and_rejoin(client: LangGraphClient) -> None:
    thread_id = new_id()
    run = await client.runs.create(
        thread_id,
        "slow",
        input={"delay": 0.05},
        stream_mode=["values", "updates"],
        stream_resumable=True,
        if_not_exists="create",
    )
    assert (await client.runs.join(thread_id, run["run_id"]))["log"] == ["step", "step2"]
    replay = [
        (p.event, p.id)
        async for p in client.runs.join_stream(thread_id, run["run_id"], last_event_id="-1")
    ]
    assert [name for name, _ in replay] == SLOW_EVENTS
    ids = [int(i) for _, i in replay]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    middle = replay[2][1]
    rest = [
        (p.event, p.id)
        async for p in client.runs.join_stream(thread_id, run["run_id"], last_event_id=middle)
    ]
    assert rest == replay[3:]


@pytest.mark.parametrize("resumable", [True, False])
async def test_rejoin_while_running_gets_every_event_once(server: str, resumable: bool) -> None:
    """A browser-style client reads part of a stream, drops, and reconnects by id. Every
    run's events are recorded, so a stream not asked resumable has ids too: without,
    langgraph-sdk's reconnect sent no `Last-Event-ID`, and was replayed what it had."""
    thread_id = new_id()
    body = {
        "assistant_id": "slow",
        "input": {"delay": 0.3},
        "stream_mode": ["values", "updates"],
        "stream_resumable": resumable,
        "if_not_exists": "create",
    }
    seen: list[tuple[str, str]] = []
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        async with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as res:
            location = res.headers["location"]
            async for line in res.aiter_lines():
                if line.startswith("id: "):
                    seen.append(("id", line[4:]))
                if len(seen) == 2:
                    break
        last = seen[-1][1]
        async with http.stream("GET", location, headers={"Last-Event-ID": last}) as res:
            async for line in res.aiter_lines():
                if line.startswith("id: "):
                    seen.append(("id", line[4:]))
    ids = [int(i) for _, i in seen]
    assert ids == list(range(len(ids)))
    assert len(ids) == 6


async def test_a_threads_stream_follows_its_runs_in_the_modes_asked(
    client: LangGraphClient, server: str
) -> None:
    """langgraph-sdk's `threads.join_stream` asks `run_modes` by default: every event of
    every run, each run ended by a `run_done` metadata event; `lifecycle` those
    metadata events only."""
    thread_id = await helpers.new_thread(client)

    async def follow(**modes: Any) -> list[tuple[str, Any]]:
        seen: list[tuple[str, Any]] = []
        async for part in await client.threads.join_stream(thread_id, **modes):
            seen.append((part.event, part.data))
            if len([d for e, d in seen if e == "metadata" and "status" in d]) == 2:
                return seen
        return seen

    # Queued (the first put off a second), so that the readers, which follow the runs
    # pending or running when they join, find both from their start.
    first = await client.runs.create(thread_id, "echo", input=said("one"), after_seconds=1)
    second = await client.runs.create(thread_id, "echo", input=said("two"))
    runs = [first["run_id"], second["run_id"]]
    readers = [
        asyncio.create_task(follow()),
        asyncio.create_task(follow(stream_mode="lifecycle")),
        asyncio.create_task(follow(stream_mode=["updates"])),
        # LangGraph's server's name for the modes, over the SDK's default `stream_mode`.
        asyncio.create_task(follow(params={"stream_modes": "lifecycle"})),
    ]
    every, lifecycle, updates, named = await asyncio.wait_for(asyncio.gather(*readers), 30)
    assert named == lifecycle
    done = [{"status": "run_done", "run_id": run_id} for run_id in runs]
    assert [d for e, d in every if e == "metadata" and "status" in d] == done
    assert {e for e, _ in every} == {"metadata", "values"}
    assert [e for e, _ in lifecycle] == ["metadata"] * 4
    assert [d["run_id"] for _, d in lifecycle] == [runs[0], runs[0], runs[1], runs[1]]
    assert {e for e, _ in updates} == {"metadata"}  # the runs streamed no updates
    async with httpx.AsyncClient(base_url=server) as http:
        for path, mode in (
            (f"/threads/{thread_id}/stream", "state_update"),
            (f"/threads/{thread_id}/stream", "everything"),
            (f"/threads/{thread_id}/runs/{runs[0]}/stream", "run_modes"),
        ):
            refused = await http.get(path, params={"stream_mode": mode})
            assert refused.status_code == 422 and "stream_mode" in refused.text, mode
        refused = await http.get(
            f"/threads/{thread_id}/stream", params={"stream_modes": "values,everything"}
        )
        assert refused.status_code == 422 and "everything" in refused.text


async def test_a_threads_stream_resumes_after_the_last_event_id_it_sent(
    client: LangGraphClient, server: str
) -> None:
    """Each event of a thread's stream has an id; a client that comes back with the last
    one it has (Last-Event-ID) gets the rest of that run, then every run made after it,
    including runs that began and ended while it was away, each once."""
    thread_id = await helpers.new_thread(client)

    async def read(last_event_id: str | None, runs_done: int) -> list[tuple[str, str, Any]]:
        seen: list[tuple[str, str, Any]] = []
        stream = await client.threads.join_stream(thread_id, last_event_id=last_event_id)
        async for part in stream:
            seen.append((part.id or "", part.event, part.data))
            if len([d for _, e, d in seen if e == "metadata" and "status" in d]) == runs_done:
                break
        return seen

    # Slow enough that the reader joins while it runs.
    first = await client.runs.create(
        thread_id, "slow", input={"delay": 0.5}, stream_mode=["values", "updates"]
    )
    whole = await asyncio.wait_for(read(None, 1), 30)
    second = await client.runs.create(thread_id, "echo", input=said("two"))
    await client.runs.join(thread_id, second["run_id"])
    assert [e for _, e, _ in whole] == [*SLOW_EVENTS, "metadata"]
    ids = [i for i, _, _ in whole]
    run = first["run_id"]
    assert ids == [f"{run}:{n}" for n in range(6)] + [f"{run}:done"]

    resumed = await asyncio.wait_for(read(ids[2], 2), 30)
    assert resumed[:4] == whole[3:]
    later = [(i.split(":")[0], e) for i, e, _ in resumed[4:]]
    two = second["run_id"]
    assert later == [(two, "metadata"), (two, "values"), (two, "values"), (two, "metadata")]
    after_done = await asyncio.wait_for(read(ids[-1], 1), 30)
    assert after_done == resumed[4:]

    async with httpx.AsyncClient(base_url=server) as http:
        for bad in ("7", f"{run}:x", f"{run}:-1", "not-a-run:3"):
            refused = await http.get(f"/threads/{thread_id}/stream", headers={"Last-Event-ID": bad})
            assert refused.status_code == 422 and "Last-Event-ID" in refused.text, bad


async def test_double_texting_reject_and_enqueue(client: LangGraphClient) -> None:
    thread_id = new_id()
    first = await client.runs.create(
        thread_id, "slow", input={"delay": 0.3}, if_not_exists="create"
    )
    with pytest.raises(ConflictError):
        await client.runs.create(thread_id, "slow", input={"delay": 0}, multitask_strategy="reject")
    second = await client.runs.create(
        thread_id, "slow", input={"delay": 0}, multitask_strategy="enqueue"
    )
    assert (await client.runs.join(thread_id, second["run_id"]))["log"] == ["step", "step2"] * 2
    assert (await client.runs.get(thread_id, first["run_id"]))["status"] == "success"


async def test_double_texting_interrupt_keeps_the_first_runs_steps(
    client: LangGraphClient,
) -> None:
    thread_id = new_id()
    first = await client.runs.create(
        thread_id, "slow", input={"delay": 0.4}, if_not_exists="create"
    )
    await until_status(client, thread_id, first["run_id"], "running")
    second = await client.runs.create(
        thread_id, "slow", input={"delay": 0}, multitask_strategy="interrupt"
    )
    final = await client.runs.join(thread_id, second["run_id"])
    assert final["log"][-2:] == ["step", "step2"]
    assert (await client.runs.get(thread_id, first["run_id"]))["status"] == "interrupted"


async def test_double_texting_rollback_removes_the_first_run(client: LangGraphClient) -> None:
    thread_id = new_id()
    await client.runs.wait(thread_id, "slow", input={"delay": 0}, if_not_exists="create")
    before = await client.threads.get_history(thread_id, limit=100)
    first = await client.runs.create(thread_id, "slow", input={"delay": 0.4})
    await until_status(client, thread_id, first["run_id"], "running")

    async def first_step_saved() -> bool:
        history = await client.threads.get_history(thread_id, limit=100)
        return any(
            s["metadata"].get("run_id") == first["run_id"] and s["next"] == ["step2"]
            for s in history
        )

    await eventually(first_step_saved, "the first step of the doomed run to be saved")
    second = await client.runs.create(
        thread_id, "slow", input={"delay": 0}, multitask_strategy="rollback"
    )
    final = await client.runs.join(thread_id, second["run_id"])
    assert final["log"] == ["step", "step2", "step", "step2"]
    with pytest.raises(NotFoundError):
        await client.runs.get(thread_id, first["run_id"])
    after = await client.threads.get_history(thread_id, limit=100)
    runs = {s["metadata"].get("run_id") for s in after}
    assert first["run_id"] not in runs
    assert len(after) == len(before) + 4


async def test_cancel_a_running_run(client: LangGraphClient) -> None:
    thread_id = new_id()
    run = await client.runs.create(thread_id, "slow", input={"delay": 5}, if_not_exists="create")
    await until_status(client, thread_id, run["run_id"], "running")
    # With `wait`, the answer is the run's final values, as its join's.
    cancelled = await client.runs.cancel(thread_id, run["run_id"], wait=True)
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
    assert cancelled == await client.runs.join(thread_id, run["run_id"])
    state = await client.threads.get_state(thread_id)
    assert cancelled == state["values"]
    # Stopped mid-step, not at a breakpoint: the task says so, as on LangGraph's server
    # (useStream's stop tells the two apart by it).
    [task] = state["tasks"]
    assert (task["name"], task["error"]) == ("step", "CancelledError()")
    final = await client.runs.wait(thread_id, "slow", input={"delay": 0})
    assert final["log"] == ["step", "step2"]
    doomed = await client.runs.create(thread_id, "slow", input={"delay": 5})
    await until_status(client, thread_id, doomed["run_id"], "running")
    undone = await client.runs.cancel(thread_id, doomed["run_id"], wait=True, action="rollback")
    assert undone == {}


async def test_a_rollback_leaves_no_mark_on_the_version_it_ran_from(
    client: LangGraphClient,
) -> None:
    """A run that continues a version another run saved, rolled back mid-step, leaves
    that version as it was: its stopped task is not marked cancelled there (the engine
    marks a task a cancel cuts off, as LangGraph does; the server records its cancels
    itself)."""
    thread_id = new_id()
    await client.runs.wait(
        thread_id, "slow", input={"delay": 0}, interrupt_after=["step"], if_not_exists="create"
    )
    await client.threads.update_state(thread_id, {"delay": 5})
    before = await client.threads.get_state(thread_id)
    doomed = await client.runs.create(thread_id, "slow", input=None)
    await until_status(client, thread_id, doomed["run_id"], "running")
    await client.runs.cancel(thread_id, doomed["run_id"], wait=True, action="rollback")
    after = await client.threads.get_state(thread_id)
    assert after["checkpoint"] == before["checkpoint"]
    assert [(t["name"], t["error"]) for t in after["tasks"]] == [("step2", None)]


async def test_a_command_goes_to_nodes_not_to_the_start(client: LangGraphClient) -> None:
    thread_id = await helpers.new_thread(client)
    await client.runs.wait(thread_id, "echo", input=HELLO)
    with pytest.raises(UnprocessableEntityError, match="__start__ takes a run's input"):
        await client.runs.create(thread_id, "echo", command={"goto": "__start__"})


async def test_a_run_stops_at_the_breakpoints_it_names(client: LangGraphClient) -> None:
    """`__start__` too: after it, the input is saved and nothing ran; before it, not even
    the input is taken in (as LangGraph's server stops)."""
    thread_id = await helpers.new_thread(client)
    await client.runs.wait(thread_id, "slow", input={"delay": 0}, interrupt_after=["__start__"])
    state = await client.threads.get_state(thread_id)
    assert (state["values"], state["next"]) == ({"delay": 0, "log": []}, ["step"])
    await client.runs.wait(thread_id, "slow", input=None, interrupt_before=["step2"])
    assert (await client.threads.get_state(thread_id))["next"] == ["step2"]
    other = await helpers.new_thread(client)
    await client.runs.wait(other, "slow", input={"delay": 0}, interrupt_before=["__start__"])
    assert (await client.threads.get_state(other))["next"] == ["__start__"]
    final = await client.runs.wait(other, "slow", input=None)
    assert final["log"] == ["step", "step2"]


async def test_each_run_route_says_where_the_run_is(server: str) -> None:
    """Content-Location names the run; Location where to follow it, as LangGraph's server
    answers each route: its stream for a streamed run, its join for a waited one."""
    thread_id = new_id()
    body = {"assistant_id": "echo", "input": HELLO, "if_not_exists": "create"}
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        waited = await http.post(f"/threads/{thread_id}/runs/wait", json=body)
        base = waited.headers["content-location"]
        assert base.startswith(f"/threads/{thread_id}/runs/")
        assert waited.headers["location"] == f"{base}/join"
        streamed = await http.post(f"/threads/{thread_id}/runs/stream", json=body)
        assert streamed.headers["location"] == streamed.headers["content-location"] + "/stream"
        created = await http.post(f"/threads/{thread_id}/runs", json=body)
        assert "location" not in created.headers
        joined = await http.get(f"{base}/join")
        rejoined = await http.get(f"{base}/stream")
        assert (joined.headers["location"], rejoined.headers["location"]) == (
            f"{base}/join",
            f"{base}/stream",
        )


async def test_regenerate_and_edit_fork_history(client: LangGraphClient) -> None:
    thread_id = new_id()
    await client.runs.wait(thread_id, "echo", input=HELLO, if_not_exists="create")
    second = {"messages": [{"role": "user", "content": "second"}]}
    await client.runs.wait(thread_id, "echo", input=second)
    history = await client.threads.get_history(thread_id, limit=100)
    due = [s for s in history if s["next"] == ["talk"]]
    assert len(due) == 2
    regenerated = await client.runs.wait(
        thread_id, "echo", input=None, checkpoint_id=due[0]["checkpoint"]["checkpoint_id"]
    )
    assert regenerated["messages"][-1]["content"] == "You said: second"
    end_of_first = [s for s in history if s["metadata"]["step"] == 1 and not s["next"]][0]
    edited = await client.runs.wait(
        thread_id,
        "echo",
        input={"messages": [{"role": "user", "content": "edited"}]},
        checkpoint_id=end_of_first["checkpoint"]["checkpoint_id"],
    )
    assert [m["content"] for m in edited["messages"]] == [
        "hello there",
        "You said: hello there",
        "edited",
        "You said: edited",
    ]
    full = await client.threads.get_history(thread_id, limit=100)
    assert len(full) > len(history)
    assert {s["checkpoint"]["checkpoint_id"] for s in history} <= {
        s["checkpoint"]["checkpoint_id"] for s in full
    }
    state = await client.threads.get_state(thread_id)
    assert state["values"]["messages"][-1]["content"] == "You said: edited"


async def test_step_limit_is_an_error_and_the_thread_stays_usable(
    client: LangGraphClient,
) -> None:
    thread_id = new_id()
    parts = await collect(
        client.runs.stream(
            thread_id,
            "looping",
            input={},
            config={"recursion_limit": 5},
            if_not_exists="create",
        )
    )
    assert parts[-1][0] == "error"
    assert parts[-1][1]["error"] == "GraphRecursionError"
    failed = await client.threads.get(thread_id)
    # The thread says why, as LangGraph's server's does: a thread list can show it.
    assert (failed["status"], failed["error"]) == ("error", parts[-1][1])
    [found] = await client.threads.search(ids=[thread_id], status="error")
    assert found["error"] == parts[-1][1]
    assert (await client.runs.wait(thread_id, "asker", input={"question": "q"}))["__interrupt__"]
    again = await client.threads.get(thread_id)
    assert (again["status"], again["error"]) == ("interrupted", None)


async def test_a_slow_thread_does_not_delay_another(client: LangGraphClient) -> None:
    slow_thread, quick_thread = new_id(), new_id()
    slow = await client.runs.create(
        slow_thread, "slow", input={"delay": 1.0}, if_not_exists="create"
    )
    await until_status(client, slow_thread, slow["run_id"], "running")
    await client.runs.wait(quick_thread, "echo", input=HELLO, if_not_exists="create")
    assert (await client.runs.get(slow_thread, slow["run_id"]))["status"] == "running"
    await client.runs.join(slow_thread, slow["run_id"])


async def test_concurrent_enqueued_runs_never_overlap(client: LangGraphClient) -> None:
    thread_id = new_id()
    await client.runs.wait(thread_id, "slow", input={"delay": 0}, if_not_exists="create")
    runs = await asyncio.gather(
        *(client.runs.create(thread_id, "slow", input={"delay": 0.01}) for _ in range(8))
    )
    for run in runs:
        await client.runs.join(thread_id, run["run_id"])
    state = await client.threads.get_state(thread_id)
    assert state["values"]["log"] == ["step", "step2"] * 9
    statuses = {(await client.runs.get(thread_id, r["run_id"]))["status"] for r in runs}
    assert statuses == {"success"}


async def test_a_run_on_a_free_thread_starts_at_once(client: LangGraphClient) -> None:
    """The process creating a run on a free thread holds it from the start (no claim);
    of runs created together on one thread one starts so, the others queue behind it."""
    thread_id = new_id()
    await client.threads.create(thread_id=thread_id)
    runs = await asyncio.gather(
        *(client.runs.create(thread_id, "slow", input={"delay": 0.05}) for _ in range(4))
    )
    assert sorted(r["status"] for r in runs) == ["pending", "pending", "pending", "running"]
    for run in runs:
        await client.runs.join(thread_id, run["run_id"])
    state = await client.threads.get_state(thread_id)
    assert state["values"]["log"] == ["step", "step2"] * 4
    # Once the thread is free again, the next run starts at once too.
    later = await client.runs.create(thread_id, "slow", input={"delay": 0})
    assert later["status"] == "running"
    await client.runs.join(thread_id, later["run_id"])
    assert (await client.runs.get(thread_id, later["run_id"]))["status"] == "success"


async def test_bad_requests_are_clear_4xx(client: LangGraphClient, server: str) -> None:
    thread_id = new_id()
    await client.runs.wait(thread_id, "echo", input=HELLO, if_not_exists="create")
    await expect_status(404, client.runs.wait(thread_id, "no-such-graph", input=HELLO))
    await expect_status(404, client.runs.wait(new_id(), "echo", input=HELLO))
    await expect_status(
        404, client.runs.wait(thread_id, "echo", input=None, checkpoint_id=str(uuid.uuid4()))
    )
    async with httpx.AsyncClient(base_url=server) as http:
        bad = await http.post(
            "/threads/not-a-uuid/runs/wait", json={"assistant_id": "echo", "input": HELLO}
        )
        assert bad.status_code == 422 and "thread_id" in bad.json()["detail"]
        mode = await http.post(
            f"/threads/{thread_id}/runs/stream",
            json={"assistant_id": "echo", "input": HELLO, "stream_mode": "bogus"},
        )
        assert mode.status_code == 422
        both = await http.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "echo", "input": HELLO, "command": {"resume": 1}},
        )
        assert both.status_code == 422 and "not both" in both.json()["message"]
        rejoin = await http.get(
            f"/threads/{thread_id}/runs/{uuid.uuid4()}/stream", headers={"Last-Event-ID": "x"}
        )
        assert rejoin.status_code == 422
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread_id, "echo", input=HELLO, interrupt_before=["nope"])


async def test_stateless_run(client: LangGraphClient) -> None:
    result = await client.runs.wait(None, "echo", input=HELLO)
    assert result["messages"][-1]["content"] == "You said: hello there"


async def expect_status(code: int, call: Any) -> None:
    """`runs.wait` raises httpx's error, the other client calls their own typed ones."""
    with pytest.raises((httpx.HTTPStatusError, ConflictError, NotFoundError)) as caught:
        await call
    error = caught.value
    status = error.response.status_code if isinstance(error, httpx.HTTPStatusError) else None
    assert status in (code, None), status
    if status is None:
        assert isinstance(error, ConflictError if code == 409 else NotFoundError)


async def test_debug_checkpoints_are_shaped_for_studio(client: LangGraphClient) -> None:
    """As LangGraph's server sends a `debug` checkpoint (LangGraph Studio reads it): its
    version and its parent's as checkpoint objects too, beside the engine's configs."""
    thread_id = new_id()
    parts = await collect(
        client.runs.stream(
            thread_id, "echo", input=HELLO, stream_mode="debug", if_not_exists="create"
        )
    )
    checkpoints = [d["payload"] for n, d in parts if n == "debug" and d["type"] == "checkpoint"]
    assert len(checkpoints) >= 2
    first, last = checkpoints[0], checkpoints[-1]
    assert first["parent_checkpoint"] is None
    assert last["checkpoint"] == {
        "checkpoint_id": last["config"]["configurable"]["checkpoint_id"],
        "thread_id": thread_id,
        "checkpoint_ns": "",
    }
    assert (
        last["parent_checkpoint"]["checkpoint_id"]
        == (last["parent_config"]["configurable"]["checkpoint_id"])
    )
    state = await client.threads.get_state(thread_id)
    assert state["checkpoint"]["checkpoint_id"] == last["checkpoint"]["checkpoint_id"]


async def test_a_commands_update_may_be_key_value_pairs(client: LangGraphClient) -> None:
    """As LangGraph's server reads it: `[[key, value], ...]` is the update of those keys."""
    thread_id = await helpers.new_thread(client)
    done = await client.runs.wait(
        thread_id,
        "echo",
        command={"update": [["messages", [{"role": "user", "content": "as a pair"}]]]},
    )
    assert [m["content"] for m in done["messages"]][:1] == ["as a pair"]


async def test_a_runs_config_metadata_is_its_metadata_and_a_thread_it_makes_keeps_it(
    client: LangGraphClient,
) -> None:
    """A run's `config.metadata` is merged under its `metadata` (it was dropped): in its
    record and in every checkpoint it saves; a thread a run makes starts with it, as on
    LangGraph's server."""
    thread = await client.threads.create(metadata={"user": "u1"})
    run = await client.runs.create(
        thread["thread_id"],
        "echo",
        input=HELLO,
        metadata={"ticket": 7, "src": "own"},
        config={"metadata": {"src": "cfg", "team": "a"}},
    )
    await client.runs.join(thread["thread_id"], run["run_id"])
    own = {"src": "own", "team": "a", "ticket": 7}
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["metadata"] == own
    found = await client.threads.get_history(thread["thread_id"], metadata={"team": "a"})
    assert found and all(s["metadata"].items() >= own.items() for s in found)

    made = new_id()
    await client.runs.wait(
        made, "echo", input=HELLO, metadata={"ticket": 8}, if_not_exists="create"
    )
    assert (await client.threads.get(made))["metadata"] == {
        "ticket": 8,
        "graph_id": "echo",
        "assistant_id": (await client.assistants.get("echo"))["assistant_id"],
    }


async def test_a_runs_config_metadata_keys_are_bounded(client: LangGraphClient) -> None:
    with pytest.raises(UnprocessableEntityError) as refused:
        await client.runs.create(None, "echo", input=HELLO, config={"metadata": {"k" * 201: 1}})
    assert refused.value.body["detail"][0]["loc"] == ["body", "config", "metadata"]


async def test_a_workflow_whose_output_is_no_object(client: LangGraphClient) -> None:
    """An `@entrypoint` returning text: its runs answer the text (joined, stateless too),
    and every read of its thread shows it, as on LangGraph's server; interrupted, its
    answer is the interrupt alone (LangGraph's last `values` event)."""
    thread_id = new_id()
    assert await client.runs.wait(thread_id, "shout", input="abc", if_not_exists="create") == "ABC"
    run = await client.runs.create(thread_id, "shout", input="def")
    assert await client.runs.join(thread_id, run["run_id"]) == "DEF"
    assert await client.runs.wait(None, "shout", input="ghi") == "GHI"
    assert (await client.threads.get(thread_id))["values"] == "DEF"
    found = await client.threads.search(metadata={"graph_id": "shout"}, limit=100)
    assert "DEF" in [thread["values"] for thread in found]
    # A filter by values passes over text values.
    assert thread_id not in {t["thread_id"] for t in await client.threads.search(values={"a": 1})}
    history = await client.threads.get_history(thread_id)
    assert [version["values"] for version in history][:2] == ["DEF", "ABC"]
    first_input = history[-1]
    assert [task["result"] for task in first_input["tasks"]] == ["ABC"]
    state = await client.threads.get_state(thread_id, checkpoint_id=first_input["checkpoint_id"])
    assert state["tasks"][0]["result"] == "ABC"
    # Text UTF-8 cannot carry is escaped, in a stream as in an answer (the stream broke
    # off); PostgreSQL's saver refuses to keep it, and the run says so.
    async with httpx.AsyncClient(base_url=client.http.client.base_url, timeout=30) as http:
        run = {"assistant_id": "shout", "input": "half", "stream_mode": ["values"]}
        async with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=run) as sse:
            body = (await sse.aread()).decode()
        assert body.endswith("\r\n\r\n")
        assert '"x\\ud800y"' in body
        wait = await http.post(f"/threads/{thread_id}/runs/wait", json=run)
        assert wait.json() == "x\ud800y" or "surrogates" in wait.json()["__error__"]["message"]
    asked = await client.runs.wait(thread_id, "shout", input="ask")
    assert list(asked) == ["__interrupt__"]
    assert await client.runs.wait(thread_id, "shout", command={"resume": "hey"}) == "HEY"


async def test_a_workflow_whose_input_is_a_string(client: LangGraphClient) -> None:
    """An `@entrypoint` taking a string (LangGraph's essay-review tutorial) runs with any
    JSON input, as on LangGraph's server, and is resumed; a graph whose state cannot take
    such an input answers why."""
    thread_id = new_id()
    asked = await client.runs.wait(thread_id, "essay", input="cats", if_not_exists="create")
    [question] = asked["__interrupt__"]
    assert question["value"] == {"essay": "An essay about cats", "action": "review it"}
    done = await client.runs.wait(thread_id, "essay", command={"resume": "fine"})
    assert done == {"essay": "An essay about cats", "review": "fine"}
    for scalar in (7, True):
        stateless = await client.runs.wait(None, "essay", input=scalar)
        assert stateless["__interrupt__"][0]["value"]["essay"] == f"An essay about {scalar}"
    for wrong in ("cats", 5, [1]):
        with pytest.raises(httpx.HTTPStatusError, match="input: the graph.s state takes"):
            await client.runs.wait(new_id(), "echo", input=wrong, if_not_exists="create")


async def test_a_threads_error_is_its_last_runs(client: LangGraphClient) -> None:
    """A thread's `error` is that of its last ended run, when that run failed: not an
    older failure a later run cleared, even once the newer failed run is deleted."""
    thread_id = new_id()
    looping = {"input": {}, "config": {"recursion_limit": 5}, "raise_error": False}
    await client.runs.wait(thread_id, "looping", if_not_exists="create", **looping)
    assert (await client.threads.get(thread_id))["error"]["error"] == "GraphRecursionError"
    await client.runs.wait(thread_id, "asker", input={"question": "q"})
    assert (await client.threads.get(thread_id))["error"] is None
    failed = await client.runs.create(thread_id, "looping", input={}, config=looping["config"])
    await client.runs.join(thread_id, failed["run_id"])
    assert (await client.threads.get(thread_id))["error"]["error"] == "GraphRecursionError"
    await client.runs.delete(thread_id, failed["run_id"])
    assert (await client.threads.get(thread_id))["error"] is None


async def test_a_shutdown_says_which_runs_it_hands_over(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A server stopped with a run in flight says it waits for it, and which runs it
    re-queued for another worker (it said nothing of either)."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), shutdown_grace_s=0)
    with caplog.at_level(logging.INFO, logger="app"), helpers.serving(create_app(settings)) as url:
        client = get_client(url=url)
        thread_id = await helpers.new_thread(client)
        run = await client.runs.create(thread_id, "slow", input={"delay": 60})
        await until_status(client, thread_id, run["run_id"], "running")
    said_at_stop = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stopping")]
    assert said_at_stop == [
        "stopping: 1 runs in flight get 0s to finish",
        f"stopping: re-queued for another worker: {run['run_id']}",
    ]
