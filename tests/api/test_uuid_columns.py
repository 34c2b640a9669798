"""Revision 0014: the ids of threads, runs, run events and reminders are PostgreSQL's own
`uuid` (16 bytes, not 37 as text); SQLite keeps text. A database written before it reads
the same after it, and takes new turns."""

import json

import httpx
import sqlalchemy as sa

from alembic import command
from app.config import Settings
from app.db.migrations import SERVER, migrate
from app.main import create_app
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import run_alembic
from tests.api.graphs import GRAPHS
from tests.helpers import joined_runs, serving

ID_COLUMNS = {
    "threads": {"thread_id", "checkpoint_id"},
    "runs": {"run_id", "thread_id", "assistant_id", "checkpoint_id"},
    "run_events": {"run_id", "checkpoint_id"},
    "reminders": {"thread_id", "run_id"},
}
BODY = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}


async def id_types(database_url: str) -> set[str]:
    """The types the database gives the id columns (one name when they all agree)."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:

            def types(sync: sa.Connection) -> set[str]:
                inspector = sa.inspect(sync)
                return {
                    str(column["type"]).lower()
                    for table, names in ID_COLUMNS.items()
                    for column in inspector.get_columns(table)
                    if column["name"] in names
                }

            return await conn.run_sync(types)
    finally:
        await engine.dispose()


async def reads(client: httpx.AsyncClient, thread_id: str, run_ids: list[str]) -> list[bytes]:
    """What a client reads of the thread and its runs: the thread, its history, its runs,
    each run's row, result and replayed stream."""
    paths = [f"/threads/{thread_id}", f"/threads/{thread_id}/runs"]
    for run_id in run_ids:
        run = f"/threads/{thread_id}/runs/{run_id}"
        paths += [run, f"{run}/join", f"{run}/stream"]
    found = [(await client.get(path)).content for path in paths]
    history = await client.post(f"/threads/{thread_id}/history", json={"limit": 10})
    searched = await client.post("/threads/search", json={"ids": [thread_id]})
    return [*found, history.content, searched.content]


async def test_ids_are_uuids_and_a_database_of_text_ids_reads_the_same(database_url: str) -> None:
    postgres = database_url.startswith("postgresql")
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2)
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            thread_id, run_ids = await joined_runs(client, BODY)
            before = await reads(client, thread_id, run_ids)
    assert await id_types(database_url) == ({"uuid"} if postgres else {"varchar(36)"})

    await run_alembic(database_url, command.downgrade, "0013", history=SERVER)
    assert await id_types(database_url) == {"varchar(36)"}
    await migrate(database_url)
    assert await id_types(database_url) == ({"uuid"} if postgres else {"varchar(36)"})

    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert await reads(client, thread_id, run_ids) == before
            answer = await client.post(f"/threads/{thread_id}/runs/wait", json=BODY)
            assert answer.status_code == 200
            assert len(answer.json()["messages"]) == 6
