"""Crons on a deployment of one API and two worker processes, through langgraph-sdk: both
workers look for due crons every second, and every occurrence runs once. Occurrences
come as time passes (a real minute), as the test moves them into the past (many due at
once, for the workers to race on), and after the workers were stopped through several
occurrences (those missed run once)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime

import psycopg
import pytest
from langgraph_sdk import get_client

from tests.multiprocess.client import eventually, said, sql
from tests.multiprocess.topology import Deployment, Process

pytestmark = pytest.mark.slow

CRONS = 8  # of each kind: on a thread, and each run on a new thread
SETTLE_S = 3.0  # long enough for a second start of any occurrence to show
YEARLY = "0 0 1 1 *"  # no occurrence comes by itself while the test runs


async def runs_by_cron(database_url: str) -> Counter[str]:
    """How many runs each cron started, all ended (success)."""
    rows = await sql(database_url, "SELECT metadata, status FROM runs")
    counted: Counter[str] = Counter()
    for metadata, status in rows:
        cron_id = (metadata if isinstance(metadata, dict) else json.loads(metadata)).get("cron_id")
        if cron_id is not None:
            assert status in ("pending", "running", "success"), status
            counted[cron_id] += status == "success"
    return counted


async def each_ran(database_url: str, cron_ids: list[str], times: int) -> None:
    """Wait until every cron has `times` finished runs; then none has more."""

    async def done() -> bool:
        counted = await runs_by_cron(database_url)
        return all(counted[c] >= times for c in cron_ids)

    await eventually(done, f"every cron to run {times} times", timeout=90)
    await asyncio.sleep(SETTLE_S)
    assert await runs_by_cron(database_url) == dict.fromkeys(cron_ids, times)


async def make_all_due(database_url: str, ago: str) -> None:
    """As if every cron's next occurrence had come `ago` (and no process had run it)."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute("UPDATE crons SET next_run_at = now() - %s::interval", (ago,))


def fired(worker: Process) -> int:
    return sum("the run due at" in line for line in worker.lines())


async def test_every_occurrence_runs_once_across_two_workers(
    deployment: Deployment, database_url: str
) -> None:
    [api], workers = deployment.start(apis=1, workers=2)
    client = get_client(url=api.url)
    # All made within one minute, so that their first occurrence is the same.
    second = datetime.now(UTC).second
    if second > 45:
        await asyncio.sleep(61 - second)
    cron_ids = []
    for index in range(CRONS):
        thread_id = (await client.threads.create())["thread_id"]
        on_thread = await client.crons.create_for_thread(
            thread_id, "echo", schedule="* * * * *", input=said(f"thread {index}")
        )
        own_threads = await client.crons.create(
            "echo", schedule="* * * * *", input=said(f"new {index}"), on_run_completed="keep"
        )
        cron_ids += [on_thread["cron_id"], own_threads["cron_id"]]

    # The first occurrence comes with the next minute; then they are made yearly.
    await each_ran(database_url, cron_ids, 1)
    for cron_id in cron_ids:
        await client.crons.update(cron_id, schedule=YEARLY)
    # Many due at once, for both workers at the same time.
    for times in (2, 3, 4):
        await make_all_due(database_url, "1 second")
        await each_ran(database_url, cron_ids, times)
    assert sum(fired(worker) for worker in workers) == 4 * len(cron_ids)

    # The workers stop; three hours of occurrences pass. Started again, each cron runs
    # once for all it missed, then waits for its next occurrence.
    for worker in workers:
        worker.stop()
    await make_all_due(database_url, "3 hours")
    restarted = [deployment.worker(api) for _ in range(2)]
    await each_ran(database_url, cron_ids, 5)
    assert sum(fired(worker) for worker in restarted) == len(cron_ids)
    for cron in await client.crons.search(limit=100):
        assert datetime.fromisoformat(cron["next_run_date"]) > datetime.now(UTC)

    # Each run executed once, and the runs on each thread took turns.
    executions = Counter(
        json.loads(line)["run_id"] for line in deployment.trace.read_text().splitlines()
    )
    assert len(executions) == 5 * len(cron_ids) and set(executions.values()) == {1}
    for cron in await client.crons.search(limit=100):
        if cron["thread_id"] is not None:
            state = await client.threads.get_state(cron["thread_id"])
            assert len(state["values"]["messages"]) == 2 * 5
