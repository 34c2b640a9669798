"""A run row keeps of its request only what differs from the defaults, and the API shows
its `kwargs` whole, as before."""

import sqlalchemy as sa

from app.db.models import RunRow
from app.services.runs.kwargs import DEFAULTS
from engine.checkpoint.sql.connect import create_engine
from tests.helpers import client, new_thread, said


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
    kwargs = shown["kwargs"]
    assert set(kwargs) == set(DEFAULTS)
    assert kwargs["input"] == said("hi")
    assert kwargs["stream_mode"] == ["values", "updates"]
    assert kwargs["durability"] == "sync"
    assert kwargs["stream_subgraphs"] is False and kwargs["on_disconnect"] == "continue"
    assert kwargs["webhook"] is None and kwargs["config"] is None

    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            stored = await connection.scalar(
                sa.select(RunRow.kwargs).where(RunRow.run_id == shown["run_id"])
            )
    finally:
        await engine.dispose()
    # Kept: what the client chose (not `checkpoint_id`: the tree reads its absence as null).
    assert set(stored) == {"input", "stream_mode", "durability"}
    assert {**DEFAULTS, **stored} == kwargs
