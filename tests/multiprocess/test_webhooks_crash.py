"""A webhook whose worker dies before the receiver answered: the delivery is recorded in
the database, so the worker started after it sends it again, with the same delivery id."""

from __future__ import annotations

import asyncio

import pytest

from tests.multiprocess.client import client, eventually, finished, new_thread, said, sql
from tests.multiprocess.topology import Deployment
from tests.webhook_receiver import receiving

pytestmark = pytest.mark.slow


async def test_a_delivery_cut_by_a_crash_is_sent_after_the_restart(
    deployment: Deployment, database_url: str
) -> None:
    deployment.environment = {
        "THREADLINE_WEBHOOK_ALLOW": "127.0.0.1",
        "THREADLINE_WEBHOOK_TIMEOUT_S": "2",
    }
    with receiving(hang_first=True) as receiver:
        apis, [worker] = deployment.start(apis=1, workers=1)
        async with client(apis[0].url) as api:
            thread_id = await new_thread(api)
            created = await api.post(
                f"/threads/{thread_id}/runs",
                json={"assistant_id": "echo", "input": said("hi"), "webhook": receiver.url},
            )
            run_id = created.json()["run_id"]
            assert (await finished(api, thread_id, run_id))["status"] == "success"
            [first] = await asyncio.to_thread(receiver.wait_for, 1)
            worker.kill()  # the receiver has not answered
            deployment.worker(apis[0])

            calls = await asyncio.to_thread(receiver.wait_for, 2)
            assert [c.headers["x-threadline-delivery"] for c in calls] == [
                first.headers["x-threadline-delivery"]
            ] * 2
            assert calls[1].payload["run_id"] == run_id

            async def delivered() -> list[tuple[str, int]]:
                rows = await sql(
                    database_url,
                    "SELECT status, attempts FROM webhook_deliveries WHERE run_id = %s",
                    [run_id],
                )
                return rows if rows and rows[0][0] == "delivered" else []

            assert await eventually(delivered, "the delivery to be recorded") == [("delivered", 2)]
