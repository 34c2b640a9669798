"""A graph that changes earlier messages in place and writes them back: the run's answer,
the thread's state, and what a new server reads from the database all hold the change,
as LangGraph's savers store it (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json

from langgraph_sdk import get_client

from app.config import Settings
from app.main import create_app
from tests.api.graphs import GRAPHS
from tests.helpers import ServeApp, new_thread, said


async def test_messages_changed_in_place_are_stored(
    server: str, serve_app: ServeApp, database_url: str
) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    for text in ("my card is 4111", "and my pin is 1234"):
        await client.runs.wait(thread_id, "redactor", input=said(text))
    answer = await client.runs.wait(thread_id, "redactor", input=said("redact"))
    expected = ["[redacted]"] * 4 + ["redact"]
    assert [m["content"] for m in answer["messages"]] == expected  # type: ignore[index]

    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8)
    restarted = get_client(url=serve_app(create_app(settings)))  # caches of its own
    for reader in (client, restarted):
        state = await reader.threads.get_state(thread_id)
        assert [m["content"] for m in state["values"]["messages"]] == expected
    await restarted.runs.wait(thread_id, "redactor", input=said("hello"))
    state = await client.threads.get_state(thread_id)
    assert [m["content"] for m in state["values"]["messages"]] == [
        *expected,
        "hello",
        "You said: hello",
    ]
