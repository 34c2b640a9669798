"""A run row keeps of its request only what differs from the defaults, deflated
(revision 0019), and the API shows its `kwargs` whole, as before."""

import json
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from alembic import command
from app.config import Settings
from app.db.migrations import SERVER, migrate
from app.db.models import RunRow
from app.db.packed import PACKED, unpack_json
from app.main import create_app
from app.services.runs.kwargs import DEFAULTS
from engine.checkpoint.sql.migrations import run_alembic
from tests.api.conftest import serving
from tests.api.graphs import GRAPHS
from tests.helpers import client, database_rows, joined_runs, new_thread, said


async def test_a_run_shows_every_field_and_stores_the_chosen_ones(
    server: str, database_url: str
) -> None:
    api = client(server)
    thread_id = await new_thread(api)
    run = await api.runs.create(
        thread_id, "echo", input=said("hi"), stream_mode=["values", "updates"], durability="sync"
    )
    assert (await api.runs.join(thread_id, run["run_id"]))["messages"][-1]["content"]
    (shown,) = await api.runs.list(thread_id)
    assert shown["kwargs"] == run["kwargs"]
    picked = await api.runs.list(thread_id, select=["run_id", "status"])
    assert picked == [{"run_id": run["run_id"], "status": "success"}]
    async with httpx.AsyncClient(base_url=server) as http:
        unknown = await http.get(f"/threads/{thread_id}/runs", params={"select": "color"})
        assert unknown.status_code == 422 and "select" in unknown.text
    kwargs = shown["kwargs"]
    assert set(kwargs) == set(DEFAULTS)
    assert kwargs["input"] == said("hi")
    assert kwargs["stream_mode"] == ["values", "updates"]
    assert kwargs["durability"] == "sync"
    assert kwargs["stream_subgraphs"] is False and kwargs["on_disconnect"] == "continue"
    assert kwargs["webhook"] is None and kwargs["config"] is None

    query = sa.select(RunRow.kwargs).where(RunRow.run_id == shown["run_id"])
    [(stored,)] = await database_rows(database_url, query)
    # Kept: what the client chose (not `checkpoint_id`: the tree reads its absence as null).
    assert set(stored) == {"input", "stream_mode", "durability"}
    assert {**DEFAULTS, **stored} == kwargs


async def stored_kwargs(database_url: str) -> list[Any]:
    """The runs' `kwargs` column as the database holds it, oldest run first."""
    query = sa.text("SELECT kwargs FROM runs ORDER BY created_at, run_id")
    return [kwargs for (kwargs,) in await database_rows(database_url, query)]


async def test_kwargs_are_deflated_and_revision_0019_turns_them_back_into_json(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2)
    words = "Remind me to water the plants on Saturday morning, and to call my sister."
    body = {"assistant_id": "echo", "input": said(words), "stream_mode": ["updates"]}
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as api:
            thread_id, _ = await joined_runs(api, body)
            before = (await api.get(f"/threads/{thread_id}/runs")).content
    packed = await stored_kwargs(database_url)
    assert [bytes(data)[:1] for data in packed] == [PACKED, PACKED]
    chosen = {"input": said(words), "stream_mode": ["updates"]}
    assert [unpack_json(bytes(data)) for data in packed] == [chosen, chosen]
    text = json.dumps(chosen, separators=(",", ":")).encode()
    assert all(len(data) < len(text) * 0.75 for data in packed), (len(packed[0]), len(text))

    await run_alembic(database_url, command.downgrade, "0018", history=SERVER)
    json_column = await stored_kwargs(database_url)  # PostgreSQL's driver decodes json
    assert [d if type(d) is dict else json.loads(d) for d in json_column] == [chosen, chosen]
    await migrate(database_url)
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as api:
            assert (await api.get(f"/threads/{thread_id}/runs")).content == before


@pytest.mark.filterwarnings("ignore:`checkpoint_during` is deprecated:DeprecationWarning")
async def test_checkpoint_during_is_the_older_name_of_durability(server: str) -> None:
    api = client(server)
    lengths = {}
    for during, durability, expected in (
        (False, None, "exit"),
        (True, None, "async"),
        (False, "sync", "sync"),
    ):
        thread_id = await new_thread(api)
        run = await api.runs.create(
            thread_id, "echo", input=said("hi"), checkpoint_during=during, durability=durability
        )
        assert run["kwargs"]["durability"] == expected
        await api.runs.join(thread_id, run["run_id"])
        lengths[expected] = len(await api.threads.get_history(thread_id, limit=100))
    # Only the end is saved without checkpoints during the run.
    assert lengths["exit"] == 1 < lengths["async"] == lengths["sync"]


async def test_the_engines_own_configurable_keys_are_refused(server: str) -> None:
    """`__pregel_*` keys carry the engine's objects (a node-finished callback, the
    runtime): from JSON they are refused with 422 naming them, for runs, crons and
    assistants, and nothing is written; but a run drops those LangGraph's RemoteGraph
    forwards."""
    api = client(server)
    thread_id = await new_thread(api)
    config = {"configurable": {"user": "ann", "__pregel_node_finished": "x"}}
    async with httpx.AsyncClient(base_url=server) as http:
        for path, body in [
            (f"/threads/{thread_id}/runs/wait", {"assistant_id": "echo", "input": said("hi")}),
            (f"/threads/{thread_id}/runs", {"assistant_id": "echo", "input": said("hi")}),
            (f"/threads/{thread_id}/runs/crons", {"assistant_id": "echo", "schedule": "* * * * *"}),
            ("/assistants", {"graph_id": "echo"}),
        ]:
            refused = await http.post(path, json={**body, "config": config})
            assert refused.status_code == 422, (path, refused.text)
            assert "__pregel_node_finished" in refused.text
            # A context's keys reach the run's configurable too (as LangGraph's server
            # copies them there): refused the same (every run failed on them).
            context = {"__pregel_node_finished": 1}
            refused = await http.post(path, json={**body, "context": context})
            assert refused.status_code == 422, (path, refused.text)
            assert "context keys" in refused.text
    assert await api.runs.list(thread_id) == []
    # Those LangGraph's RemoteGraph forwards from its caller's config are dropped: the
    # engine sets its own.
    forwarded = {"user": "ann", "__pregel_resuming": True, "__pregel_durability": "sync"}
    done = await api.runs.wait(
        thread_id, "echo", input=said("hi"), config={"configurable": forwarded}
    )
    assert "__error__" not in done, done
