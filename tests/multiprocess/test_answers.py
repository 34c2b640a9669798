"""`runs/wait` through an API process whose runs a worker process executes: the worker
sends the answer with the notification of the run's end, and the API answers with it,
reading neither the run's row nor its checkpoint. An answer too big for a notification
is read as before. Either way the body is the one a later join reads. Runs'
notifications go to the processes that serve clients only: the worker does not listen."""

from __future__ import annotations

import httpx
import psycopg
import pytest

from app.runs.notify import ANSWER_PREFIX, RUNS_CHANNEL
from tests.multiprocess.client import client, new_thread, said, sql
from tests.multiprocess.topology import Deployment

pytestmark = pytest.mark.slow


async def test_a_waited_run_is_answered_from_the_notification_of_its_end(
    deployment: Deployment, database_url: str
) -> None:
    [api_process], _ = deployment.start(apis=1, workers=1)
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as listener:
        await listener.execute(f"LISTEN {RUNS_CHANNEL}")
        async with client(api_process.url) as api:
            thread_id = await new_thread(api)
            waited: list[httpx.Response] = []
            for text in ("hello", "a long one " * 1000):  # the second, some 22 KB of answer
                body = {"assistant_id": "echo", "input": said(text)}
                waited.append(await api.post(f"/threads/{thread_id}/runs/wait", json=body))
            joined = []
            for response in waited:
                response.raise_for_status()
                path = response.headers["Content-Location"]
                joined.append(await api.get(f"{path}/join"))
        answers = {}
        async for note in listener.notifies(timeout=0.5):
            if note.payload.startswith(ANSWER_PREFIX):
                run_id, _, answer = note.payload[len(ANSWER_PREFIX) :].partition(" ")
                answers[run_id] = answer
    # Only the process that serves clients listens for runs' notifications.
    listening = await sql(
        database_url,
        "SELECT query, count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%' GROUP BY 1",
    )
    assert sorted(listening) == [("LISTEN threadline", 1), ("LISTEN threadline_runs", 1)]
    run_ids = [r.headers["Content-Location"].rsplit("/", 1)[1] for r in waited]
    assert answers == {run_ids[0]: waited[0].text}
    assert [r.content for r in joined] == [r.content for r in waited]
    assert "You said: hello" in waited[0].text
    assert "You said: a long one" in waited[1].text
