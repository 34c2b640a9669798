"""The scripted model's understanding, model loading, and conversion to the OpenAI format."""

import time
from typing import Any

import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable

from app.agents.tools import tool_schemas
from app.models.base import load_model
from app.models.openai import OpenAIChatModel, to_openai_messages
from app.models.scripted import ScriptedChatModel


def scripted(**options: Any) -> Runnable[LanguageModelInput, AIMessage]:
    return ScriptedChatModel(**options).bind_tools(tool_schemas())


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("weather in Paris tomorrow", [("get_forecast", {"city": "Paris", "day": "tomorrow"})]),
        (
            "What's the weather in New York?",
            [("get_forecast", {"city": "New York", "day": "today"})],
        ),
        (
            "remind me to call mom tomorrow at 9",
            [("add_reminder", {"text": "call mom", "due": "tomorrow at 9"})],
        ),
        (
            "Remind me to check on the cat.",
            [("add_reminder", {"text": "check on the cat", "due": None})],
        ),
        (
            "remind me to pay rent on Friday",
            [("add_reminder", {"text": "pay rent", "due": "on Friday"})],
        ),
        (
            "weather in Paris and remind me to pack an umbrella",
            [
                ("get_forecast", {"city": "Paris", "day": "today"}),
                ("add_reminder", {"text": "pack an umbrella", "due": None}),
            ],
        ),
        ("List my reminders", [("list_reminders", {})]),
        ("how are you?", []),
    ],
)
async def test_scripted_model_understands(
    text: str, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    reply = await scripted().ainvoke([HumanMessage(content=text)])
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == calls
    assert len({c["id"] for c in reply.tool_calls}) == len(calls)
    assert bool(reply.text) == (not calls)


async def test_scripted_model_only_calls_offered_tools() -> None:
    reply = await ScriptedChatModel().ainvoke([HumanMessage(content="weather in Rome")])
    assert reply.tool_calls == []
    assert "weather in Rome" in reply.text


async def test_scripted_tool_call_ids_are_unique_across_turns() -> None:
    model = scripted()
    turn = [HumanMessage(content="list my reminders")]
    first, second = [await model.ainvoke(turn) for _ in range(2)]
    assert first.id != second.id
    assert first.tool_calls[0]["id"] != second.tool_calls[0]["id"]


@pytest.mark.parametrize("text", ["weather in Paris and remind me to pack an umbrella", "hi"])
async def test_scripted_streams_pieces_that_add_up_to_the_reply(text: str) -> None:
    model = scripted()
    reply = await model.ainvoke(text)
    chunks = [chunk async for chunk in model.astream(text)]

    assert len(chunks) > 3
    whole = chunks[0] + chunks[1:]
    assert whole.text == reply.text
    assert [(c["name"], c["args"]) for c in whole.tool_calls] == [
        (c["name"], c["args"]) for c in reply.tool_calls
    ]
    assert [c.chunk_position for c in chunks] == [None] * (len(chunks) - 1) + ["last"]
    # Sync callers get the same reply (tool call ids are new on every call).
    assert model.invoke(text).text == reply.text


async def test_scripted_pace_spaces_the_pieces() -> None:
    model = ScriptedChatModel(pace_s=0.01)
    started = time.perf_counter()
    chunks = [chunk async for chunk in model.astream("hi")]
    assert time.perf_counter() - started >= 0.01 * (len(chunks) - 1)


def test_load_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THREADLINE_MODEL", raising=False)
    assert isinstance(load_model(), ScriptedChatModel)

    monkeypatch.setenv("THREADLINE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("THREADLINE_OPENAI_BASE_URL", "http://localhost:9/v1/")
    monkeypatch.setenv("THREADLINE_OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("THREADLINE_SCRIPTED_PACE_S", "0.05")
    paced = load_model("scripted")
    assert isinstance(paced, ScriptedChatModel) and paced.pace_s == 0.05
    model = load_model()
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.url) == ("gpt-4o-mini", "http://localhost:9/v1/chat/completions")
    assert model.headers == {"Authorization": "Bearer sk-test"}

    assert isinstance(load_model("scripted"), ScriptedChatModel)
    for spec in ("openai", "openai:", "anthropic:claude", "scripted:x"):
        with pytest.raises(ValueError, match="Unknown model"):
            load_model(spec)


def test_to_openai_messages() -> None:
    call = {"name": "get_forecast", "args": {"city": "Oslo"}, "id": "call-1"}
    messages = [
        SystemMessage(content="Be brief."),
        HumanMessage(
            content=[{"type": "text", "text": "weather "}, {"type": "text", "text": "Oslo"}]
        ),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content='{"summary": "sunny"}', tool_call_id="call-1"),
        AIMessage(content="Sunny."),
    ]
    assert to_openai_messages(messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather Oslo"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "get_forecast", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call-1", "content": '{"summary": "sunny"}'},
        {"role": "assistant", "content": "Sunny."},
    ]
