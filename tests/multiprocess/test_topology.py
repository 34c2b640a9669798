"""Two API processes and two worker processes on one PostgreSQL, as docker-compose runs them:
load through both APIs, a worker killed mid-run, replicas that disappear, a database
restart. Every check reads the outcome through the API (or the shared database)."""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.multiprocess.client import (
    client,
    create_run,
    eventually,
    finished,
    get_json,
    new_thread,
    readiness,
    run_and_join,
    said,
    sql,
)
from tests.multiprocess.topology import Deployment, Process
from tests.pg import PostgresCluster

pytestmark = pytest.mark.slow

THREADS = 100
TURNS = 3
# Ticks of a run that only a cancel ends within the test (0.25 s each: minutes).
ENDLESS_TICKS = 1000
# Ticks of the run in flight while the database restarts.
SLOW_TICKS = 24


async def test_threads_through_both_apis_answered_once_never_two_runs_at_once(
    deployment: Deployment, database_url: str
) -> None:
    """100 threads x 3 turns, each turn sent through either API at once (so the turns of a
    thread queue up) and joined through the other one."""
    apis, _ = deployment.start(apis=2, workers=2)
    async with client(apis[0].url) as a, client(apis[1].url) as b:
        replicas = itertools.cycle([(a, b), (b, a)])
        limit = asyncio.Semaphore(25)

        async def converse(index: int) -> None:
            async with limit:
                thread_id = await new_thread(a if index % 2 else b)
                turns = [(f"thread {index} turn {k}", *next(replicas)) for k in range(TURNS)]
                results = await asyncio.gather(
                    *(
                        run_and_join(
                            sender, joiner, thread_id, assistant_id="echo", input=said(text)
                        )
                        for text, sender, joiner in turns
                    )
                )
                for (text, _, _), result in zip(turns, results, strict=True):
                    assert f"You said: {text}" in [m["content"] for m in result["messages"]]

        await asyncio.gather(*(converse(i) for i in range(THREADS)))

        threads = await sql(database_url, "SELECT thread_id FROM threads")
        assert len(threads) == THREADS
        for (thread_id,) in threads:
            state = await get_json(b, f"/threads/{thread_id}/state")
            contents = [m["content"] for m in state["values"]["messages"]]
            # Each turn once, its answer right after it: the runs took turns.
            asked = contents[0::2]
            assert contents[1::2] == [f"You said: {text}" for text in asked]
            assert len(set(asked)) == TURNS and len(contents) == 2 * TURNS

    statuses = await sql(database_url, "SELECT status, count(*) FROM runs GROUP BY status")
    assert statuses == [("success", THREADS * TURNS)]
    executions: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for line in deployment.trace.read_text().splitlines():
        entry = json.loads(line)
        executions[entry["thread_id"]].append((entry["start"], entry["end"]))
    assert len(executions) == THREADS
    for intervals in executions.values():
        assert len(intervals) == TURNS  # each run executed once
        intervals.sort()
        assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(intervals))


async def test_killed_worker_run_finished_by_another_without_lost_step_or_double_effect(
    deployment: Deployment, database_url: str
) -> None:
    """The agent approved a reminder and a slow forecast in one step; its worker dies after
    the reminder is set, during the forecast. The other worker takes the run over when
    the lease expires and continues from the last checkpoint."""
    deployment.environment = {
        "THREADLINE_FORECAST_DELAY_S": "3",
        "THREADLINE_FORECAST_TIMEOUT_S": "30",
    }
    apis, workers = deployment.start(apis=2, workers=2)
    async with client(apis[0].url) as a, client(apis[1].url) as b:
        thread_id = await new_thread(a)
        ask = said("What's the weather in Paris and remind me to call mom")
        asked = await run_and_join(a, b, thread_id, assistant_id="agent", input=ask)
        assert asked["__interrupt__"], "the agent asks before setting a reminder"
        run = await create_run(b, thread_id, assistant_id="agent", command={"resume": "yes"})

        async def reminder_set() -> list[dict[str, Any]]:
            return await get_json(a, "/reminders")  # type: ignore[no-any-return]

        await eventually(reminder_set, "the reminder to be set")
        [(worker_id, status)] = await sql(
            database_url, "SELECT worker_id, status FROM runs WHERE run_id = %s", [run["run_id"]]
        )
        assert status == "running"
        victim = deployment.by_pid(int(worker_id.split(":")[1]))
        victim.kill()

        await get_json(a, f"/threads/{thread_id}/runs/{run['run_id']}/join")
        assert (await finished(b, thread_id, run["run_id"]))["status"] == "success"
        [(attempt, last_worker)] = await sql(
            database_url, "SELECT attempt, worker_id FROM runs WHERE run_id = %s", [run["run_id"]]
        )
        survivor = next(w for w in workers if w is not victim)
        assert attempt == 2 and int(last_worker.split(":")[1]) == survivor.pid

        reminders = await reminder_set()
        assert [r["text"] for r in reminders] == ["call mom"]
        state = await get_json(a, f"/threads/{thread_id}/state")
        messages = state["values"]["messages"]
        assert [m["type"] for m in messages] == ["human", "ai", "tool", "tool", "ai"]
        calls = {c["id"]: c["name"] for c in messages[1]["tool_calls"]}
        answered = {m["tool_call_id"]: m["name"] for m in messages[2:4]}
        assert answered == calls and set(calls.values()) == {"get_forecast", "add_reminder"}
        assert "Done: I set a reminder to call mom." in messages[-1]["content"]
        assert "The forecast for Paris today" in messages[-1]["content"]
        history = (await b.post(f"/threads/{thread_id}/history", json={"limit": 100})).json()
        steps = sorted(h["metadata"]["step"] for h in history)
        assert steps == list(range(-1, steps[-1] + 1)), "one checkpoint per step, none lost"


async def test_worker_frozen_past_its_lease_writes_nothing_once_it_wakes(
    deployment: Deployment, database_url: str
) -> None:
    """A worker stops (as in a long pause or a partition) in the middle of a run; the
    other takes the run over when the lease expires and finishes it. When the first one
    wakes, its attempt neither saves a checkpoint nor records an outcome."""
    apis, _ = deployment.start(apis=1, workers=2)
    ticks = 6
    async with client(apis[0].url) as api:
        thread_id = await new_thread(api)
        run = await create_run(
            api, thread_id, assistant_id="ticker", input={"n": ticks, "delay": 0.5}
        )

        async def ticks_so_far() -> list[int]:
            state = await get_json(api, f"/threads/{thread_id}/state")
            return (state["values"] or {}).get("ticks", [])  # type: ignore[no-any-return]

        await eventually(lambda: _at_least(ticks_so_far, 2), "two ticks")
        [(worker_id,)] = await sql(
            database_url, "SELECT worker_id FROM runs WHERE run_id = %s", [run["run_id"]]
        )
        frozen = deployment.by_pid(int(worker_id.split(":")[1]))
        frozen.popen.send_signal(signal.SIGSTOP)
        try:
            done = await finished(api, thread_id, run["run_id"])
        finally:
            frozen.popen.send_signal(signal.SIGCONT)
        assert done["status"] == "success"
        await eventually(lambda: _stopped_itself(frozen), "the woken attempt to stop")
        [(status, attempt, holder)] = await sql(
            database_url,
            "SELECT status, attempt, worker_id FROM runs WHERE run_id = %s",
            [run["run_id"]],
        )
        assert (status, attempt) == ("success", 2) and holder != worker_id
        state = await get_json(api, f"/threads/{thread_id}/state")
        assert state["values"]["ticks"] == list(range(ticks)) and state["next"] == []
        history = (await api.post(f"/threads/{thread_id}/history", json={"limit": 100})).json()
        assert history[0]["checkpoint"] == state["checkpoint"], "nothing saved after the end"
    assert frozen.alive


async def _stopped_itself(process: Process) -> bool:
    """The attempt stopped on its own lease check, or on its first refused save."""
    log = "\n".join(process.lines())
    return "lease not renewed in time" in log or "another worker holds it now" in log


async def test_interrupted_through_one_api_resumed_through_another_once_it_is_gone(
    deployment: Deployment,
) -> None:
    apis, _ = deployment.start(apis=2, workers=2)
    async with client(apis[0].url) as a, client(apis[1].url) as b:
        thread_id = await new_thread(a)
        question = {"question": "favourite colour?"}
        asked = await run_and_join(a, b, thread_id, assistant_id="asker", input=question)
        assert asked["__interrupt__"][0]["value"] == question
        apis[0].kill()

        resume = await create_run(b, thread_id, assistant_id="asker", command={"resume": "blue"})
        assert (await finished(b, thread_id, resume["run_id"]))["status"] == "success"
        thread = await get_json(b, f"/threads/{thread_id}")
        assert thread["status"] == "idle" and thread["values"]["answers"] == ["blue", "done"]


async def test_stream_resumed_on_another_replica_with_last_event_id(
    deployment: Deployment,
) -> None:
    """A client reads part of a resumable stream from A, A dies, the client rejoins on B
    from the last event id it has: the rest arrives, nothing twice, nothing missing. (A
    third replica creates the run: see `test_waiting_through_the_api_that_created_the_run`.)"""
    apis, _ = deployment.start(apis=3, workers=2)
    a, b, c = (get_client(url=api.url) for api in apis)
    ticks = 20
    thread_id = (await c.threads.create())["thread_id"]
    run = await c.runs.create(
        thread_id,
        "ticker",
        input={"n": ticks, "delay": 0.1},
        stream_mode=["custom", "values"],
        stream_resumable=True,
    )
    received = []
    async with asyncio.timeout(30):
        async for part in a.runs.join_stream(thread_id, run["run_id"]):
            received.append(part)
            if part.event == "custom" and part.data["tick"] == 5:
                break
        apis[0].kill()
        rest = [
            part
            async for part in b.runs.join_stream(
                thread_id, run["run_id"], last_event_id=received[-1].id
            )
        ]
    ids = [int(part.id) for part in received + rest if part.id is not None]
    assert ids == list(range(len(ids))), "ids run on without a gap or a repeat"
    custom = [part.data["tick"] for part in received + rest if part.event == "custom"]
    assert custom == list(range(ticks))
    assert rest[-1].event == "values" and rest[-1].data["ticks"] == list(range(ticks))


async def test_cancel_on_one_api_stops_the_run_on_its_worker_process(
    deployment: Deployment,
) -> None:
    """A run that would tick for minutes is cancelled through the API that did not create
    it: the cancel returns once the run has stopped on its worker, interrupted with a few
    of its ticks; a later run on the thread goes on from the last of them, and no tick of
    the cancelled run comes among its own."""
    apis, _ = deployment.start(apis=2, workers=2)
    async with client(apis[0].url) as a, client(apis[1].url) as b:
        thread_id = await new_thread(b)
        run = await create_run(
            b, thread_id, assistant_id="ticker", input={"n": ENDLESS_TICKS, "delay": 0.25}
        )

        async def ticks() -> list[int]:
            state = await get_json(b, f"/threads/{thread_id}/state")
            return state["values"].get("ticks", [])  # type: ignore[no-any-return]

        await eventually(lambda: _at_least(ticks, 3), "three ticks")
        # Waits for the run to end: only the cancel ends it before the client's timeout.
        response = await a.post(f"/threads/{thread_id}/runs/{run['run_id']}/cancel?wait=1")
        assert response.status_code == 200
        cancelled = await get_json(b, f"/threads/{thread_id}/runs/{run['run_id']}")
        assert cancelled["status"] == "interrupted"
        at_cancel = await ticks()
        assert 3 <= len(at_cancel) < ENDLESS_TICKS, "stopped by the cancel, not at its end"
        assert response.json()["ticks"] == at_cancel  # the run's final values

        more = len(at_cancel) + 4
        later = await create_run(
            a, thread_id, assistant_id="ticker", input={"n": more, "delay": 0.25}
        )
        assert (await finished(b, thread_id, later["run_id"]))["status"] == "success"
        assert await ticks() == list(range(more)), "no tick of the cancelled run after it"


async def _at_least(read: Any, count: int) -> bool:
    return len(await read()) >= count


async def test_database_restart_under_load(
    deployment: Deployment, database_url: str, postgres_cluster: PostgresCluster | None
) -> None:
    """PostgreSQL goes down (as in a crash) while turns are in flight through both APIs,
    and comes back: what was committed is there, runs in flight end (failed or finished
    on a retry, never stuck), and the same processes serve again."""
    if postgres_cluster is None:
        pytest.skip("restarting the database needs the tests' own cluster")
    apis, _ = deployment.start(apis=2, workers=2)
    async with client(apis[0].url) as a, client(apis[1].url) as b:
        threads = [await new_thread(a) for _ in range(20)]
        answered: dict[str, list[str]] = defaultdict(list)  # turns the server confirmed
        unanswered: list[str] = []  # and turns it refused or dropped
        refusals: set[int] = set()  # the statuses it refused them with

        async def turn(api: httpx.AsyncClient, thread_id: str, text: str) -> None:
            """A turn the server confirmed is recorded in `answered`; one it refused is not."""
            try:
                result = await run_and_join(
                    api, b if api is a else a, thread_id, assistant_id="echo", input=said(text)
                )
            except httpx.HTTPError as failed:
                if isinstance(failed, httpx.HTTPStatusError):
                    refusals.add(failed.response.status_code)
                unanswered.append(text)
                return
            assert result["messages"][-1]["content"] == f"You said: {text}"
            answered[thread_id].append(text)

        for number, thread_id in enumerate(threads):
            await turn(a, thread_id, f"before {number}")
        assert len(answered) == len(threads)
        slow_thread = await new_thread(b)
        slow = await create_run(
            b, slow_thread, assistant_id="ticker", input={"n": SLOW_TICKS, "delay": 0.25}
        )

        def confirmed() -> int:
            return sum(len(texts) for texts in answered.values())

        async def more(count: Callable[[], int], than: int) -> bool:
            return count() > than

        async def slow_ticked() -> bool:
            state = await get_json(b, f"/threads/{slow_thread}/state")
            return bool((state["values"] or {}).get("ticks"))

        stop = asyncio.Event()

        async def load(api: httpx.AsyncClient, offset: int) -> None:
            for number in itertools.count():
                if stop.is_set():
                    return
                await turn(api, threads[(number + offset) % len(threads)], f"during {number}")

        loads = [asyncio.create_task(load((a, b)[k % 2], k * 3)) for k in range(6)]
        # In flight when the database stops: the load's turns, and the slow run.
        before = confirmed()
        await eventually(lambda: more(confirmed, before + len(loads)), "the load's turns")
        await eventually(slow_ticked, "the slow run to tick")

        events: list[str] = []

        async def slow_stream() -> None:
            """The slow run's events, read raw (nothing reconnects) across the restart."""
            path = f"/threads/{slow_thread}/runs/{slow['run_id']}/stream"
            async with b.stream("GET", path) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("event:"):
                        events.append(line.removeprefix("event: "))

        streamed = asyncio.create_task(slow_stream())
        await eventually(lambda: "values" in events, "the slow run's stream to start")
        await asyncio.to_thread(postgres_cluster.stop)
        for api, http in zip(apis, (a, b), strict=True):
            down = await readiness(api.url)
            assert down.status_code == 503
            assert down.json() == {"ok": False, "services": {"database": "unhealthy"}}
            refused = await http.post("/threads", json={})
            assert refused.status_code == 503, "unavailable, to be retried: not a 500"
            assert refused.headers["Retry-After"] and "retry" in refused.json()["detail"]
        down_since = len(unanswered)
        await eventually(
            lambda: more(lambda: len(unanswered), down_since + len(loads)),
            "the load's turns to be refused while the database is down",
            timeout=60,
        )
        await asyncio.to_thread(postgres_cluster.start)
        back_since = confirmed()
        await eventually(
            lambda: more(confirmed, back_since + len(loads)),
            "the load's turns to be answered again once the database is back",
            timeout=60,
        )
        stop.set()
        await asyncio.gather(*loads)

        for api in apis:
            await eventually(lambda api=api: _ready(api.url), "the database to be reachable again")
        stuck = "SELECT count(*) FROM runs WHERE status IN ('pending', 'running')"

        async def settled() -> bool:
            return (await sql(database_url, stuck)) == [(0,)]

        await eventually(settled, "every run in flight to end", timeout=60)
        slow_run = await get_json(a, f"/threads/{slow_thread}/runs/{slow['run_id']}")
        # Its stream waited the restart out and ended with the run, not cut.
        await asyncio.wait_for(streamed, 60)
        assert events[0] == "metadata" and events[-1] == "values" or "error" in events, events
        if slow_run["status"] == "success":
            state = await get_json(a, f"/threads/{slow_thread}/state")
            ticks = state["values"]["ticks"]
            assert ticks == list(range(SLOW_TICKS)), "a retry neither lost nor redid"
        else:
            assert slow_run["status"] == "error"

        for number, thread_id in enumerate(threads):
            api = (a, b)[number % 2]
            await turn(api, thread_id, f"after {number}")
            state = await get_json(api, f"/threads/{thread_id}/state")
            contents = [m["content"] for m in state["values"]["messages"]]
            for text in answered[thread_id]:
                assert contents.count(text) == 1 and contents.count(f"You said: {text}") == 1
            assert answered[thread_id][-1] == f"after {number}", "served again after the restart"
    # Down, shutting down or starting up: each a 503 to retry (PostgreSQL's "the database
    # system is starting up" was a 500).
    assert refusals <= {503}, refusals
    assert all(process.alive for process in deployment.processes), "no process restarted"


async def _ready(url: str) -> bool:
    return (await readiness(url)).status_code == 200


async def test_waiting_through_the_api_that_created_the_run(deployment: Deployment) -> None:
    """`runs/wait` and `runs/stream` on an API started with --no-worker: the run executes
    in a worker process while the client waits on the API that created it."""
    apis, _ = deployment.start(apis=1, workers=1)
    async with client(apis[0].url) as api:
        thread_id = await new_thread(api)
        body = {"assistant_id": "echo", "input": said("hello")}
        async with asyncio.timeout(60):  # fails a wait that never ends; not a speed bound
            response = await api.post(f"/threads/{thread_id}/runs/wait", json=body)
        assert response.json()["messages"][-1]["content"] == "You said: hello"
