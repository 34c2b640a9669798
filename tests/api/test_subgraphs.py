"""Time travel through subgraphs over HTTP, with the official client, on SQLite and on
PostgreSQL: a supervisor whose researcher is a graph of its own and asks for a review
(`interrupt()`); its state read by namespace, its history, runs from its versions
(regenerate), updates inside it, the conversation tree, and bad input."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.helpers import collect, new_thread, said


def texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"]]


async def researcher_state(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """The head's state with the researcher's own state nested in its task."""
    state = await client.threads.get_state(thread_id, subgraphs=True)
    [task] = state["tasks"]
    assert task["name"] == "researcher" and task["state"] is not None
    return state


async def asked_twice(client: LangGraphClient) -> tuple[str, dict[str, Any], list[str]]:
    """A thread whose researcher drafted, was told to revise, drafted again and finished:
    the thread, the researcher's version at its first review, and the runs' ids."""
    thread_id = await new_thread(client)
    first = await client.runs.wait(thread_id, "supervisor", input=said("find it"))
    assert [i["value"]["draft"] for i in first["__interrupt__"]] == ["draft 1"]
    at_first_review = (await researcher_state(client, thread_id))["tasks"][0]["state"]
    runs = [(await client.runs.list(thread_id))[0]["run_id"]]
    for answer in ("revise", "ok"):
        run = await client.runs.create(thread_id, "supervisor", command={"resume": answer})
        await client.runs.join(thread_id, run["run_id"])
        runs.append(run["run_id"])
    return thread_id, at_first_review, runs


async def test_regenerate_from_the_sub_agents_versions(server: str) -> None:
    client = get_client(url=server)
    thread_id, at_first_review, runs = await asked_twice(client)
    ns = at_first_review["checkpoint"]["checkpoint_ns"]
    assert ns.startswith("researcher:")
    assert texts(at_first_review["values"]) == ["find it", "plan: ask the researcher", "draft 1"]
    assert at_first_review["next"] == ["review"]
    assert at_first_review["interrupts"][0]["value"]["draft"] == "draft 1"
    done = await client.threads.get_state(thread_id)
    assert texts(done["values"])[-1] == "report: draft 2" and done["next"] == []

    # The researcher's own history, by namespace: every version names the supervisor's
    # version it ran under, as LangGraph's checkpoint_map does.
    inner = await client.threads.get_history(thread_id, checkpoint={"checkpoint_ns": ns}, limit=100)
    assert {s["checkpoint"]["checkpoint_ns"] for s in inner} == {ns}
    [same] = [s for s in inner if s["checkpoint"] == at_first_review["checkpoint"]]
    assert same["values"] == at_first_review["values"]
    supervisor_at = at_first_review["metadata"]["parents"][""]
    assert {s["metadata"]["parents"][""] for s in inner} == {supervisor_at}
    assert at_first_review["checkpoint"]["checkpoint_map"] == {
        "": supervisor_at,
        ns: at_first_review["checkpoint"]["checkpoint_id"],
    }
    reviews = [s for s in inner if s["next"] == ["review"]]
    assert [texts(s["values"])[-1] for s in reviews] == ["draft 2", "draft 1"]
    # Searched by the thread's id, as a history may be: each of them is the thread's.
    by_thread = await client.threads.get_history(
        thread_id, checkpoint={"checkpoint_ns": ns}, metadata={"thread_id": thread_id}, limit=100
    )
    assert by_thread == inner
    other = await client.threads.get_history(
        thread_id, checkpoint={"checkpoint_ns": ns}, metadata={"thread_id": str(uuid.uuid4())}
    )
    assert other == []
    assert await client.threads.get_state(thread_id, checkpoint=same["checkpoint"]) == same

    # Regenerate from the researcher's first review: the supervisor goes back to its
    # version of that time, and the researcher's state on the new branch is what it was
    # at that version (one draft, not two), asking again. (As in LangGraph, its new run
    # has a namespace of its own, where it drafts again.)
    again = await client.runs.wait(
        thread_id, "supervisor", input=None, checkpoint=at_first_review["checkpoint"]
    )
    assert [i["value"]["draft"] for i in again["__interrupt__"]] == ["draft 1"]
    head = await researcher_state(client, thread_id)
    branch = head["tasks"][0]["state"]
    assert branch["next"] == ["review"] and branch["values"]["notes"] == ["draft 1"]
    assert texts(branch["values"]) == texts(at_first_review["values"])
    assert branch["checkpoint"]["checkpoint_ns"] != ns  # a new run of the researcher
    assert head["parent_checkpoint"]["checkpoint_id"] == supervisor_at
    assert head["metadata"]["source"] == "fork"
    finished = await client.runs.wait(thread_id, "supervisor", command={"resume": "ok"})
    assert texts(finished)[-1] == "report: draft 1"

    # Regenerate from the supervisor's version before the researcher ran: the researcher
    # had no state then, and starts afresh on the new branch.
    before = await client.threads.get_state(thread_id, checkpoint_id=supervisor_at, subgraphs=True)
    assert before["next"] == ["researcher"]
    assert before["tasks"][0]["state"]["values"]["notes"] == ["draft 1", "draft 2"]
    events = await collect(
        client.runs.stream(
            thread_id,
            "supervisor",
            input=None,
            checkpoint_id=supervisor_at,
            stream_mode="updates",
            stream_subgraphs=True,
        )
    )
    inside = [data for event, data in events if event.startswith("updates|researcher:")]
    assert [list(update) for update in inside] == [["draft"], ["__interrupt__"]]
    assert inside[1]["__interrupt__"][0]["value"]["draft"] == "draft 1"

    # The old branches stay readable, and the tree has the supervisor's versions only:
    # one turn and its two regenerations, the researcher's versions under their tasks.
    history = await client.threads.get_history(thread_id, limit=100)
    assert {s["checkpoint"]["checkpoint_ns"] for s in history} == {""}
    assert sum(texts(s["values"])[-1:] == ["report: draft 2"] for s in history) == 1
    async with httpx.AsyncClient(base_url=server) as http:
        tree = (await http.get(f"/threads/{thread_id}/tree")).json()
    first, regenerated, afresh = tree["turns"]
    assert first["run_ids"] == runs and first["reply"]["content"] == "report: draft 2"
    assert regenerated["parent_checkpoint_id"] == afresh["parent_checkpoint_id"] == supervisor_at
    assert [t["sibling_count"] for t in tree["turns"]] == [3, 3, 3]
    assert regenerated["status"] == "done" and afresh["status"] == "interrupted"
    assert tree["head_turn_id"] == afresh["turn_id"]
    covered = {
        c for t in tree["turns"] for c in (t["first_checkpoint_id"], t["last_checkpoint_id"])
    }
    assert covered <= {s["checkpoint"]["checkpoint_id"] for s in history}


async def test_resume_at_a_sub_agent_version(server: str) -> None:
    """Answering anew the question the researcher asked at its first review: the old
    answers stay on their branch, the new one goes on from there."""
    client = get_client(url=server)
    thread_id, at_first_review, _ = await asked_twice(client)
    where = at_first_review["checkpoint"]
    with pytest.raises(httpx.HTTPStatusError, match="409"):  # no question waits at the head
        await client.runs.wait(thread_id, "supervisor", command={"resume": "ok"})
    answered = await client.runs.wait(
        thread_id, "supervisor", command={"resume": "ok"}, checkpoint=where
    )
    assert texts(answered)[-2:] == ["review: ok", "report: draft 1"]
    head = await client.threads.get_state(thread_id)
    assert head["values"] == answered and head["next"] == []
    assert head["metadata"]["parents"][where["checkpoint_ns"]] == where["checkpoint_id"]
    history = await client.threads.get_history(thread_id, limit=100)
    ends = sorted(texts(s["values"])[-1] for s in history if not s["next"])
    assert ends == ["report: draft 1", "report: draft 2"]


async def test_regenerate_restores_a_sub_agents_memory(server: str) -> None:
    """A researcher that keeps its state from turn to turn (compiled with
    checkpointer=True): a turn regenerated from an older version finds it as it was
    then, not as it is now."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "remembering", input=said("find it"))
    for answer in ("revise", "ok"):
        await client.runs.wait(thread_id, "remembering", command={"resume": answer})
    second = await client.runs.wait(thread_id, "remembering", input=said("again"))
    assert [i["value"]["draft"] for i in second["__interrupt__"]] == ["draft 3"]
    memory = (await researcher_state(client, thread_id))["tasks"][0]["state"]
    assert memory["values"]["notes"] == ["draft 1", "draft 2", "draft 3"]
    history = await client.threads.get_history(thread_id, limit=100)
    first_turn, second_turn = sorted(
        (s["checkpoint"] for s in history if s["next"] == ["researcher"]),
        key=lambda c: c["checkpoint_id"],
    )
    for start, notes in [(second_turn, ["draft 1", "draft 2"]), (first_turn, [])]:
        again = await client.runs.wait(thread_id, "remembering", input=None, checkpoint=start)
        drafted = f"draft {len(notes) + 1}"
        assert [i["value"]["draft"] for i in again["__interrupt__"]] == [drafted]
        state = await researcher_state(client, thread_id)
        assert state["tasks"][0]["state"]["values"]["notes"] == [*notes, drafted]
        done = await client.runs.wait(thread_id, "remembering", command={"resume": "ok"})
        assert texts(done)[-1] == f"report: {drafted}"


async def test_answers_inside_the_sub_agent_in_the_tree(server: str) -> None:
    """A resume the researcher asks again after writes only the researcher's versions:
    its run belongs to the turn, which waits again (or failed, if the resume did)."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "supervisor", input=said("find it"))
    versions = len(await client.threads.get_history(thread_id, limit=100))
    revise = await client.runs.create(thread_id, "supervisor", command={"resume": "revise"})
    await client.runs.join(thread_id, revise["run_id"])
    assert len(await client.threads.get_history(thread_id, limit=100)) == versions
    async with httpx.AsyncClient(base_url=server) as http:
        [turn] = (await http.get(f"/threads/{thread_id}/tree")).json()["turns"]
        assert turn["run_ids"][-1] == revise["run_id"] and turn["status"] == "interrupted"
        boom = await client.runs.create(thread_id, "supervisor", command={"resume": "boom"})
        await client.runs.join(thread_id, boom["run_id"])
        [turn] = (await http.get(f"/threads/{thread_id}/tree")).json()["turns"]
        assert turn["run_ids"][-2:] == [revise["run_id"], boom["run_id"]]
        assert turn["status"] == "error"


async def test_update_inside_the_sub_agent(server: str) -> None:
    """A state update in the researcher's namespace (a draft by hand, as its draft node)
    is what the supervisor's next run continues from: the review asks about it."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "supervisor", input=said("find it"))
    inner = (await researcher_state(client, thread_id))["tasks"][0]["state"]
    written = await client.threads.update_state(
        thread_id,
        {"messages": [{"role": "ai", "content": "draft by hand"}], "notes": ["by hand"]},
        as_node="draft",
        checkpoint=inner["checkpoint"],
    )
    where = written["checkpoint"]
    assert where["checkpoint_ns"] == inner["checkpoint"]["checkpoint_ns"]
    updated = await client.threads.get_state(thread_id, checkpoint=where)
    assert updated["metadata"]["source"] == "update" and updated["next"] == ["review"]
    assert updated["parent_checkpoint"]["checkpoint_id"] == inner["checkpoint"]["checkpoint_id"]
    assert updated["values"]["notes"] == ["draft 1", "by hand"]
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    asked = await client.runs.wait(thread_id, "supervisor", input=None)
    assert [i["value"]["draft"] for i in asked["__interrupt__"]] == ["draft by hand"]
    finished = await client.runs.wait(thread_id, "supervisor", command={"resume": "ok"})
    assert texts(finished)[-1] == "report: draft by hand"


async def test_bad_namespaces_and_checkpoints(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "supervisor", input=said("find it"))
    state = await researcher_state(client, thread_id)
    ns = state["tasks"][0]["state"]["checkpoint"]["checkpoint_ns"]
    unknown = [
        {"checkpoint_ns": "nobody:1"},  # no such node
        {"checkpoint_ns": f"plan:{uuid.uuid4()}"},  # a node that runs no graph
        {"checkpoint_ns": f"researcher:{uuid.uuid4()}"},  # a run of it this thread never had
        {"checkpoint_ns": ns, "checkpoint_id": state["checkpoint"]["checkpoint_id"]},
    ]
    for checkpoint in unknown:
        with pytest.raises(NotFoundError):
            await client.threads.get_state(thread_id, checkpoint=checkpoint)
        with pytest.raises(NotFoundError):
            await client.threads.get_history(thread_id, checkpoint=checkpoint)
        with pytest.raises(NotFoundError):
            await client.runs.create(thread_id, "supervisor", input=None, checkpoint=checkpoint)
        with pytest.raises(NotFoundError):
            await client.threads.update_state(thread_id, {}, checkpoint=checkpoint)
    async with httpx.AsyncClient(base_url=server) as http:
        for path, body in [
            ("state/checkpoint", {"checkpoint": {"checkpoint_ns": "nobody:1"}}),
            ("history", {"checkpoint": {"checkpoint_ns": "nobody:1"}}),
        ]:
            missing = await http.post(f"/threads/{thread_id}/{path}", json=body)
            assert missing.status_code == 404 and "nobody:1" in missing.json()["detail"]
        malformed = await http.post(
            f"/threads/{thread_id}/runs/wait",
            json={
                "assistant_id": "supervisor",
                "checkpoint": {"checkpoint_ns": ns, "checkpoint_id": "nope"},
            },
        )
        assert malformed.status_code == 422 and "checkpoint_id" in malformed.json()["detail"]
        wrong_type = await http.post(
            f"/threads/{thread_id}/state/checkpoint", json={"checkpoint": {"checkpoint_ns": 1}}
        )
        assert wrong_type.status_code == 422
    with pytest.raises(UnprocessableEntityError):
        await client.threads.update_state(
            thread_id, {"messages": []}, as_node="plan", checkpoint={"checkpoint_ns": ns}
        )
    assert await client.threads.get_state(thread_id, subgraphs=True) == state  # untouched


@pytest.mark.parametrize("stream_subgraphs", [False, True])
async def test_a_subgraphs_parts_are_streamed_only_when_asked(
    server: str, stream_subgraphs: bool
) -> None:
    """Without `stream_subgraphs` a run streams its graph's own parts, as LangGraph's
    server does: no researcher's state as if it were the thread's, no update of its
    nodes, one interrupt; with it, the researcher's too, under its namespace."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    modes = ["values", "updates", "checkpoints", "tasks", "debug"]
    events = await collect(
        client.runs.stream(
            thread_id,
            "supervisor",
            input=said("find it"),
            stream_mode=modes,
            stream_subgraphs=stream_subgraphs,
        )
    )
    own = [(event, data) for event, data in events if "|" not in event]
    inside = [event.split("|")[0] for event, _ in events if "|" in event]
    updates = [list(data) for event, data in own if event == "updates"]
    assert updates == [["plan"], ["__interrupt__"]]
    assert [sorted(data) for event, data in own if event == "values"][-1] == [
        "__interrupt__",
        "messages",
    ]
    assert all("notes" not in data for event, data in own if event == "values")
    assert all(
        data["config"]["configurable"]["checkpoint_ns"] == ""
        for event, data in own
        if event == "checkpoints"
    )
    # The run's configurable keys, as LangGraph's parts show them; not the server's own
    # objects (the run's user, its resources).
    [*_, last] = [data for event, data in own if event == "checkpoints"]
    shown = last["config"]["configurable"]
    assert {"thread_id", "run_id", "assistant_id", "graph_id", "user_id"} <= set(shown)
    assert {"langgraph_auth_user", "reminder_store"}.isdisjoint(shown), shown
    if stream_subgraphs:
        assert set(inside) == set(modes)
    else:
        assert inside == []


async def test_a_failed_run_is_one_log_line_naming_its_error(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator sees which run failed and why (a ValueError of a graph's node was not
    logged at all)."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "supervisor", input=said("find it"))
    with caplog.at_level(logging.INFO, logger="app"):
        boom = await client.runs.create(thread_id, "supervisor", command={"resume": "boom"})
        await client.runs.join(thread_id, boom["run_id"])
    said_of_it = [r.getMessage() for r in caplog.records if boom["run_id"] in r.getMessage()]
    assert said_of_it == [f"run {boom['run_id']} failed: ValueError: the reviewer broke"]


async def test_a_run_without_input_is_logged_without_a_traceback(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No input for a new thread is the client's mistake, which the line says whole."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    with caplog.at_level(logging.INFO, logger="app"):
        run = await client.runs.create(thread_id, "echo", input=None)
        await client.runs.join(thread_id, run["run_id"])
    [record] = [r for r in caplog.records if run["run_id"] in r.getMessage()]
    assert record.getMessage().endswith("failed: EmptyInputError: Received no input for __start__")
    assert not record.exc_info
