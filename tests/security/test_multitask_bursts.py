"""Bursts of runs on one thread (issue 22): with every multitask strategy, each of 50
concurrent `runs/wait` gets its own run's outcome, or a 409 when its run was refused or
rolled back; never another run's 404. Answers, the runs table and the thread's history
agree, on both databases."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.api import held_graph
from tests.api.held_graph import held_thread
from tests.helpers import ServeApp, eventually

BURST = 50


@dataclass(frozen=True)
class Answer:
    """What one request of the burst was told: its status, body, and its run (from
    Content-Location) when one was made."""

    said: str
    status: int
    body: Any
    run_id: str | None


async def send(http: httpx.AsyncClient, thread_id: str, strategy: str, said: str) -> Answer:
    answer = await http.post(
        f"/threads/{thread_id}/runs/wait",
        json={
            "assistant_id": "echo",
            "input": {"messages": [{"role": "user", "content": said}]},
            "multitask_strategy": strategy,
        },
    )
    location = answer.headers.get("content-location")
    run_id = location.rsplit("/", 1)[1] if location else None
    return Answer(said, answer.status_code, answer.json(), run_id)


def contents(values: dict[str, Any] | None) -> list[str]:
    return [m["content"] for m in (values or {}).get("messages", [])]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["reject", "enqueue", "interrupt", "rollback"])
async def test_a_burst_is_answered_truthfully(server: str, strategy: str) -> None:
    limits = httpx.Limits(max_connections=BURST)
    async with httpx.AsyncClient(base_url=server, timeout=180, limits=limits) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        answers = await asyncio.gather(
            *(send(http, thread_id, strategy, f"m{i}") for i in range(BURST))
        )
        runs = (await http.get(f"/threads/{thread_id}/runs", params={"limit": 1000})).json()
        history = (await http.post(f"/threads/{thread_id}/history", json={"limit": 1000})).json()
        thread = (await http.get(f"/threads/{thread_id}")).json()

    assert {a.status for a in answers} <= {200, 409}, [(a.status, a.body) for a in answers]
    status = {run["run_id"]: run["status"] for run in runs}
    wrote = {state["metadata"].get("run_id") for state in history}
    for answer in answers:
        if answer.status == 409:
            # Refused before a run was made (reject), or its run was rolled back: either
            # way nothing of it is left.
            assert strategy in ("reject", "rollback"), answer
            assert answer.run_id not in status and answer.run_id not in wrote, answer
            continue
        assert answer.run_id in status, answer
        if status[answer.run_id] == "success":
            # Its own turn ends the values it was answered with, and is in the history.
            assert contents(answer.body)[-2:] == [answer.said, f"You said: {answer.said}"]
            assert answer.run_id in wrote, answer
        else:
            # Stopped by a later run: what it had done (or nothing, if it never started).
            assert strategy == "interrupt" and status[answer.run_id] == "interrupted", answer
    answered = {a.run_id for a in answers if a.status == 200}
    assert set(status) == answered, "runs the answers do not account for"
    assert wrote - {None} <= answered, "checkpoints of runs that were refused or undone"
    succeeded = [a for a in answers if a.status == 200 and status[a.run_id] == "success"]
    assert succeeded, "no run of the burst succeeded"
    if strategy == "enqueue":
        assert len(succeeded) == BURST
    # The thread ends idle, at the values of the run that wrote its newest version.
    assert thread["status"] == "idle"
    [last] = [a for a in succeeded if a.run_id == history[0]["metadata"]["run_id"]]
    assert contents(thread["values"]) == contents(last.body)


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_runs_that_stop_the_active_one_stop_each_other(
    serve_app: ServeApp, database_url: str, strategy: str
) -> None:
    """Runs made at once on a busy thread with `interrupt` or `rollback` stop whatever is
    active when each is admitted, runs admitted alongside it included: with the thread's
    run held until all are in, one run is left to finish, not several one after another
    (on PostgreSQL, admissions that each saw no other committed kept them all)."""
    _, client, thread_id = await held_thread(serve_app, database_url)
    try:
        first = await client.runs.create(thread_id, "held", input={"log": ["first"]})
        await eventually(lambda: held_graph.WAITING.is_set(), "the run to reach its node")
        made = await asyncio.gather(
            *(
                client.runs.create(
                    thread_id, "held", input={"log": [str(i)]}, multitask_strategy=strategy
                )
                for i in range(BURST // 4)
            )
        )
    finally:
        held_graph.GATE.set()
    for run in [first, *made]:
        with contextlib.suppress(httpx.HTTPStatusError):  # a rolled-back run is gone
            await client.runs.join(thread_id, run["run_id"])
    runs = await client.runs.list(thread_id, limit=100)
    outcomes = sorted(run["status"] for run in runs)
    # Rolled back, a run's row goes; interrupted, it stays.
    stopped = ["interrupted"] * len(made) if strategy == "interrupt" else []
    assert outcomes == [*stopped, "success"], outcomes
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"
    # The inputs of interrupted runs stay (their first step saved them); the node ran once.
    log = thread["values"]["log"]
    assert log.count("held") == 1 and log[-1] == "held", log
    if strategy == "rollback":
        assert len(log) == 2, log
