"""A due reminder with two worker processes, one killed while it says the reminder: the
other takes the delivery run over and the reminder is said once, seen by a reader of the
thread's stream through the API process."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.helpers import follow_thread
from tests.multiprocess.client import client, eventually, get_json, new_thread, said, sql
from tests.multiprocess.topology import Deployment

pytestmark = pytest.mark.slow

TEXT = "stretch my legs and drink a glass of water before the call with Sam"
SAID = f"⏰ Reminder: {TEXT}."


async def test_a_reminder_is_said_once_though_its_worker_dies_saying_it(
    deployment: Deployment, database_url: str
) -> None:
    # The agent says the reminder word by word, slowly enough to be killed halfway.
    deployment.environment = {"THREADLINE_SCRIPTED_PACE_S": "0.4"}
    apis, workers = deployment.start(apis=1, workers=2)
    async with client(apis[0].url) as api:
        thread_id = await new_thread(api)
        ask = said(f"Remind me to {TEXT} in 3 seconds")
        asked = await api.post(
            f"/threads/{thread_id}/runs/wait", json={"assistant_id": "agent", "input": ask}
        )
        assert asked.json()["__interrupt__"]
        events: list[tuple[str, Any]] = []
        reader = asyncio.create_task(
            follow_thread(api, thread_id, events, timeout_s=120, stream_mode="values")
        )
        try:
            approve = {"assistant_id": "agent", "command": {"resume": "yes"}}
            await api.post(f"/threads/{thread_id}/runs/wait", json=approve)

            async def saying() -> list[tuple[Any, ...]]:
                return await sql(
                    database_url,
                    "SELECT r.run_id, r.worker_id FROM runs r JOIN reminders m "
                    "ON m.run_id = r.run_id WHERE r.status = 'running'",
                )

            [(run_id, worker_id)] = await eventually(saying, "the reminder's delivery run")
            victim = deployment.by_pid(int(worker_id.split(":")[1]))
            await asyncio.sleep(1.0)  # a few words in
            victim.kill()

            async def finished() -> bool:
                run = await get_json(api, f"/threads/{thread_id}/runs/{run_id}")
                return run["status"] == "success"

            await eventually(finished, "the delivery run to finish elsewhere", timeout=60)

            async def seen() -> bool:
                values = [data for name, data in events if name == "values"]
                return bool(values) and values[-1]["messages"][-1]["content"] == SAID

            await eventually(seen, "the thread's stream to show the reminder")
        finally:
            reader.cancel()

        survivor = next(w for w in workers if w is not victim)
        [(attempt, last_worker)] = await sql(
            database_url, "SELECT attempt, worker_id FROM runs WHERE run_id = %s", [run_id]
        )
        assert attempt == 2 and int(last_worker.split(":")[1]) == survivor.pid
        state = await get_json(api, f"/threads/{thread_id}/state")
        contents = [m["content"] for m in state["values"]["messages"]]
        assert contents.count(SAID) == 1 and contents[-1] == SAID
        [reminder] = await get_json(api, "/reminders")
        assert reminder["status"] == "delivered" and reminder["delivered_at"]
        delivering = await sql(
            database_url,
            "SELECT count(*) FROM runs WHERE metadata->>'reminder_id' = %s",
            [reminder["id"]],
        )
        assert delivering == [(1,)]
