"""Revision 0008 moves a database whose rows copy states (as the server wrote them up to
revision 0007: a thread's values, each run's result, each `values` event whole) to rows
that refer to checkpoints, where the checkpoint is known for sure; the server reads both
kinds the same."""

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import sqlalchemy as sa

from alembic import command
from app.config import Settings
from app.db.migrations import SERVER, migrate
from app.graphs import system_assistant_id
from app.jsonable import jsonable, to_json
from app.main import create_app
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import CHECKPOINT, run_alembic
from engine.checkpoint.sql.saver import SQLSaver
from tests.api.conftest import serving
from tests.api.graphs import GRAPHS, asker, echo

# The tables as revision 0007 left them (the columns these rows fill).
STAMP = sa.DateTime(timezone=True)
THREADS = sa.table(
    *("threads", sa.column("thread_id"), sa.column("metadata", sa.JSON)),
    *(sa.column("status"), sa.column("values", sa.JSON), sa.column("interrupts", sa.JSON)),
    *(sa.column("owner"), sa.column("created_at", STAMP), sa.column("updated_at", STAMP)),
)
RUNS = sa.table(
    *("runs", sa.column("run_id"), sa.column("thread_id"), sa.column("assistant_id")),
    *(sa.column("status"), sa.column("metadata", sa.JSON), sa.column("multitask_strategy")),
    *(sa.column("kwargs", sa.JSON), sa.column("result", sa.JSON), sa.column("owner")),
    *(sa.column("attempt"), sa.column("not_before", STAMP)),
    *(sa.column("created_at", STAMP), sa.column("updated_at", STAMP)),
)
EVENTS = sa.table(
    *("run_events", sa.column("run_id"), sa.column("seq"), sa.column("event")),
    *(sa.column("data"), sa.column("created_at", STAMP)),
)
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


class OldServer:
    """Runs graphs on threads and writes their rows as the server did at revision 0007."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)
        self.saver = SQLSaver(self.engine)

    async def thread(self, graph_id: str) -> str:
        thread_id = str(uuid.uuid4())
        metadata = {"graph_id": graph_id, "assistant_id": system_assistant_id(graph_id)}
        async with self.engine.begin() as conn:
            await conn.execute(
                THREADS.insert().values(
                    thread_id=thread_id,
                    metadata=metadata,
                    status="idle",
                    values=None,
                    interrupts={},
                    owner="local",
                    created_at=NOW,
                    updated_at=NOW,
                )
            )
        return thread_id

    async def run(self, thread_id: str, graph_id: str, given: Any) -> str:
        """One run, streamed in values mode: its row, its events and its thread's row."""
        graph = {"echo": echo, "asker": asker}[graph_id].compile(checkpointer=self.saver)
        run_id = str(uuid.uuid4())
        config = {"configurable": {"thread_id": thread_id}, "metadata": {"run_id": run_id}}
        events = [("metadata", to_json({"run_id": run_id, "attempt": 1}))]
        await graph.arun(
            given,
            config,
            lambda part: events.append(("values", to_json(part))),
            stream_mode="values",
        )
        state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        values = jsonable(state.values)
        interrupts = {t.id: jsonable(t.interrupts) for t in state.tasks if t.interrupts}
        result = dict(values)
        if interrupts:
            result["__interrupt__"] = [i for items in interrupts.values() for i in items]
        async with self.engine.begin() as conn:
            await conn.execute(
                RUNS.insert().values(
                    run_id=run_id,
                    thread_id=thread_id,
                    assistant_id=system_assistant_id(graph_id),
                    status="success",
                    metadata={},
                    multitask_strategy="enqueue",
                    kwargs={"input": given, "stream_mode": ["values"]},
                    result=result,
                    owner="local",
                    attempt=1,
                    not_before=NOW,
                    created_at=NOW,
                    updated_at=NOW,
                )
            )
            await conn.execute(
                EVENTS.insert(),
                [
                    {"run_id": run_id, "seq": seq, "event": e, "data": d, "created_at": NOW}
                    for seq, (e, d) in enumerate(events)
                ],
            )
            await conn.execute(
                THREADS.update()
                .where(THREADS.c.thread_id == thread_id)
                .values(
                    status="interrupted" if state.next else "idle",
                    values=values,
                    interrupts=interrupts,
                )
            )
        return run_id


async def moved(url: str) -> tuple[int, int]:
    """How many runs and threads refer to a checkpoint."""
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            runs = await conn.scalar(
                sa.text("SELECT count(*) FROM runs WHERE checkpoint_id IS NOT NULL")
            )
            threads = await conn.scalar(
                sa.text("SELECT count(*) FROM threads WHERE checkpoint_id IS NOT NULL")
            )
    finally:
        await engine.dispose()
    return int(runs or 0), int(threads or 0)


async def test_rows_written_before_read_the_same_once_moved(database_url: str) -> None:
    await run_alembic(database_url, command.upgrade, "head", history=CHECKPOINT)
    await run_alembic(database_url, command.upgrade, "0007", history=SERVER)
    old = OldServer(database_url)
    try:
        chat = await old.thread("echo")
        runs = {}
        for text in ("hello", "and again"):
            said = {"messages": [{"role": "user", "content": text}]}
            runs[await old.run(chat, "echo", said)] = chat
        asked = await old.thread("asker")
        runs[await old.run(asked, "asker", {"question": "name?"})] = asked
        async with old.engine.connect() as conn:
            kept = {
                run_id: (result, events)
                for run_id, result in await conn.execute(sa.select(RUNS.c.run_id, RUNS.c.result))
                if (
                    events := list(
                        await conn.execute(
                            sa.select(EVENTS.c.data).where(EVENTS.c.run_id == run_id)
                        )
                    )
                )
            }
            values = dict(
                list(await conn.execute(sa.select(THREADS.c.thread_id, THREADS.c["values"])))
            )
    finally:
        await old.engine.dispose()

    await migrate(database_url)
    # The chat's runs and its idle thread; the asker's run and thread keep their question.
    assert await moved(database_url) == (2, 1)
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2)
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            for thread_id, thread_values in values.items():
                assert (await client.get(f"/threads/{thread_id}")).json()["values"] == thread_values
            for run_id, (result, events) in kept.items():
                thread_id = runs[run_id]
                joined = await client.get(f"/threads/{thread_id}/runs/{run_id}/join")
                assert joined.json() == result
                replay = await client.get(
                    f"/threads/{thread_id}/runs/{run_id}/stream", headers={"Last-Event-ID": "-1"}
                )
                data = [line[6:] for line in replay.text.splitlines() if line.startswith("data: ")]
                assert data == [d for (d,) in events]
            tree = (await client.get(f"/threads/{chat}/tree")).json()
            assert [t["reply"]["content"] for t in tree["turns"]] == [
                "You said: hello",
                "You said: and again",
            ]


async def test_revision_0011_drops_the_copied_reply_and_the_tree_stays(database_url: str) -> None:
    """A database as revision 0010 left it (each run's row copying its last message), then
    upgraded: the column goes, and the tree reads the same replies from the checkpoints."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2)
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            chat = (await client.post("/threads", json={})).json()["thread_id"]
            for text in ("hello", "and again"):
                body = {
                    "assistant_id": "echo",
                    "input": {"messages": [{"type": "human", "content": text}]},
                }
                (await client.post(f"/threads/{chat}/runs/wait", json=body)).raise_for_status()
            tree = (await client.get(f"/threads/{chat}/tree")).json()
    replies = {run: t["reply"] for t in tree["turns"] for run in t["run_ids"]}
    assert [r["content"] for r in replies.values()] == ["You said: hello", "You said: and again"]

    await run_alembic(database_url, command.downgrade, "0010", history=SERVER)
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            for run_id, reply in replies.items():
                await conn.execute(
                    sa.text("UPDATE runs SET last_message = :m WHERE run_id = :r").bindparams(
                        sa.bindparam("m", type_=sa.JSON)
                    ),
                    {"m": reply, "r": run_id},
                )
    finally:
        await engine.dispose()
    await migrate(database_url)

    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("runs")}
            )
    finally:
        await engine.dispose()
    assert "last_message" not in columns
    with serving(create_app(settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get(f"/threads/{chat}/tree")).json() == tree
