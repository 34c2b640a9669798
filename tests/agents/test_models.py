"""The scripted model's understanding and wordings, model loading (THREADLINE_MODEL), and
conversion to the OpenAI format."""

import sys
import time
from typing import Any

import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import var_child_runnable_config

from app.agents.tools import TOOLS
from app.chat_models.base import HUMAN_PACE_S, ModelConfigError, load_model
from app.chat_models.openai import OpenAIChatModel, to_openai_messages
from app.chat_models.scripted import ScriptedChatModel


def scripted(**options: Any) -> Runnable[LanguageModelInput, AIMessage]:
    return ScriptedChatModel(**options).bind_tools(TOOLS)


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


async def test_scripted_model_says_results_no_call_asked_for() -> None:
    """A client may start a chat with a tool's result: the model says it, as it can."""
    results = [ToolMessage("42", tool_call_id="abc"), ToolMessage("43", tool_call_id="d")]
    reply = await scripted().ainvoke(results)
    assert reply.text == "I did not ask for these results: 42; 43"


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
    for name in ("THREADLINE_MODEL", "THREADLINE_SCRIPTED_PACE_S", "THREADLINE_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    default = load_model()
    assert isinstance(default, ScriptedChatModel) and default.pace_s == HUMAN_PACE_S

    monkeypatch.setenv("THREADLINE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("THREADLINE_OPENAI_BASE_URL", "http://localhost:9/v1/")
    monkeypatch.setenv("THREADLINE_OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("THREADLINE_SCRIPTED_PACE_S", "0")
    paced = load_model("scripted")
    assert isinstance(paced, ScriptedChatModel) and paced.pace_s == 0
    model = load_model()
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.url) == ("gpt-4o-mini", "http://localhost:9/v1/chat/completions")
    assert model.headers == {"Authorization": "Bearer sk-test"}


def test_other_models_come_from_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the base URL, `openai:` is LangChain's provider (langchain-openai, a dev
    dependency), configured by its own variables."""
    monkeypatch.delenv("THREADLINE_OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = load_model("openai:gpt-4o-mini")
    assert type(model).__name__ == "ChatOpenAI"
    assert model.model_name == "gpt-4o-mini"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("anthropic:claude-sonnet-4-5", "requires the langchain-anthropic package"),
        ("nosuchprovider:model", "Unable to infer model provider"),
        ("openai", "Unable to infer model provider"),
    ],
)
def test_models_that_cannot_be_built_say_why(spec: str, problem: str) -> None:
    with pytest.raises(ModelConfigError, match=f"THREADLINE_MODEL='{spec}'.*{problem}"):
        load_model(spec)


def test_without_langchain_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)  # import fails
    with pytest.raises(ModelConfigError, match=r"install the `langchain` package"):
        load_model("anthropic:claude-sonnet-4-5")


async def test_a_reply_asked_again_at_the_same_point_is_worded_differently() -> None:
    """Each step that answers the same conversation gets the next wording; a step asked
    again (a retry) gets its own again; the first step's wording is the usual one."""
    model = scripted()
    turn = [HumanMessage("hello there", id="h1")]

    def in_step(task: str) -> dict[str, Any]:
        return {"metadata": {"thread_id": "t1", "langgraph_checkpoint_ns": f"model:{task}"}}

    async def reply_in(task: str) -> str:
        token = var_child_runnable_config.set(in_step(task))
        try:
            return (await model.ainvoke(turn)).text
        finally:
            var_child_runnable_config.reset(token)

    first, regenerated, retried = [await reply_in(task) for task in ("a", "b", "a")]
    assert first.startswith('Hello! You said: "hello there".')
    assert regenerated != first and "hello there" in regenerated
    assert retried == first
    assert (await model.ainvoke(turn)).text == first  # outside a graph: always a first


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
