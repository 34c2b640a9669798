"""The reminder agent at the graph level: compiled with InMemorySaver, driven like the server."""

import asyncio
import json
import re
from datetime import UTC, datetime, time, timedelta
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

from app.agents.reminder_store import InMemoryReminderStore, Reminder
from app.agents.reminders import InvalidResumeError, validate_resume
from engine import Command, Send
from tests.agents.helpers import CannedModel, ask, compile_agent, thread

REMIND = "Remind me to call mom tomorrow at 9"


async def nodes_run(agent: Any, input: Any, config: dict[str, Any]) -> list[str]:
    """The nodes that finished, in order, as the `updates` stream reports them."""
    names: list[str] = []
    async for update in agent.astream(input, config, stream_mode="updates"):
        names += [name for name in update if name != "__interrupt__"]
    return names


async def test_forecast_question(forecast_url: str) -> None:
    agent = compile_agent()
    result = await agent.ainvoke(ask("What's the weather in Paris tomorrow?"), thread())

    human, call, answer, reply = result["messages"]
    assert call.tool_calls == [
        {
            "name": "get_forecast",
            "args": {"city": "Paris", "day": "tomorrow"},
            "id": call.tool_calls[0]["id"],
            "type": "tool_call",
        }
    ]
    async with httpx.AsyncClient() as client:
        expected = (
            await client.get(forecast_url, params={"city": "Paris", "day": "tomorrow"})
        ).json()
    assert isinstance(answer, ToolMessage)
    assert answer.tool_call_id == call.tool_calls[0]["id"]
    assert answer.status == "success"
    assert json.loads(answer.text) == expected
    assert reply.text.startswith(f"The forecast for Paris tomorrow: {expected['summary']}, high ")
    assert (await agent.aget_state(thread())).next == ()


async def test_reminder_asks_first_with_the_hitl_shape(store: InMemoryReminderStore) -> None:
    agent = compile_agent(store=store)
    result = await agent.ainvoke(ask(REMIND), thread())

    call = result["messages"][-1].tool_calls[0]
    [question] = result["__interrupt__"]
    [request] = question.value["action_requests"]
    assert re.fullmatch(
        r"Set a reminder to call mom, due tomorrow at 9\. That is \w{3} \d+ \w{3} \d{4}, "
        r"09:00 UTC\.",
        request["description"],
    )
    assert question.value == {
        "action_requests": [
            {
                "name": "add_reminder",
                "args": {"text": "call mom", "due": "tomorrow at 9"},
                "description": request["description"],
            }
        ],
        "review_configs": [
            {"action_name": "add_reminder", "allowed_decisions": ["approve", "edit", "reject"]}
        ],
    }
    assert call["args"] == {"text": "call mom", "due": "tomorrow at 9"}
    state = await agent.aget_state(thread())
    assert state.next == ("ask_user",)
    assert state.interrupts == (question,)
    assert await store.list(owner="local") == []


@pytest.mark.parametrize("answer", [{"decisions": [{"type": "approve"}]}, "yes", " Y ", "Approve"])
async def test_reminder_approved(answer: Any, store: InMemoryReminderStore) -> None:
    agent = compile_agent(store=store)
    config = thread("t-approve", user_id="alice")
    first = await agent.ainvoke(ask(REMIND), config)
    call_id = first["messages"][-1].tool_calls[0]["id"]

    result = await agent.ainvoke(Command(resume=answer), config)

    [reminder] = await store.list(owner="alice")
    due_at = datetime.fromisoformat(reminder["due_at"])
    assert (due_at.time(), due_at.utcoffset()) == (time(9), timedelta(0))
    assert 0 < (due_at - datetime.now(UTC)).total_seconds() <= 48 * 3600
    assert _fields(reminder) == {
        "owner": "alice",
        "thread_id": "t-approve",
        "text": "call mom",
        "due": "tomorrow at 9",
        "due_at": reminder["due_at"],
        "status": "scheduled",
        "delivered_at": None,
        "tool_call_id": call_id,
    }
    tool_message, reply = result["messages"][-2:]
    assert tool_message.tool_call_id == call_id
    assert reply.text == "Done: I set a reminder to call mom (tomorrow at 9)."


async def test_reminder_edited(store: InMemoryReminderStore) -> None:
    agent = compile_agent(store=store)
    first = await agent.ainvoke(ask(REMIND), thread())
    call_id = first["messages"][-1].tool_calls[0]["id"]
    edit = {
        "type": "edit",
        "edited_action": {"name": "add_reminder", "args": {"text": "call dad", "due": "friday"}},
    }

    result = await agent.ainvoke(Command(resume={"decisions": [edit]}), thread())

    [reminder] = await store.list(owner="local")
    assert (reminder["text"], reminder["due"], reminder["tool_call_id"]) == (
        "call dad",
        "friday",
        call_id,
    )
    assert result["messages"][-1].text == "Done: I set a reminder to call dad (friday)."


@pytest.mark.parametrize(
    ("answer", "reply"),
    [
        (
            {"decisions": [{"type": "reject", "message": "I'll call her myself"}]},
            "OK, I did not set the reminder: I'll call her myself",
        ),
        ("no", "OK, I did not set the reminder."),
        ("N", "OK, I did not set the reminder."),
    ],
)
async def test_reminder_rejected(answer: Any, reply: str, store: InMemoryReminderStore) -> None:
    agent = compile_agent(store=store)
    first = await agent.ainvoke(ask(REMIND), thread())
    call_id = first["messages"][-1].tool_calls[0]["id"]

    assert await nodes_run(agent, Command(resume=answer), thread()) == ["ask_user", "model"]

    messages = (await agent.aget_state(thread())).values["messages"]
    declined, final = messages[-2:]
    assert isinstance(declined, ToolMessage)
    assert (declined.tool_call_id, declined.status) == (call_id, "error")
    assert declined.text.startswith("The user declined to run add_reminder.")
    assert final.text == reply
    assert await store.list(owner="local") == []


async def test_a_due_without_a_time_is_asked_for_on_the_card(store: InMemoryReminderStore) -> None:
    """The card asks when; approved as it is, the reminder is set without a time (and the
    model is told why), edited with a time, it is scheduled."""
    agent = compile_agent(store=store)
    first = await agent.ainvoke(ask("Remind me to pay rent on Friday"), thread("t1"))
    [request] = first["__interrupt__"][0].value["action_requests"]
    assert request["description"] == (
        'Set a reminder to pay rent, due on Friday. When is that? "on Friday" gives no time '
        'of day; give one, like "tomorrow at 9am" or "in 2 hours": edit it, or approve it '
        "without a time."
    )
    result = await agent.ainvoke(Command(resume="yes"), thread("t1"))
    tool_message = result["messages"][-2]
    assert json.loads(tool_message.text)["not_scheduled"].startswith('"on Friday" gives no time')
    [unscheduled] = await store.list(owner="local")
    assert (unscheduled["due_at"], unscheduled["status"]) == (None, "unscheduled")

    await agent.ainvoke(ask("Remind me to pay rent on Friday"), thread("t2"))
    edit = {
        "type": "edit",
        "edited_action": {
            "name": "add_reminder",
            "args": {"text": "pay rent", "due": "Friday at 9am"},
        },
    }
    await agent.ainvoke(Command(resume={"decisions": [edit]}), thread("t2"))
    scheduled = (await store.list(owner="local"))[-1]
    assert scheduled["status"] == "scheduled"
    assert datetime.fromisoformat(scheduled["due_at"]).strftime("%a %H:%M") == "Fri 09:00"


async def test_a_due_reminder_is_said_once_by_the_agent(store: InMemoryReminderStore) -> None:
    """What the server runs when a reminder comes due: the agent says it (streamed like
    any reply); a second run for the same reminder says nothing."""
    agent = compile_agent(store=store)
    config = thread("t-due", user_id="alice", run_id="run-1")
    await agent.ainvoke(ask("Remind me to stretch in 1 hour"), config)
    await agent.ainvoke(Command(resume="yes"), config)
    [reminder] = await store.list(owner="alice")
    due = {"id": reminder["id"], "text": reminder["text"], "due": reminder["due"]}

    parts = [
        part
        async for part in agent.astream(
            Command(goto=Send("remind", due)),
            thread("t-due", user_id="alice", run_id="run-2"),
            stream_mode="messages",
        )
    ]
    streamed = "".join(chunk.text for chunk, meta in parts if meta["langgraph_node"] == "remind")
    assert streamed == "⏰ Reminder: stretch."
    said = (await agent.aget_state(config)).values["messages"][-1]
    assert (said.type, said.name, said.text) == ("ai", "reminder", "⏰ Reminder: stretch.")
    [delivered] = await store.list(owner="alice")
    assert delivered["status"] == "delivered" and delivered["delivered_at"]

    again = thread("t-due", user_id="alice", run_id="run-3")
    assert await nodes_run(agent, Command(goto=Send("remind", due)), again) == ["remind"]
    messages = (await agent.aget_state(config)).values["messages"]
    assert [m.text for m in messages].count("⏰ Reminder: stretch.") == 1
    # Another user's run cannot say it.
    assert not await store.deliver(
        reminder_id=reminder["id"], owner="bob", thread_id="t-due", run_id="run-4"
    )


async def test_parallel_calls_run_in_one_step_then_model_once(
    forecast_url: str, store: InMemoryReminderStore
) -> None:
    agent = compile_agent(store=store)
    first = await agent.ainvoke(ask("weather in Paris and remind me to pack an umbrella"), thread())
    calls = first["messages"][-1].tool_calls
    assert [c["name"] for c in calls] == ["get_forecast", "add_reminder"]
    assert len(first["__interrupt__"][0].value["action_requests"]) == 1

    assert await nodes_run(agent, Command(resume="yes"), thread()) == [
        "ask_user",
        "tools",
        "tools",
        "model",
    ]

    history = [s async for s in agent.aget_state_history(thread())]
    assert ("tools", "tools") in [s.next for s in history]
    messages = (await agent.aget_state(thread())).values["messages"]
    assert {m.tool_call_id for m in messages if isinstance(m, ToolMessage)} == {
        c["id"] for c in calls
    }
    reply = messages[-1].text
    assert reply.startswith("The forecast for Paris today: ")
    assert reply.endswith("Done: I set a reminder to pack an umbrella.")
    assert len(await store.list(owner="local")) == 1


async def test_parallel_calls_without_reminders_need_no_review(forecast_url: str) -> None:
    agent = compile_agent()

    ran = await nodes_run(agent, ask("weather in Paris and weather in Rome tomorrow"), thread())

    assert ran == ["model", "tools", "tools", "model"]
    reply = (await agent.aget_state(thread())).values["messages"][-1].text
    assert "The forecast for Paris today: " in reply
    assert "The forecast for Rome tomorrow: " in reply


async def test_several_reminders_are_reviewed_in_one_interrupt(
    store: InMemoryReminderStore,
) -> None:
    calls = [
        {"name": "add_reminder", "args": {"text": "water plants"}, "id": "call-1"},
        {"name": "list_reminders", "args": {}, "id": "call-2"},
        {"name": "add_reminder", "args": {"text": "feed cat", "due": "at 6"}, "id": "call-3"},
    ]
    model = CannedModel(AIMessage(content="", tool_calls=calls), AIMessage(content="Noted."))
    agent = compile_agent(model, store=store)
    first = await agent.ainvoke(ask("a few things"), thread())
    assert [r["args"] for r in first["__interrupt__"][0].value["action_requests"]] == [
        {"text": "water plants"},
        {"text": "feed cat", "due": "at 6"},
    ]
    edit = {
        "type": "edit",
        "edited_action": {"name": "add_reminder", "args": {"text": "water ferns"}},
    }
    answer = {"decisions": [edit, {"type": "reject", "message": "the cat is fine"}]}

    assert await nodes_run(agent, Command(resume=answer), thread()) == [
        "ask_user",
        "tools",
        "tools",
        "model",
    ]

    assert [r["text"] for r in await store.list(owner="local")] == ["water ferns"]
    results = {m.tool_call_id: m for m in model.calls[1] if isinstance(m, ToolMessage)}
    assert json.loads(results["call-1"].text)["text"] == "water ferns"
    assert results["call-2"].status == "success"
    assert results["call-3"].artifact == {"declined": True, "message": "the cat is fine"}
    assert len(model.calls) == 2


@pytest.mark.parametrize(
    ("answer", "decisions"),
    [
        ("yes", [{"type": "approve"}] * 2),
        ("REJECT", [{"type": "reject", "message": None}] * 2),
        (
            {
                "decisions": [
                    {"type": "reject", "message": ""},
                    {"type": "edit", "edited_action": {"args": {"text": "x", "due": None}}},
                ]
            },
            [
                {"type": "reject", "message": None},
                {
                    "type": "edit",
                    "edited_action": {"name": "add_reminder", "args": {"text": "x", "due": None}},
                },
            ],
        ),
    ],
)
def test_validate_resume_normalises_decisions(answer: Any, decisions: list[Any]) -> None:
    assert validate_resume(answer, 2) == decisions


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("maybe", "resume with"),
        (42, "resume with"),
        ({"decisions": []}, "Expected 1 decision"),
        ({"decisions": [{"type": "delete"}]}, "type must be"),
        ({"decisions": [{"type": "edit"}]}, "an edit needs"),
        (
            {"decisions": [{"type": "edit", "edited_action": {"args": {"due": "now"}}}]},
            "text: Field required",
        ),
        ({"decisions": [{"type": "reject", "message": 7}]}, "must be a string"),
    ],
)
async def test_malformed_resume_fails_and_thread_stays_interrupted(
    answer: Any, error: str, store: InMemoryReminderStore
) -> None:
    agent = compile_agent(store=store)
    await agent.ainvoke(ask(REMIND), thread())
    before = await agent.aget_state(thread())

    with pytest.raises(InvalidResumeError, match=error):
        await agent.ainvoke(Command(resume=answer), thread())

    after = await agent.aget_state(thread())
    assert after.next == ("ask_user",)
    assert after.interrupts == before.interrupts
    assert after.config == before.config
    assert await store.list(owner="local") == []


async def test_resuming_the_same_approval_twice_sets_one_reminder(
    store: InMemoryReminderStore,
) -> None:
    agent = compile_agent(store=store)
    await agent.ainvoke(ask(REMIND), thread())
    asked = (await agent.aget_state(thread())).config

    first = await agent.ainvoke(Command(resume="yes"), thread())
    # Answer the same question again, from the same checkpoint: a fork.
    second = await agent.ainvoke(Command(resume="yes"), asked)

    assert first["messages"][-1].text == second["messages"][-1].text
    assert len(await store.list(owner="local")) == 1


class CrashAfterWrite(InMemoryReminderStore):
    """Writes, then dies once before the step is saved: the worst moment for a side effect."""

    def __init__(self) -> None:
        super().__init__()
        self.crashed = False

    async def add(self, **kwargs: Any) -> Reminder:
        reminder = await super().add(**kwargs)
        if not self.crashed:
            self.crashed = True
            raise ConnectionError("worker died")
        return reminder


async def test_rerun_after_a_crash_sets_one_reminder() -> None:
    store = CrashAfterWrite()
    agent = compile_agent(store=store)
    await agent.ainvoke(ask(REMIND), thread())

    with pytest.raises(ConnectionError):
        await agent.ainvoke(Command(resume="yes"), thread())
    assert (await agent.aget_state(thread())).next == ("tools",)
    result = await agent.ainvoke(None, thread())

    assert result["messages"][-1].text == "Done: I set a reminder to call mom (tomorrow at 9)."
    assert len(await store.list(owner="local")) == 1


@pytest.mark.parametrize(
    "content",
    ["hello there", [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]],
)
async def test_messages_stream_chunks_share_the_reply_id(content: Any) -> None:
    agent = compile_agent()
    parts = [
        part
        async for part in agent.astream(
            {"messages": [{"role": "user", "content": content}]}, thread(), stream_mode="messages"
        )
    ]

    reply = (await agent.aget_state(thread())).values["messages"][-1]
    assert reply.text.startswith('Hello! You said: "hello there".')
    assert len(parts) > 3
    assert all(isinstance(chunk, AIMessageChunk) for chunk, _ in parts)
    assert {chunk.id for chunk, _ in parts} == {reply.id}
    assert {(meta["langgraph_node"], meta["langgraph_step"]) for _, meta in parts} == {("model", 1)}
    assert "".join(chunk.text for chunk, _ in parts) == reply.text


async def test_tool_call_streams_as_chunks_of_the_call() -> None:
    agent = compile_agent()
    parts = [p async for p in agent.astream(ask(REMIND), thread(), stream_mode="messages")]

    call = (await agent.aget_state(thread())).values["messages"][-1]
    chunks = [chunk for chunk, _ in parts]
    assert len(chunks) > 2
    assert {chunk.id for chunk in chunks} == {call.id}
    assert (chunks[0] + chunks[1:]).tool_calls == call.tool_calls
    assert {meta["langgraph_node"] for _, meta in parts} == {"model"}


async def test_forecast_service_down_becomes_a_tool_message(dead_url: str) -> None:
    agent = compile_agent()
    result = await agent.ainvoke(ask("weather in Oslo"), thread())

    answer, reply = result["messages"][-2:]
    assert answer.status == "error"
    assert "could not reach the forecast service" in answer.text
    assert reply.text.startswith("Sorry, I could not get the forecast for Oslo: could not reach")
    assert (await agent.aget_state(thread())).next == ()


async def test_a_slow_forecast_does_not_hold_up_other_threads(
    forecast_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THREADLINE_FORECAST_DELAY_S", "0.5")
    agent = compile_agent()
    finished: list[str] = []

    async def turn(thread_id: str, text: str) -> None:
        await agent.ainvoke(ask(text), thread(thread_id))
        finished.append(thread_id)

    await asyncio.gather(turn("slow", "weather in Paris"), turn("quick", "list my reminders"))

    assert finished == ["quick", "slow"]
    reply = (await agent.aget_state(thread("slow"))).values["messages"][-1]
    assert reply.text.startswith("The forecast for Paris today: ")


def _fields(reminder: Reminder) -> dict[str, Any]:
    return {k: v for k, v in reminder.items() if k not in ("id", "created_at")}


async def test_a_regenerated_reply_is_worded_differently() -> None:
    """Running the model again from the version before its reply (a regenerate) gives
    another wording; the first reply is the usual one."""
    agent = compile_agent()
    first = (await agent.ainvoke(ask("hello there"), thread()))["messages"][-1].text
    history = [s async for s in agent.aget_state_history(thread())]
    [before] = [s for s in history if s.next == ("model",)]

    again = (await agent.ainvoke(None, before.config))["messages"][-1].text

    assert first.startswith('Hello! You said: "hello there".')
    assert again != first and "hello there" in again
