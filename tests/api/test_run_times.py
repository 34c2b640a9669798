"""An ended run's row keeps the times that still say something: no lease once it ended,
no start time unless it was delayed (revision 0021)."""

import json
from datetime import timedelta
from typing import Any

import httpx
import sqlalchemy as sa

from alembic import command
from app.config import Settings
from app.db.migrations import SERVER, migrate
from app.db.models import UTCDateTime
from app.main import create_app
from engine.checkpoint.sql.migrations import run_alembic
from tests.api.conftest import serving
from tests.api.graphs import GRAPHS
from tests.helpers import database_rows, said

TIMES = sa.table(
    "runs",
    *(sa.column(name) for name in ("run_id", "status", "worker_id", "attempt")),
    *(
        sa.column(name, UTCDateTime())
        for name in ("not_before", "lease_expires_at", "created_at", "updated_at")
    ),
)


async def run_times(database_url: str) -> dict[str, Any]:
    """Each run's row, by its id (as text)."""
    return {str(row.run_id): row for row in await database_rows(database_url, sa.select(TIMES))}


async def test_an_ended_run_keeps_no_lease_and_a_start_time_only_when_delayed(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2)
    body = {"assistant_id": "echo", "input": said("hi")}
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as api:
            thread_id = (await api.post("/threads", json={})).json()["thread_id"]
            at_once = (await api.post(f"/threads/{thread_id}/runs", json=body)).json()
            delayed = (
                await api.post(f"/threads/{thread_id}/runs", json={**body, "after_seconds": 1})
            ).json()
            for run in (at_once, delayed):
                await api.get(f"/threads/{thread_id}/runs/{run['run_id']}/join")
            before = (await api.get(f"/threads/{thread_id}/runs")).content
    rows = await run_times(database_url)
    now, later = rows[at_once["run_id"]], rows[delayed["run_id"]]
    assert now.status == later.status == "success"
    assert now.not_before is None and now.lease_expires_at is None
    assert later.not_before == later.created_at + timedelta(seconds=1)
    assert later.lease_expires_at is None and later.updated_at >= later.not_before
    assert now.worker_id and later.worker_id  # which worker ran it stays
    assert now.attempt == later.attempt == 1

    await run_alembic(database_url, command.downgrade, "0020", history=SERVER)
    rows = await run_times(database_url)
    assert rows[at_once["run_id"]].not_before == rows[at_once["run_id"]].created_at
    assert rows[delayed["run_id"]].not_before == later.not_before
    await migrate(database_url)
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as api:
            assert (await api.get(f"/threads/{thread_id}/runs")).content == before
