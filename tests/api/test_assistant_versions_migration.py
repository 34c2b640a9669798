"""A database written before assistant versions were kept (revision 0021) gets one
version per assistant on upgrade: its fields as they are, at the version it is at."""

import json

import httpx
from langgraph_sdk import get_client

from alembic import command
from app.config import Settings
from app.db.migrations import SERVER, migrate
from app.main import create_app
from engine.checkpoint.sql.migrations import run_alembic
from tests.api.conftest import serving
from tests.api.graphs import GRAPHS


async def test_existing_assistants_keep_their_current_version(database_url: str) -> None:
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS))
    with serving(create_app(settings)) as url:
        client = get_client(url=url)
        made = await client.assistants.create("echo", metadata={"v": 1}, name="Bot")
        changed = await client.assistants.update(
            made["assistant_id"], context={"tone": "dry"}, metadata={"v": 2}
        )
        await client.assistants.update(made["assistant_id"], name="Bot 3")
        three = await client.assistants.set_latest(made["assistant_id"], 2)

    await run_alembic(database_url, command.downgrade, "0021", history=SERVER)
    await migrate(database_url)
    with serving(create_app(settings)) as url:
        client = get_client(url=url)
        [kept] = await client.assistants.get_versions(made["assistant_id"])
        assert kept["version"] == 2 and kept["created_at"] == three["updated_at"]
        assert {k: kept[k] for k in ("graph_id", "name", "config", "context", "metadata")} == {
            k: changed[k] for k in ("graph_id", "name", "config", "context", "metadata")
        }
        assert [v["version"] for v in await client.assistants.get_versions("echo")] == [1]
        onwards = await client.assistants.update(made["assistant_id"], name="Next")
        assert onwards["version"] == 3
        async with httpx.AsyncClient(base_url=url) as http:
            found = await http.post(f"/assistants/{made['assistant_id']}/versions", json={})
        assert found.headers["x-pagination-total"] == "2"
