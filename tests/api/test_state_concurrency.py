"""State updates of one thread sent at once take turns: each acknowledged update lands
on the head the one before it left, so the head holds them all (as LangGraph's server
does), within a process and, on PostgreSQL, across two servers sharing the database."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import httpx

from app.config import Settings
from app.main import create_app
from tests.api.graphs import GRAPHS
from tests.helpers import ServeApp, new_thread

UPDATES = 10


async def test_concurrent_updates_all_land_on_the_head(
    serve_app: ServeApp, database_url: str
) -> None:
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8)
    # SQLite serves one process; PostgreSQL, here two.
    servers = [serve_app(create_app(settings))]
    if not database_url.startswith("sqlite"):
        servers.append(serve_app(create_app(settings)))
    apis = [httpx.AsyncClient(base_url=url, timeout=30) for url in servers]
    try:
        thread_id = await new_thread(apis[0])
        ran = await apis[0].post(
            f"/threads/{thread_id}/runs/wait", json={"assistant_id": "slow", "input": {}}
        )
        assert ran.json()["log"] == ["step", "step2"], ran.text
        answers = await asyncio.gather(
            *(
                apis[i % len(apis)].post(
                    f"/threads/{thread_id}/state",
                    json={"values": {"log": [str(i)]}, "as_node": "step2"},
                )
                for i in range(UPDATES)
            )
        )
        assert [a.status_code for a in answers] == [200] * UPDATES, [a.text for a in answers]
        state = (await apis[-1].get(f"/threads/{thread_id}/state")).json()
        assert state["values"]["log"][:2] == ["step", "step2"]
        assert sorted(state["values"]["log"][2:]) == sorted(str(i) for i in range(UPDATES))
        history = (await apis[0].post(f"/threads/{thread_id}/history", json={"limit": 100})).json()
        updates = [s for s in history if s["metadata"]["source"] == "update"]
        written = {a.json()["checkpoint"]["checkpoint_id"] for a in answers}
        assert {s["checkpoint"]["checkpoint_id"] for s in updates} == written
        # One chain: each update's parent is the one before it, none a sibling of another.
        parents = Counter(s["parent_checkpoint"]["checkpoint_id"] for s in updates)
        assert len(parents) == UPDATES and set(parents.values()) == {1}
        thread = (await apis[0].get(f"/threads/{thread_id}")).json()
        assert thread["status"] == "idle" and thread["values"] == state["values"]
    finally:
        for api in apis:
            await api.aclose()
