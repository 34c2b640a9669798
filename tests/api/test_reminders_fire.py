"""Reminders that fire, over real HTTP on both dialects: a reminder due in two seconds is
said once in its thread by the agent, seen live by a reader of the thread's stream, and
`GET /reminders` shows when it was due and when it was said."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import insert

from app.db.models import ReminderRow, columns_of
from tests.helpers import database_execute, eventually, follow_thread, new_thread, said

TEXT = "stretch my legs"
SAID = f"⏰ Reminder: {TEXT}."


def reminder_texts(events: list[tuple[str, Any]]) -> tuple[str, list[str]]:
    """The reminder as streamed token by token, and the reminder messages in the last
    values event."""
    streamed = "".join(
        data[0]["content"]
        for name, data in events
        if name == "messages" and data[1].get("langgraph_node") == "remind"
    )
    values = [data for name, data in events if name == "values"]
    messages = values[-1]["messages"] if values else []
    return streamed, [m["content"] for m in messages if m.get("name") == "reminder"]


async def test_a_reminder_due_in_two_seconds_is_said_once_live(agent_server: str) -> None:
    async with httpx.AsyncClient(base_url=agent_server, timeout=30) as api:
        thread_id = await new_thread(api)
        asked = await api.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "agent", "input": said(f"Remind me to {TEXT} in 2 seconds")},
        )
        [question] = asked.json()["__interrupt__"]
        assert "That is " in question["value"]["action_requests"][0]["description"]

        events: list[tuple[str, Any]] = []
        reader = asyncio.create_task(follow_thread(api, thread_id, events))
        try:
            approved = await api.post(
                f"/threads/{thread_id}/runs/wait",
                json={"assistant_id": "agent", "command": {"resume": "yes"}},
            )
            assert approved.status_code == 200
            [reminder] = (await api.get("/reminders")).json()
            assert reminder["status"] == "scheduled" and reminder["delivered_at"] is None

            async def said_in_values() -> bool:
                return bool(reminder_texts(events)[1])

            await eventually(said_in_values, "the reminder in the thread's values")
            seen_at = datetime.now(UTC)
            streamed, in_values = reminder_texts(events)
            assert (streamed, in_values) == (SAID, [SAID])
            await asyncio.sleep(2.5)  # the scheduler polls every second: nothing more comes
        finally:
            reader.cancel()

        [reminder] = (await api.get("/reminders")).json()
        assert reminder["status"] == "delivered"
        due_at = datetime.fromisoformat(reminder["due_at"])
        delivered_at = datetime.fromisoformat(reminder["delivered_at"])
        assert due_at <= delivered_at <= seen_at, "said once due, and by the time it was seen"

        state = (await api.get(f"/threads/{thread_id}/state")).json()
        messages = state["values"]["messages"]
        assert [m["content"] for m in messages].count(SAID) == 1
        assert messages[-1] == {**messages[-1], "type": "ai", "name": "reminder", "content": SAID}
        runs = (await api.get(f"/threads/{thread_id}/runs")).json()
        delivering = [r for r in runs if r["metadata"].get("reminder_id") == reminder["id"]]
        assert [r["status"] for r in delivering] == ["success"]
        thread = (await api.get(f"/threads/{thread_id}")).json()
        assert thread["status"] == "idle"


async def test_a_client_sending_remind_no_reminder_has_nothing_said(agent_server: str) -> None:
    """`remind` is the server's path for a reminder that came due; a client that sends it
    an id of no reminder (not even a UUID) gets a run that says nothing, on either
    database (PostgreSQL refused such an id in SQL, and the run failed with its text)."""
    async with httpx.AsyncClient(base_url=agent_server, timeout=30) as api:
        thread_id = await new_thread(api)
        for reminder_id in (5, "not an id", "9c7e0f7e-0000-4000-8000-000000000000"):
            reminder = {"id": reminder_id, "text": "x", "due": "now"}
            command = {"goto": {"node": "remind", "input": reminder}}
            answer = await api.post(
                f"/threads/{thread_id}/runs/wait",
                json={"assistant_id": "agent", "command": command},
            )
            assert answer.status_code == 200 and "__error__" not in answer.json(), answer.text
            messages = answer.json().get("messages", [])
            assert [m for m in messages if m.get("name") == "reminder"] == []


async def test_a_deleted_threads_reminders_go_with_it(agent_server: str, database_url: str) -> None:
    """Deleting a thread deletes its reminders: one was listed `scheduled` for ever, and
    said in a new thread made under the same id. One whose thread went before that (a
    database of earlier versions) is marked undeliverable when due."""
    async with httpx.AsyncClient(base_url=agent_server, timeout=30) as api:
        thread_id = await new_thread(api)
        asked = await api.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "agent", "input": said(f"Remind me to {TEXT} in 1 hour")},
        )
        assert asked.json()["__interrupt__"]
        await api.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "agent", "command": {"resume": "yes"}},
        )
        [reminder] = (await api.get("/reminders")).json()
        assert reminder["status"] == "scheduled"
        assert (await api.delete(f"/threads/{thread_id}")).status_code == 204
        assert (await api.get("/reminders")).json() == []

        orphan = ReminderRow(
            reminder_id=str(uuid.uuid4()),
            owner=reminder["owner"],
            thread_id=str(uuid.uuid4()),
            text=TEXT,
            due="now",
            tool_call_id="orphan",
            created_at=datetime.now(UTC),
            due_at=datetime.now(UTC),
            status="scheduled",
        )
        await database_execute(database_url, insert(ReminderRow).values(**columns_of(orphan)))

        async def undeliverable() -> bool:
            return [r["status"] for r in (await api.get("/reminders")).json()] == ["undeliverable"]

        await eventually(undeliverable, "the orphan reminder marked undeliverable")
