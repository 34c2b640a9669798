"""Store items with a time to live (`ttl` on put, as langgraph-sdk and a graph's
`store.aput(..., ttl=)` send it): gone for reads once it runs out, deleted by the sweep,
given all of it again by a read unless `refresh_ttl` is false. On SQLite and PostgreSQL;
times are moved in the database rather than waited for."""

import json
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from langgraph_sdk import get_client

from app.config import Settings
from app.db.models import StoreItemRow
from app.main import create_app
from tests.api.conftest import ServeApp
from tests.helpers import database_execute, database_rows, eventually, new_thread

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


async def expiry(database_url: str, key: str) -> tuple[float | None, datetime | None] | None:
    rows = await database_rows(
        database_url,
        sa.select(StoreItemRow.ttl_minutes, StoreItemRow.expires_at).where(StoreItemRow.key == key),
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def expire_at(database_url: str, key: str, when: datetime) -> None:
    await database_execute(
        database_url,
        sa.update(StoreItemRow).where(StoreItemRow.key == key).values(expires_at=when),
    )


def close_to(when: datetime | None, expected: datetime) -> bool:
    assert when is not None
    return abs(when.replace(tzinfo=UTC) - expected) < timedelta(seconds=30)


async def test_items_live_their_time_and_reads_renew_it(
    serve_app: ServeApp, database_url: str
) -> None:
    graphs = json.dumps({"memory": "tests.api.context_graph:graph"})
    settings = Settings(database_url=database_url, graphs=graphs, ttl_sweep_s=0.05)
    client = get_client(url=serve_app(create_app(settings)))
    await client.store.put_item(["notes"], "brief", {"v": 1}, ttl=60)
    await client.store.put_item(["notes"], "kept", {"v": 2})
    minutes, until = await expiry(database_url, "brief")
    assert minutes == 60 and close_to(until, datetime.now(UTC) + timedelta(minutes=60))
    assert await expiry(database_url, "kept") == (None, None)

    # A read gives the item all its time again, unless asked not to.
    soon = datetime.now(UTC) + timedelta(minutes=1)
    await expire_at(database_url, "brief", soon)
    await client.store.get_item(["notes"], "brief", refresh_ttl=False)
    await client.store.search_items(["notes"], refresh_ttl=False)
    assert close_to((await expiry(database_url, "brief"))[1], soon)
    await client.store.search_items(["notes"])
    assert close_to(
        (await expiry(database_url, "brief"))[1], datetime.now(UTC) + timedelta(hours=1)
    )
    await expire_at(database_url, "brief", soon)
    assert (await client.store.get_item(["notes"], "brief"))["value"] == {"v": 1}
    assert close_to(
        (await expiry(database_url, "brief"))[1], datetime.now(UTC) + timedelta(hours=1)
    )

    # Put again without a ttl, it stays.
    await client.store.put_item(["notes"], "brief", {"v": 3})
    assert await expiry(database_url, "brief") == (None, None)

    # Run out, it is gone for reads at once, and the sweep deletes it.
    await client.store.put_item(["old"], "gone", {"v": 4}, ttl=5)
    await expire_at(database_url, "gone", LONG_AGO)
    assert await client.store.get_item(["old"], "gone") is None
    assert (await client.store.search_items(["old"]))["items"] == []
    assert ["old"] not in (await client.store.list_namespaces())["namespaces"]

    async def swept() -> bool:
        return await expiry(database_url, "gone") is None

    await eventually(swept, "the sweep to delete the expired item")
    assert await expiry(database_url, "kept") == (None, None)

    # A graph's `store.aput(..., ttl=)` gives the item its time to live too.
    thread_id = await new_thread(client)
    context = {"user_name": "ally", "remember_for": 30}
    await client.runs.wait(thread_id, "memory", input={"notes": []}, context=context)
    minutes, until = await expiry(database_url, "last")
    assert minutes == 30 and close_to(until, datetime.now(UTC) + timedelta(minutes=30))
