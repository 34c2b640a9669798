"""What the database keeps of a run is references to checkpoints, not copies of states: a
stream replayed after a restart (nothing of it left in memory) is the live stream, byte
for byte, and threads, searches and results read the same before and after."""

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa

from alembic import command
from app.config import Settings
from app.db.migrations import SERVER, migrate
from app.main import create_app
from app.runs import broker
from app.runs.broker import recorded_events, unfolded_events
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import run_alembic
from tests.api.conftest import serving
from tests.api.graphs import GRAPHS
from tests.helpers import joined_runs

MODES = ["values", "updates", "messages-tuple"]


def frames(raw: bytes) -> list[bytes]:
    """The events of an SSE body, heartbeat comments left out."""
    return [f for f in raw.replace(b"\r\n", b"\n").split(b"\n\n") if f and not f.startswith(b":")]


def event_of(frame: bytes) -> bytes:
    """An SSE frame's event name."""
    return next(line for line in frame.split(b"\n") if line.startswith(b"event: "))[7:]


async def stream(client: httpx.AsyncClient, thread_id: str | None, body: dict[str, object]) -> str:
    """Run `body` on the thread (None: a stateless run), streamed and resumable; the run
    id (its stream is read whole, live)."""
    sent = {**body, "stream_mode": MODES, "stream_resumable": True}
    path = "/runs/stream" if thread_id is None else f"/threads/{thread_id}/runs/stream"
    async with client.stream("POST", path, json=sent) as response:
        assert response.status_code == 200
        _, _, thread, _, run_id = response.headers["content-location"].split("/")
        live[run_id] = frames(b"".join([chunk async for chunk in response.aiter_bytes()]))
        where[run_id] = thread
    return run_id


# Each streamed run's events as they came live, and its thread.
live: dict[str, list[bytes]] = {}
where: dict[str, str] = {}


async def reads(client: httpx.AsyncClient, runs: dict[str, str]) -> dict[str, bytes]:
    """What a client reads of the threads and their runs, as the server sent it."""
    found: dict[str, bytes] = {}
    for thread_id in set(runs.values()):
        found[thread_id] = (await client.get(f"/threads/{thread_id}")).content
    for run_id, thread_id in runs.items():
        found[run_id] = (await client.get(f"/threads/{thread_id}/runs/{run_id}/join")).content
    searched = await client.post("/threads/search", json={"limit": 10})
    found["search"] = searched.content
    by_values = await client.post("/threads/search", json={"values": {"question": "name?"}})
    found["search by values"] = by_values.content
    return found


async def recorded_as_checkpoints(database_url: str) -> int:
    """How many recorded events are references to checkpoints."""
    _, _, found = await rows_and_events(database_url)
    return sum(1 for *_, checkpoint_id in found if checkpoint_id is not None)


async def test_a_replay_after_a_restart_is_the_live_stream(database_url: str) -> None:
    live.clear()
    where.clear()
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8)
    runs: dict[str, str] = {}
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            chat = (await client.post("/threads", json={})).json()["thread_id"]
            for text in ("hello", "how are you?", "bye"):
                said = {"messages": [{"role": "user", "content": text}]}
                runs[await stream(client, chat, {"assistant_id": "echo", "input": said})] = chat
            waited = await client.post(
                f"/threads/{chat}/runs/wait",
                json={
                    "assistant_id": "echo",
                    "input": {"messages": [{"role": "user", "content": "!"}]},
                },
            )
            wait_run = waited.headers["content-location"].rsplit("/", 1)[-1]
            runs[wait_run] = chat
            asker = (await client.post("/threads", json={})).json()["thread_id"]
            asked = {"assistant_id": "asker", "input": {"question": "name?"}}
            runs[await stream(client, asker, asked)] = asker
            answered = {"assistant_id": "asker", "command": {"resume": "bob"}}
            runs[await stream(client, asker, answered)] = asker
            # A stateless run deletes its thread's checkpoints: its events keep their values.
            said = {"messages": [{"role": "user", "content": "once"}]}
            await stream(client, None, {"assistant_id": "echo", "input": said})
            nested = (await client.post("/threads", json={})).json()["thread_id"]
            inside = {"assistant_id": "nested", "input": {"question": "inner?"}}
            runs[await stream(client, nested, {**inside, "stream_subgraphs": True})] = nested
            before = await reads(client, runs)

    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            for run_id, events in live.items():
                replay = await client.get(
                    f"/threads/{where[run_id]}/runs/{run_id}/stream",
                    headers={"Last-Event-ID": "-1"},
                )
                assert frames(replay.content) == events
            after = await reads(client, runs)
    assert after == before
    # Two `values` events a turn (after the input, after the reply) of the echo chat.
    assert await recorded_as_checkpoints(database_url) >= 2 * 4
    assert before[wait_run] == waited.content
    assert json.loads(before[chat])["values"]["messages"][-1]["content"] == "You said: !"
    assert json.loads(before["search by values"])[0]["thread_id"] == asker
    # The interrupt's values event, and its thread, kept its question.
    interrupted = [
        f for f in live[next(r for r in runs if runs[r] == asker)] if b"__interrupt__" in f
    ]
    assert interrupted


async def rows_and_events(database_url: str) -> tuple[int, int, list[tuple[object, ...]]]:
    """How many rows of `run_events` and how many run rows (`runs.events`, revision
    0017) record events, and every event they record, in order."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {
                    table: {c["name"] for c in sa.inspect(sync).get_columns(table)}
                    for table in ("run_events", "runs")
                }
            )
            more = "more" if "more" in columns["run_events"] else "NULL"
            # The ids as text, as the server reads them: PostgreSQL keeps them as `uuid`.
            ids = "CAST(run_id AS TEXT)", "CAST(checkpoint_id AS TEXT)"
            query = f"SELECT {ids[0]}, seq, event, data, {ids[1]}, {more} FROM run_events"
            rows = list(await conn.execute(sa.text(query)))
            folded = []
            if "events" in columns["runs"]:
                query = (
                    "SELECT CAST(run_id AS TEXT), attempt, events, CAST(checkpoint_id AS TEXT)"
                    " FROM runs WHERE events IS NOT NULL"
                )
                folded = list(await conn.execute(sa.text(query)))
    finally:
        await engine.dispose()
    found = [(r[0], *e) for r in rows for e in recorded_events(r[0], r[1:])]
    found += [(r[0], *e) for r in folded for e in unfolded_events(*r)]
    return len(rows), len(folded), sorted(found)


async def ended_by_reference(database_url: str) -> int:
    """How many run rows keep a `values` event of the checkpoint they ended at as `""`."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            found = await conn.execute(sa.text("SELECT events FROM runs WHERE events IS NOT NULL"))
            return sum("" in json.loads(events) for events in found.scalars())
    finally:
        await engine.dispose()


async def short_forms(database_url: str) -> int:
    """How many events rows keep short: a `metadata` event as its attempt, a `values`
    event in `more` as its checkpoint's id alone (revision 0015)."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            query = "SELECT event, data, more FROM run_events"
            rows = list(await conn.execute(sa.text(query)))
    finally:
        await engine.dispose()
    metadata = sum(1 for event, data, _ in rows if event == "metadata" and data.isdigit())
    values = sum(type(item) is str for *_, more in rows for item in json.loads(more or "[]"))
    return metadata + values


async def test_events_recorded_together_are_one_row_and_replay_from_inside_it(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn's events (its metadata and two `values` events) are recorded in one row, in
    their short forms, in the run's own row; a rejoin from any of them replays the rest
    as it was. Revision 0017's downgrade moves them to `run_events`, 0015's writes the
    long forms, 0012's a row each, and the upgrade reads those as before."""
    # No flush while a turn runs (a slow machine's turn may outlast the interval): each
    # turn's events are all recorded with its outcome.
    monkeypatch.setattr(broker, "FLUSH_EVERY_S", 600.0)
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2)
    body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}

    async def replays(client: httpx.AsyncClient, thread_id: str, run_id: str) -> list[list[bytes]]:
        path = f"/threads/{thread_id}/runs/{run_id}/stream"
        return [
            frames((await client.get(path, headers={"Last-Event-ID": str(after)})).content)
            for after in (-1, 0, 1, 2)
        ]

    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            thread_id, run_ids = await joined_runs(client, body)
            before = [await replays(client, thread_id, r) for r in run_ids]
    for whole, *after in before:
        assert [len(f) for f in after] == [len(whole) - n for n in (1, 2, 3)]
        assert after == [whole[1:], whole[2:], whole[3:]]
    rows, folded, recorded = await rows_and_events(database_url)
    assert (rows, folded, len(recorded)) == (0, 2, 6)
    # A turn's last `values` event is the checkpoint its row ended at (revision 0020);
    # the downgrade writes its id back.
    assert await ended_by_reference(database_url) == 2
    await run_alembic(database_url, command.downgrade, "0019", history=SERVER)
    assert await ended_by_reference(database_url) == 0
    assert await rows_and_events(database_url) == (0, 2, recorded)

    await run_alembic(database_url, command.downgrade, "0016", history=SERVER)
    assert await rows_and_events(database_url) == (2, 0, recorded)
    assert await short_forms(database_url) == 6
    await run_alembic(database_url, command.downgrade, "0014", history=SERVER)
    assert await short_forms(database_url) == 0
    assert await rows_and_events(database_url) == (2, 0, recorded)
    await run_alembic(database_url, command.downgrade, "0011", history=SERVER)
    assert await rows_and_events(database_url) == (6, 0, recorded)
    await migrate(database_url)
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert [await replays(client, thread_id, r) for r in run_ids] == before


async def test_events_kept_in_a_run_row_follow_the_retention(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events a run's row keeps are replayed while the retention keeps events recorded
    when the run ended, and not after, as if deleted with `run_events`' old rows."""
    monkeypatch.setattr(broker, "FLUSH_EVERY_S", 600.0)  # all recorded with the end
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS))
    body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            thread_id, [run_id] = await joined_runs(client, body, runs=1)
            path = f"/threads/{thread_id}/runs/{run_id}/stream"
            replayed = frames((await client.get(path, headers={"Last-Event-ID": "-1"})).content)
            assert [event_of(f) for f in replayed] == [b"metadata", b"values", b"values"]
            engine = create_engine(database_url)
            try:
                async with engine.begin() as conn:
                    aged = "UPDATE runs SET updated_at = :at WHERE events IS NOT NULL"
                    await conn.execute(sa.text(aged), {"at": datetime.now(UTC) - timedelta(days=2)})
            finally:
                await engine.dispose()
            expired = await client.get(path, headers={"Last-Event-ID": "-1"})
            assert expired.status_code == 200
            assert frames(expired.content) == []
