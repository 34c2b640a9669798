"""Every table grows linearly with a conversation: a turn late in a long chat writes no
more than a turn early in it, in bytes the database counts (`tests.written`)."""

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.checkpoint.chat import turn_texts
from tests.pg import URL_VARIABLE, throwaway_cluster
from tests.written import bytes_written

TURNS = 300
WINDOW = 50


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """On PostgreSQL, a database in a cluster of the test's own: the write-ahead log counts
    the writes of every database in the cluster, and the session's cluster holds the
    databases of earlier tests, which autovacuum goes on analysing meanwhile."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
        return
    if os.environ.get(URL_VARIABLE):
        pytest.skip(f"counts a whole cluster's writes: needs its own cluster, not {URL_VARIABLE}")
    with throwaway_cluster() as cluster:
        yield cluster.create_database("growth")


@pytest.mark.slow
async def test_a_long_chat_writes_no_more_per_turn(server: str, database_url: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        thread = (await client.post("/threads", json={})).json()["thread_id"]
        # What the user says; the echo graph says it back.
        said = [human for human, _ in turn_texts(TURNS + 1)]

        async def turn(n: int) -> None:
            sent = {"messages": [{"role": "user", "content": said[n]}]}
            answer = await client.post(
                f"/threads/{thread}/runs/wait", json={"assistant_id": "echo", "input": sent}
            )
            assert answer.status_code == 200, answer.text
            assert len(answer.json()["messages"]) == 2 * (n + 1)

        await turn(0)  # the schema's first rows and the server's first statements
        with bytes_written(database_url) as written:
            marks = [written()]
            for n in range(1, TURNS + 1):
                await turn(n)
                marks.append(written())
    first = (marks[WINDOW] - marks[0]) / WINDOW
    last = (marks[TURNS] - marks[TURNS - WINDOW]) / WINDOW
    print(f"bytes written per turn: turns 1-{WINDOW} {first:,.0f}, last {WINDOW} {last:,.0f}")
    assert last <= 1.5 * first, (first, last)
