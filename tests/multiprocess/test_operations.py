"""What an operator sees of a deployment: `/ok`, `/metrics`, the logs, the event cleanup,
checked on real processes."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.db.database import Database
from app.retention import clean_events
from tests.multiprocess.client import (
    client,
    create_run,
    eventually,
    finished,
    new_thread,
    said,
    sql,
)
from tests.multiprocess.topology import Deployment, Process

pytestmark = pytest.mark.slow
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(api: httpx.AsyncClient) -> Samples:
    """Every sample of `/metrics`, keyed by name and sorted labels."""
    response = await api.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def runs(samples: Samples, status: str) -> float:
    return samples[("threadline_runs", (("status", status),))]


async def test_health_and_metrics_follow_the_runs(deployment: Deployment) -> None:
    [api_process], _ = deployment.start(apis=1, workers=0)
    async with client(api_process.url) as api:
        assert (await api.get("/ok")).json() == {"ok": True}
        ready = await api.get("/ok", params={"check_db": 1})
        assert ready.json() == {"ok": True, "services": {"database": "healthy"}}

        threads = [await new_thread(api) for _ in range(3)]
        created = [await create_run(api, t, assistant_id="echo", input=said("hi")) for t in threads]
        samples = await scrape(api)
        assert samples[("threadline_database_up", ())] == 1
        assert runs(samples, "pending") == 3 and runs(samples, "success") == 0
        assert samples[("threadline_queue_depth", ())] == 3

        async with api.stream("GET", f"/threads/{threads[0]}/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert (await scrape(api))[("threadline_active_streams", ())] == 1
        await eventually(
            lambda: _value(api, ("threadline_active_streams", ()), 0),
            "the stream to be counted out",
        )

        idle = (await api.post("/threads", json={"metadata": {"graph_id": "echo"}})).json()
        update = {"values": {"messages": [{"role": "user", "content": "noted"}]}}
        response = await api.post(f"/threads/{idle['thread_id']}/state", json=update)
        assert response.is_success, response.text
        saves = ("threadline_checkpoint_save_seconds_count", ())
        assert (await scrape(api))[saves] >= 1, "a state update saves through this process"

        deployment.worker(api_process)
        for thread_id, run in zip(threads, created, strict=True):
            await finished(api, thread_id, run["run_id"])
        samples = await scrape(api)
        assert runs(samples, "success") == 3 and samples[("threadline_queue_depth", ())] == 0
        latency = ("threadline_run_duration_seconds_count", (("status", "success"),))
        await eventually(lambda: _value(api, latency, 3), "run latencies", timeout=15)


async def _value(
    api: httpx.AsyncClient, key: tuple[str, tuple[tuple[str, str], ...]], value: float
) -> bool:
    return (await scrape(api)).get(key) == value


def records(process: Process) -> list[dict[str, str]]:
    """The process's log lines, each of which must be one JSON object."""
    parsed = [json.loads(line) for line in process.lines()]
    for record in parsed:
        assert {"time", "level", "logger", "message"} <= record.keys(), record
    return parsed


async def test_logs_are_json_lines_tagged_with_the_thread_of_a_request(
    deployment: Deployment,
) -> None:
    [api_process], [worker] = deployment.start(apis=1, workers=1)
    async with client(api_process.url) as api:
        thread_id = await new_thread(api)
        run = await create_run(api, thread_id, assistant_id="ticker", input={"n": 2, "delay": 0})
        await finished(api, thread_id, run["run_id"])
    api_process.stop()
    worker.stop()
    requests = [r for r in records(api_process) if r["logger"] == "uvicorn.access"]
    about_thread = [r for r in requests if f"/threads/{thread_id}/" in r["message"]]
    assert about_thread and all(r["thread_id"] == thread_id for r in about_thread)
    assert all("thread_id" not in r for r in requests if "/threads/" not in r["message"])
    assert any(r["logger"] == "app.worker" for r in records(worker))


async def test_what_a_run_logs_carries_its_run_and_thread_ids(deployment: Deployment) -> None:
    [api_process], [worker] = deployment.start(apis=1, workers=1)
    async with client(api_process.url) as api:
        thread_id = await new_thread(api)
        run = await create_run(api, thread_id, assistant_id="ticker", input={"n": 2, "delay": 0})
        await finished(api, thread_id, run["run_id"])
    worker.stop()
    ticks = [r for r in records(worker) if r["message"].startswith("tick ")]
    assert len(ticks) == 2
    assert all((r.get("run_id"), r.get("thread_id")) == (run["run_id"], thread_id) for r in ticks)


async def test_old_stream_events_are_cleaned_but_not_those_of_live_runs(
    deployment: Deployment, database_url: str
) -> None:
    deployment.environment = {"THREADLINE_EVENT_RETENTION_S": "2"}
    [api_process], _ = deployment.start(apis=1, workers=1)
    events = "SELECT count(*) FROM run_events WHERE run_id = %s"
    async with client(api_process.url) as api:
        live_thread, done_thread = await new_thread(api), await new_thread(api)
        live = await create_run(
            api, live_thread, assistant_id="ticker", input={"n": 40, "delay": 0.25}
        )
        done = await create_run(api, done_thread, assistant_id="echo", input=said("hi"))
        await finished(api, done_thread, done["run_id"])
        [(recorded,)] = await sql(database_url, events, [done["run_id"]])
        assert recorded > 0

        db = Database(database_url)
        try:
            assert await clean_events(db, timedelta(0)) == recorded
        finally:
            await db.close()
        assert await sql(database_url, events, [done["run_id"]]) == [(0,)]
        [(kept,)] = await sql(database_url, events, [live["run_id"]])
        assert kept > 0, "a live run's stream stays whole"

        later = await create_run(api, done_thread, assistant_id="echo", input=said("again"))
        await finished(api, done_thread, later["run_id"])

        async def cleaned() -> bool:
            return await sql(database_url, events, [later["run_id"]]) == [(0,)]

        await eventually(cleaned, "the server to clean events past their retention", 10)
        first = "SELECT min(seq) FROM run_events WHERE run_id = %s"
        assert await sql(database_url, first, [live["run_id"]]) == [(0,)]
