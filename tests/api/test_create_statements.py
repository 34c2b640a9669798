"""What creating a run costs the database, on both dialects: a run that starts at once on
an idle thread is one update of the thread (which also reads its owner, metadata and
active runs) and the run's insert. Every statement there is a round trip on the path to
the run's first token; other processes hear of the run with its first events."""

from __future__ import annotations

import json
from typing import Any

import httpx
from sqlalchemy import event

from app.config import Settings
from app.main import create_app
from tests.api.conftest import ServeApp
from tests.api.graphs import GRAPHS

# Statements of the server's own tables and notifications (not the run's checkpoints).
WATCHED = ("UPDATE threads", "SELECT threads", "INSERT INTO threads", "INSERT INTO runs")


async def test_a_run_on_an_idle_thread_is_created_in_two_statements(
    serve_app: ServeApp, database_url: str
) -> None:
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8))
    url = serve_app(app)
    engine = app.state.ctx.db.engine.sync_engine
    body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        text = " ".join(statement.split())
        if text.startswith(WATCHED) or "pg_notify" in text:
            seen.append(text)

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        thread_id = (await client.post("/threads", json={})).json()["thread_id"]
        (await client.post(f"/threads/{thread_id}/runs/wait", json=body)).raise_for_status()
        event.listen(engine, "before_cursor_execute", record)
        try:
            created = await client.post(f"/threads/{thread_id}/runs", json=body)
        finally:
            event.remove(engine, "before_cursor_execute", record)
        created.raise_for_status()
        await client.get(f"/threads/{thread_id}/runs/{created.json()['run_id']}/join")
    assert [s.split(" (")[0].split(" SET")[0] for s in seen] == [
        "UPDATE threads",
        "INSERT INTO runs",
    ], seen
