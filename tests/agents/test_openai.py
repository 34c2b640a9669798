"""The OpenAI-compatible model in the agent, against a small fake provider on localhost."""

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from langchain_core.messages import AIMessageChunk, ToolMessage

from app.chat_models.base import ModelProviderError
from app.chat_models.openai import OpenAIChatModel
from engine import Command
from tests.agents.helpers import Serve, ask, compile_agent, thread


@dataclass(frozen=True)
class Stall:
    """Answer nothing for this long (longer than the client's timeout)."""

    seconds: float


@dataclass(frozen=True)
class BreakOff:
    """Stream these chunks, then drop the connection."""

    chunks: list[dict[str, Any]]


Reply = int | Stall | BreakOff | list[dict[str, Any]]


@dataclass
class FakeProvider:
    """Chat completions that answer with the queued replies, in order, recording requests."""

    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            self.requests.append(await request.json())
            self.headers.append(dict(request.headers))
            reply = self.replies.pop(0)
            if isinstance(reply, int):
                error = {"error": {"message": f"fake error {reply}", "type": "fake"}}
                return JSONResponse(error, status_code=reply)
            if isinstance(reply, Stall):
                await asyncio.sleep(reply.seconds)
                return JSONResponse({})
            chunks, broken = (reply.chunks, True) if isinstance(reply, BreakOff) else (reply, False)
            return StreamingResponse(_sse(chunks, broken), media_type="text/event-stream")

        return app


async def _sse(chunks: list[dict[str, Any]], broken: bool) -> AsyncIterator[str]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
        await asyncio.sleep(0)
    if broken:
        raise ConnectionResetError("provider went away")
    yield "data: [DONE]\n\n"


def _event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_reply(*pieces: str) -> list[dict[str, Any]]:
    return [
        _event({"role": "assistant", "content": ""}),
        *(_event({"content": p}) for p in pieces),
        _event({}, "stop"),
    ]


def tool_delta(index: int, arguments: str, name: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if name:
        delta.update(id=f"call_{index}", type="function")
        delta["function"]["name"] = name
    return _event({"tool_calls": [delta]})


@pytest.fixture
async def provider(serve: Serve) -> AsyncIterator[tuple[FakeProvider, str]]:
    fake = FakeProvider(replies=[])
    yield fake, await serve(fake.app()) + "/v1"
    assert fake.replies == [], "every queued reply was asked for"


def openai_model(base_url: str, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        model="fake-model", base_url=base_url, api_key="sk-test", backoff_s=0.01, **options
    )


async def test_tool_calls_round_trip(provider: tuple[FakeProvider, str], forecast_url: str) -> None:
    fake, url = provider
    fake.replies += [
        [
            _event({"role": "assistant", "content": None}),
            tool_delta(0, "", name="get_forecast"),
            tool_delta(1, '{"city": "Ro', name="get_forecast"),
            tool_delta(0, '{"city": "Paris", '),
            tool_delta(1, 'me"}'),
            tool_delta(0, '"day": "tomorrow"}'),
            _event({}, "tool_calls"),
        ],
        text_reply("Paris ", "and Rome ", "look fine."),
    ]
    agent = compile_agent(openai_model(url))

    result = await agent.ainvoke(ask("weather in Paris and Rome?"), thread())

    _, call, *answers, reply = result["messages"]
    assert [(c["id"], c["name"], c["args"]) for c in call.tool_calls] == [
        ("call_0", "get_forecast", {"city": "Paris", "day": "tomorrow"}),
        ("call_1", "get_forecast", {"city": "Rome"}),
    ]
    assert {(a.tool_call_id, a.status) for a in answers} == {
        ("call_0", "success"),
        ("call_1", "success"),
    }
    assert reply.text == "Paris and Rome look fine."
    assert reply.response_metadata == {"finish_reason": "stop", "model_name": "fake-model"}

    first, second = fake.requests
    assert first["model"] == "fake-model"
    assert first["stream"] is True
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][1] == {"role": "user", "content": "weather in Paris and Rome?"}
    assert [t["function"]["name"] for t in first["tools"]] == [
        "get_forecast",
        "add_reminder",
        "list_reminders",
    ]
    assert second["messages"][2]["tool_calls"][0]["function"] == {
        "name": "get_forecast",
        "arguments": '{"city": "Paris", "day": "tomorrow"}',
    }
    tool_turns = [m for m in second["messages"] if m["role"] == "tool"]
    assert {m["tool_call_id"] for m in tool_turns} == {"call_0", "call_1"}
    assert fake.headers[0]["authorization"] == "Bearer sk-test"


async def test_reply_streams_as_chunks_of_one_message(provider: tuple[FakeProvider, str]) -> None:
    fake, url = provider
    fake.replies.append(text_reply("Hel", "lo", " there", "!"))
    agent = compile_agent(openai_model(url))
    blocks = [{"type": "text", "text": "hi "}, {"type": "text", "text": "you"}]

    parts = [
        part
        async for part in agent.astream(
            {"messages": [{"role": "user", "content": blocks}]}, thread(), stream_mode="messages"
        )
    ]

    reply = (await agent.aget_state(thread())).values["messages"][-1]
    assert reply.text == "Hello there!"
    assert [chunk.text for chunk, _ in parts if chunk.text] == ["Hel", "lo", " there", "!"]
    assert all(isinstance(chunk, AIMessageChunk) for chunk, _ in parts)
    assert {chunk.id for chunk, _ in parts} == {reply.id}
    assert {meta["langgraph_node"] for _, meta in parts} == {"model"}
    assert fake.requests[0]["messages"][1] == {"role": "user", "content": "hi you"}


@pytest.mark.parametrize("status", [401, 403, 400])
async def test_refusals_fail_the_run_at_once(
    provider: tuple[FakeProvider, str], status: int
) -> None:
    fake, url = provider
    fake.replies.append(status)
    agent = compile_agent(openai_model(url))

    with pytest.raises(ModelProviderError, match=f"HTTP {status}\\): fake error {status}"):
        await agent.ainvoke(ask("hi"), thread())

    assert len(fake.requests) == 1
    assert (await agent.aget_state(thread())).next == ("model",)


@pytest.mark.parametrize("failure", [429, 500, 503, Stall(0.5)])
async def test_transient_failures_are_retried(
    provider: tuple[FakeProvider, str], failure: Reply
) -> None:
    fake, url = provider
    fake.replies += [failure, text_reply("Back ", "again.")]
    agent = compile_agent(openai_model(url, timeout_s=0.2))

    result = await agent.ainvoke(ask("hi"), thread())

    assert result["messages"][-1].text == "Back again."
    assert len(fake.requests) == 2


async def test_retries_run_out_with_a_clear_error(provider: tuple[FakeProvider, str]) -> None:
    fake, url = provider
    fake.replies += [500, 429, Stall(0.5)]
    agent = compile_agent(openai_model(url, timeout_s=0.2))

    with pytest.raises(ModelProviderError, match="failed 3 times; last: no answer within 0.2s"):
        await agent.ainvoke(ask("hi"), thread())
    assert len(fake.requests) == 3


async def test_a_broken_stream_is_not_retried(provider: tuple[FakeProvider, str]) -> None:
    fake, url = provider
    fake.replies.append(BreakOff(text_reply("Half a")[:2]))
    agent = compile_agent(openai_model(url))

    with pytest.raises(ModelProviderError, match="reply broke off"):
        await agent.ainvoke(ask("hi"), thread())
    assert len(fake.requests) == 1


async def test_a_declined_reminder_reaches_the_model(provider: tuple[FakeProvider, str]) -> None:
    fake, url = provider
    fake.replies += [
        [tool_delta(0, '{"text": "nap"}', name="add_reminder"), _event({}, "tool_calls")],
        text_reply("Fine, ", "no nap."),
    ]
    agent = compile_agent(openai_model(url))
    await agent.ainvoke(ask("remind me to nap"), thread())

    result = await agent.ainvoke(
        Command(resume={"decisions": [{"type": "reject", "message": "too busy"}]}), thread()
    )

    assert result["messages"][-1].text == "Fine, no nap."
    tool_turn = fake.requests[1]["messages"][-1]
    assert tool_turn["role"] == "tool"
    assert tool_turn["tool_call_id"] == "call_0"
    assert "declined" in tool_turn["content"] and "too busy" in tool_turn["content"]
    assert isinstance(result["messages"][-2], ToolMessage)


async def test_a_call_without_an_id_is_given_one(provider: tuple[FakeProvider, str]) -> None:
    fake, url = provider
    nameless = tool_delta(0, "", name="list_reminders")
    del nameless["choices"][0]["delta"]["tool_calls"][0]["id"]
    fake.replies.append([nameless, tool_delta(0, "{}"), _event({}, "tool_calls")])
    model = openai_model(url)

    chunks = [chunk async for chunk in model.astream("list my reminders")]

    [call] = (chunks[0] + chunks[1:]).tool_calls
    assert call["id"].startswith("call_") and call["name"] == "list_reminders"


async def test_sync_calls_stream_and_retry_too(provider: tuple[FakeProvider, str]) -> None:
    fake, url = provider
    fake.replies += [503, text_reply("Back ", "again.")]
    model = openai_model(url)

    # In a thread: the fake provider answers from this test's event loop.
    reply = await asyncio.to_thread(model.invoke, "hi")

    assert reply.text == "Back again."
    assert len(fake.requests) == 2
