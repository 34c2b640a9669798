"""What creating a run costs the database: on PostgreSQL a turn on an idle thread is one
statement in autocommit mode (it marks the thread busy and inserts the run, started at
once); on SQLite, and on PostgreSQL when that does not apply, a read of the thread
(its owner, metadata and active runs), its update and the run's insert. Every round
trip there is on the path to the run's first token; other processes hear of the run
with its first events. Waiting on a queued turn reads nothing of the run; waiting on a
run executed in another process reads its row once, when it has ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
from sqlalchemy import event

from app.config import Settings
from app.main import create_app
from engine.checkpoint.sql.saver import SQLSaver
from tests.api.graphs import GRAPHS
from tests.helpers import ServeApp

# Statements of the server's own tables and notifications (not the run's checkpoints).
WATCHED = (
    "UPDATE threads",
    "SELECT threads",
    "INSERT INTO threads",
    "INSERT INTO runs",
    "WITH busy AS (UPDATE threads",
)


async def test_a_chat_turn_is_created_in_one_statement_or_two(
    serve_app: ServeApp, database_url: str
) -> None:
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8))
    url = serve_app(app)
    engine = app.state.services.db.engine.sync_engine
    running = app.state.services.runs.pool.running
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if asyncio.current_task() in running.values():
            return  # the run's own, which may end before its creation has answered
        text = " ".join(statement.split())
        watched = [prefix for prefix in WATCHED if text.startswith(prefix)][:1]
        seen.extend(watched)
        # Only the creation's own notifications: a fast run's events may be flushed (and
        # announced) by the broker's task before the creation has answered.
        if watched and "pg_notify" in text:
            seen.append("pg_notify")

    def body(assistant: str) -> dict[str, Any]:
        return {
            "assistant_id": assistant,
            "input": {"messages": [{"role": "user", "content": "hi"}]},
        }

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        thread_id = (await client.post("/threads", json={})).json()["thread_id"]

        async def turn(assistant: str) -> list[str]:
            seen.clear()
            event.listen(engine, "before_cursor_execute", record)
            try:
                created = await client.post(f"/threads/{thread_id}/runs", json=body(assistant))
            finally:
                event.remove(engine, "before_cursor_execute", record)
            created.raise_for_status()
            await client.get(f"/threads/{thread_id}/runs/{created.json()['run_id']}/join")
            return list(seen)

        first = await turn("echo")
        again = await turn("echo")
        other = await turn("asker")
    if app.state.services.db.dialect == "postgresql":
        assert first == again == other == ["WITH busy AS (UPDATE threads"]
    else:
        assert first == again == other == ["SELECT threads", "UPDATE threads", "INSERT INTO runs"]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        metadata = (await client.get(f"/threads/{thread_id}")).json()["metadata"]
    assert metadata == {"graph_id": "asker", "assistant_id": metadata["assistant_id"]}


async def test_a_queued_chat_turn_is_created_in_one_statement_too(
    serve_app: ServeApp, database_url: str
) -> None:
    """A turn that waits for a worker (none here) on PostgreSQL: the same one statement,
    which also checks the queue limit and announces the run. On SQLite: the general path
    (the thread, the queue limit's count, the thread's update, the run)."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), run_workers=False)
    app = create_app(settings)
    url = serve_app(app)
    body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        thread_id = (await client.post("/threads", json={})).json()["thread_id"]
        with statements(app, requests_only=True) as seen:
            created = await client.post(f"/threads/{thread_id}/runs", json=body)
        assert created.status_code == 200
        assert created.json()["status"] == "pending"
        thread = (await client.get(f"/threads/{thread_id}")).json()
    assert thread["status"] == "busy"
    assert thread["metadata"]["graph_id"] == "echo"
    writes = [
        s for s in seen if not s.startswith(("BEGIN", "COMMIT", "ROLLBACK", "SELECT assistants"))
    ]
    if app.state.services.db.dialect == "postgresql":
        [statement] = writes
        assert statement.startswith("WITH busy AS (UPDATE threads") and "pg_notify" in statement
    else:
        assert [s.split(" ")[0] for s in writes] == ["SELECT", "SELECT", "UPDATE", "INSERT"]


@contextlib.contextmanager
def statements(app: Any, *, requests_only: bool = False) -> Iterator[list[str]]:
    """Every statement the app's engine runs within the block, whitespace folded; with
    `requests_only`, not those of the server's background loops (a cron or webhook poll
    may fall within the block)."""
    engine = app.state.services.db.engine.sync_engine
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        task = asyncio.current_task()
        if not (requests_only and task and task.get_name().startswith("threadline: ")):
            seen.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def test_a_queued_chat_turn_waits_without_reading_its_status(
    serve_app: ServeApp, database_url: str
) -> None:
    """`runs/wait` on a turn queued behind another thread's run (one worker): the waiter
    saw the run pending when it made it, and is woken when the run starts here, so it
    never reads the run's status (it did once a queued turn)."""
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=1))
    url = serve_app(app)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        busy, chat = [(await client.post("/threads", json={})).json()["thread_id"] for _ in "ab"]
        slow = {"assistant_id": "slow", "input": {"delay": 0.3}}
        (await client.post(f"/threads/{busy}/runs", json=slow)).raise_for_status()
        body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}
        with statements(app) as seen:
            answer = await client.post(f"/threads/{chat}/runs/wait", json=body)
    assert answer.json()["messages"][-1]["content"] == "You said: hi"
    # A worker claimed it: it was queued.
    assert any(s.startswith("UPDATE runs SET status") and "attempt" in s for s in seen)
    assert not [s for s in seen if s.startswith("SELECT runs.status")]


async def test_a_flush_of_events_is_one_statement_on_postgresql(
    serve_app: ServeApp, database_url: str
) -> None:
    """The events of a run that outlasts a flush interval are recorded while it runs: on
    PostgreSQL in one statement with their notification (no BEGIN, no COMMIT, no notify
    of its own); on SQLite in a transaction."""
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=2))
    url = serve_app(app)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        thread_id = (await client.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "slow", "input": {"delay": 0.2}}
        with statements(app) as seen:
            answer = await client.post(f"/threads/{thread_id}/runs/wait", json=body)
    assert answer.json()["log"] == ["step", "step2"]
    flushes = [s for s in seen if "INSERT INTO run_events" in s]
    assert len(flushes) >= 2  # during the run, and with its outcome
    if app.state.services.db.dialect == "postgresql":
        assert all(s.startswith("WITH ") and "pg_notify" in s for s in flushes)
        assert not [s for s in seen if s.startswith("SELECT pg_notify")]
    else:
        assert all(s.startswith("INSERT INTO run_events") for s in flushes)


async def test_a_waiter_reads_a_run_that_ended_elsewhere_once(
    serve_app: ServeApp, database_url: str
) -> None:
    """`runs/wait` on an API process that executes no runs. On PostgreSQL the worker
    sends the answer with the notification of the run's end: the API reads neither the
    run's row nor its checkpoint. On SQLite (no notifications across processes) the check
    that finds the run ended reads its row whole, and the answer comes from that row (it
    read the status, then the row). Neither process reads the graph's own assistant from
    the database."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS))
    api = create_app(settings.model_copy(update={"run_workers": False}))
    worker = create_app(settings)
    url = serve_app(api)
    serve_app(worker)
    body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        chat = (await client.post("/threads", json={})).json()["thread_id"]
        with statements(api) as seen, statements(worker) as executed:
            answer = await client.post(f"/threads/{chat}/runs/wait", json=body)
    assert answer.json()["messages"][-1]["content"] == "You said: hi"
    run_reads = [s for s in seen if s.startswith("SELECT runs.")]
    if api.state.services.db.dialect == "postgresql":
        assert not run_reads
        assert not [s for s in seen if "FROM checkpoint_threads" in s]
    else:
        whole = "SELECT runs.run_id, runs.thread_id"
        assert run_reads and all(s.startswith(whole) for s in run_reads)
    assert not [s for s in [*seen, *executed] if s.startswith("SELECT assistants")]


async def test_a_turn_starts_without_reading_the_head_its_creation_saw(
    serve_app: ServeApp, database_url: str
) -> None:
    """The admission of a turn also reads its thread's checkpoint head (on PostgreSQL in
    its one statement, on SQLite in its transaction); the run, whose saver holds the
    thread at that head (or which saw none yet), starts without reading it. A write from
    another process before the turn moves the head: that run reads it and answers from
    it."""
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8))
    url = serve_app(app)

    async def turn(client: httpx.AsyncClient, chat: str, said: str) -> tuple[list[Any], int]:
        body = {"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": said}]}}
        with statements(app) as seen:
            answer = await client.post(f"/threads/{chat}/runs/wait", json=body)
        assert answer.status_code == 200, answer.text
        reads = [s for s in seen if s.startswith("SELECT checkpoint_threads.id")]
        return answer.json()["messages"], len(reads)

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        chat = (await client.post("/threads", json={})).json()["thread_id"]
        assert (await turn(client, chat, "one"))[1] == 0  # no checkpoints yet
        assert (await turn(client, chat, "two"))[1] == 0

        elsewhere = SQLSaver.from_url(database_url)
        try:
            graph = app.state.services.graphs.get("echo").copy({"checkpointer": elsewhere})
            added = {"messages": [{"role": "user", "content": "from elsewhere"}]}
            await graph.aupdate_state({"configurable": {"thread_id": chat}}, added)
        finally:
            await elsewhere.aclose()
        messages, reads = await turn(client, chat, "three")
    assert reads == 1
    said = [m["content"] for m in messages if m["type"] == "human"]
    assert said == ["one", "two", "from elsewhere", "three"]


async def test_a_claimed_turn_starts_without_reading_the_head_its_claim_saw(
    serve_app: ServeApp, database_url: str
) -> None:
    """A worker's claim of a queued turn also returns its thread's checkpoint head: the
    run, whose saver holds the thread at that head, starts without reading it."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS))
    url = serve_app(create_app(settings.model_copy(update={"run_workers": False})))
    worker = create_app(settings)
    serve_app(worker)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        chat = (await client.post("/threads", json={})).json()["thread_id"]
        for said in ("one", "two"):
            body = {
                "assistant_id": "echo",
                "input": {"messages": [{"role": "user", "content": said}]},
            }
            with statements(worker) as executed:
                answer = await client.post(f"/threads/{chat}/runs/wait", json=body)
            assert answer.json()["messages"][-1]["content"] == f"You said: {said}"
    assert not [s for s in executed if s.startswith("SELECT checkpoint_threads.id")]


async def test_a_thread_is_created_in_one_statement(serve_app: ServeApp, database_url: str) -> None:
    """`POST /threads` inserts the row in one statement that adds nothing when the id is
    in use (on PostgreSQL in autocommit mode: no BEGIN, no COMMIT); only then is the
    thread there read, to answer it (`if_exists: do_nothing`) or refuse (409)."""
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(GRAPHS)))
    url = serve_app(app)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        with statements(app, requests_only=True) as seen:
            created = await client.post("/threads", json={"metadata": {"n": 1}})
        thread_id = created.json()["thread_id"]
        with statements(app, requests_only=True) as again:
            same = await client.post(
                "/threads", json={"thread_id": thread_id, "if_exists": "do_nothing"}
            )
        taken = await client.post("/threads", json={"thread_id": thread_id})
    written = [s for s in seen if s.split(" ")[0] not in ("BEGIN", "COMMIT", "SELECT")]
    assert [s.split(" (")[0] for s in written] == ["INSERT INTO threads"]
    assert "ON CONFLICT" in written[0]
    if app.state.services.db.dialect == "postgresql":
        assert seen == written
    assert same.status_code == 200 and same.json()["metadata"] == {"n": 1}
    assert [s.split(" ")[0] for s in again if s.startswith(("INSERT", "SELECT"))] == [
        "INSERT",
        "SELECT",
    ]
    assert taken.status_code == 409
