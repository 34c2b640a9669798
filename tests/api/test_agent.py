"""The default agent end to end (issue 6): the official client against a real server serving
`app.agents.reminders:graph`, on SQLite and on PostgreSQL. The forecast tool calls the same
server's /demo/forecast; reminders are read back from GET /reminders."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from langgraph_sdk.client import LangGraphClient

from app.agents.reminders import SYSTEM_PROMPT
from tests import helpers
from tests.api.provider_agent import FAKE_REPLY, PROVIDER_URL_VARIABLE
from tests.helpers import ServeApp, collect, new_thread, said, until_status

AGENT = "agent"
PROVIDER_AGENT = "provider_agent"
FAKE_AGENT = "fake_agent"
WEATHER = "what's the weather in Paris tomorrow"
REMIND = "remind me to call mom tomorrow at 9"


class Matching(str):
    """Equal to the strings the pattern matches whole (a time the card names changes)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and re.fullmatch(self, other) is not None

    __hash__ = str.__hash__


ASKED = {
    "name": "add_reminder",
    "args": {"text": "call mom", "due": "tomorrow at 9"},
    "description": Matching(
        r"Set a reminder to call mom, due tomorrow at 9\. That is \w{3} \d+ \w{3} \d{4}, "
        r"09:00 UTC\."
    ),
}
ASKED_ROW = ("call mom", "tomorrow at 9")
SET_REPLY = "Done: I set a reminder to call mom (tomorrow at 9)."
DECLINED_REPLY = "OK, I did not set the reminder."


@pytest.fixture
def client(agent_server: str) -> LangGraphClient:
    return helpers.client(agent_server)


@pytest.fixture
async def http(agent_server: str) -> AsyncIterator[httpx.AsyncClient]:
    """Plain HTTP to the same server, for what the client has no method for."""
    async with httpx.AsyncClient(base_url=agent_server, timeout=30) as plain:
        yield plain


def last_reply(values: dict[str, Any]) -> Any:
    """The content of the last message in a run's final values."""
    return values["messages"][-1]["content"]


def checkpoint_id(state: dict[str, Any]) -> str:
    return state["checkpoint"]["checkpoint_id"]


async def ask(client: LangGraphClient, text: str) -> tuple[str, dict[str, Any]]:
    """A new thread whose first run says `text`: its id and the run's final values."""
    thread_id = await new_thread(client)
    return thread_id, await client.runs.wait(thread_id, AGENT, input=said(text))


async def thread_status(client: LangGraphClient, thread_id: str) -> str:
    return (await client.threads.get(thread_id))["status"]


async def reminders(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await http.get("/reminders")
    assert response.status_code == 200, response.text
    return response.json()


async def reminder_rows(http: httpx.AsyncClient) -> list[tuple[str, str | None, str]]:
    """GET /reminders as (text, due, thread_id), oldest first."""
    return [(r["text"], r["due"], r["thread_id"]) for r in await reminders(http)]


async def forecast(http: httpx.AsyncClient, city: str, day: str) -> dict[str, Any]:
    """What this server's forecast service says (without the demo delay, if read first)."""
    response = await http.get("/demo/forecast", params={"city": city, "day": day})
    assert response.status_code == 200, response.text
    return response.json()


def forecast_reply(f: dict[str, Any]) -> str:
    """The agent's answer to a forecast question, over the forecast `f`."""
    return (
        f"The forecast for {f['city']} {f['day']}: {f['summary']}, high {f['high_c']}°C, "
        f"low {f['low_c']}°C, {round(f['precipitation_chance'] * 100)}% chance of precipitation."
    )


async def test_a_forecast_question_is_answered_with_the_forecast(
    client: LangGraphClient, http: httpx.AsyncClient
) -> None:
    thread_id, values = await ask(client, WEATHER)
    human, calling, result, answer = values["messages"]
    assert (human["type"], human["content"]) == ("human", WEATHER)
    [call] = calling["tool_calls"]
    assert (call["name"], call["args"]) == ("get_forecast", {"city": "Paris", "day": "tomorrow"})
    paris = await forecast(http, "Paris", "tomorrow")
    assert (result["type"], result["tool_call_id"]) == ("tool", call["id"])
    assert json.loads(result["content"]) == paris
    assert (answer["type"], answer["content"]) == ("ai", forecast_reply(paris))
    assert await thread_status(client, thread_id) == "idle"


@dataclass(frozen=True)
class Review:
    """An answer to the reminder question, and what it should lead to."""

    resume: Any
    reply: str
    reminders: list[tuple[str, str | None]]


def _edit(**args: str) -> dict[str, Any]:
    """A resume that edits the one reminder asked about into one with `args`."""
    edited = {"name": "add_reminder", "args": args}
    return {"decisions": [{"type": "edit", "edited_action": edited}]}


REVIEWS = {
    "approve": Review({"decisions": [{"type": "approve"}]}, SET_REPLY, [ASKED_ROW]),
    "yes": Review("yes", SET_REPLY, [ASKED_ROW]),
    "edit": Review(
        _edit(text="call dad", due="on friday"),
        "Done: I set a reminder to call dad (on friday).",
        [("call dad", "on friday")],
    ),
    "reject": Review(
        {"decisions": [{"type": "reject", "message": "I already called her"}]},
        "OK, I did not set the reminder: I already called her",
        [],
    ),
    "no": Review("no", DECLINED_REPLY, []),
}


@pytest.mark.parametrize("review", REVIEWS.values(), ids=REVIEWS.keys())
async def test_a_reminder_is_set_only_as_the_user_says(
    client: LangGraphClient, http: httpx.AsyncClient, review: Review
) -> None:
    thread_id, asked = await ask(client, REMIND)
    [question] = asked["__interrupt__"]
    assert question["value"]["action_requests"] == [ASKED]
    assert await thread_status(client, thread_id) == "interrupted"
    assert await reminders(http) == []
    values = await client.runs.wait(thread_id, AGENT, command={"resume": review.resume})
    assert last_reply(values) == review.reply
    assert await thread_status(client, thread_id) == "idle"
    assert await reminder_rows(http) == [(text, due, thread_id) for text, due in review.reminders]


MALFORMED: list[tuple[Any, str]] = [
    ("maybe", 'Cannot resume: Cannot read the answer \'maybe\': resume with "yes", "no" or'),
    ({"decisions": []}, "Expected 1 decision(s), one per action request; got 0."),
    (
        {"decisions": [{"type": "later"}]},
        "decisions[0]: type must be 'approve', 'edit' or 'reject', got 'later'.",
    ),
    (_edit(due="at 9"), "decisions[0]: add_reminder text: Field required."),
]


async def test_a_malformed_resume_is_refused_and_the_question_stays(
    client: LangGraphClient, http: httpx.AsyncClient
) -> None:
    """Refused with 422 before a run starts, by every run endpoint; then answered."""
    thread_id, _ = await ask(client, REMIND)
    waiting = await client.threads.get(thread_id)
    senders: list[Callable[[dict[str, Any]], Awaitable[Any]]] = [
        lambda command: client.runs.wait(thread_id, AGENT, command=command),
        lambda command: collect(client.runs.stream(thread_id, AGENT, command=command)),
        lambda command: client.runs.create(thread_id, AGENT, command=command),
    ]
    for (resume, message), send in itertools.product(MALFORMED, senders):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await send({"resume": resume})
        assert refused.value.response.status_code == 422
        assert message in refused.value.response.json()["detail"]
        thread = await client.threads.get(thread_id)
        assert (thread["status"], thread["interrupts"]) == ("interrupted", waiting["interrupts"])
    assert len(await client.runs.list(thread_id)) == 1
    values = await client.runs.wait(thread_id, AGENT, command={"resume": "yes"})
    assert last_reply(values) == SET_REPLY
    assert await reminder_rows(http) == [(*ASKED_ROW, thread_id)]


async def test_regenerating_keeps_the_reminder_once(
    client: LangGraphClient, http: httpx.AsyncClient
) -> None:
    """Time travel moves the conversation, not the world: the reminder set on the old branch
    stays, and re-approving the same tool call does not set it twice."""
    thread_id, _ = await ask(client, REMIND)
    done = await client.runs.wait(thread_id, AGENT, command={"resume": "yes"})
    call_id = done["messages"][1]["tool_calls"][0]["id"]
    [reminder] = await reminders(http)
    assert (reminder["tool_call_id"], reminder["thread_id"]) == (call_id, thread_id)
    history = await client.threads.get_history(thread_id, limit=100)
    before_review = next(s for s in history if s["next"] == ["ask_user"])
    before_model = next(s for s in history if s["next"] == ["model"] and s["metadata"]["step"] == 0)

    asked = await client.runs.wait(
        thread_id, AGENT, input=None, checkpoint_id=checkpoint_id(before_review)
    )
    assert asked["__interrupt__"][0]["value"]["action_requests"] == [ASKED]
    assert asked["messages"][-1]["tool_calls"][0]["id"] == call_id
    again = await client.runs.wait(thread_id, AGENT, command={"resume": "yes"})
    assert last_reply(again) == SET_REPLY
    assert await reminders(http) == [reminder]

    asked = await client.runs.wait(
        thread_id, AGENT, input=None, checkpoint_id=checkpoint_id(before_model)
    )
    assert asked["messages"][-1]["tool_calls"][0]["id"] != call_id  # a new answer, a new call
    assert await reminders(http) == [reminder]
    declined = await client.runs.wait(thread_id, AGENT, command={"resume": "no"})
    assert last_reply(declined) == DECLINED_REPLY
    assert await reminders(http) == [reminder]
    history = await client.threads.get_history(thread_id, limit=100)
    for fork in (before_review, before_model):
        assert len([s for s in history if s["parent_checkpoint"] == fork["checkpoint"]]) == 2


async def edit_first_message(client: LangGraphClient) -> tuple[str, dict[str, Any]]:
    """A thread that said "hello", then had that first message edited into a forecast
    question (new input at the first checkpoint); its id and the first checkpoint."""
    thread_id, _ = await ask(client, "hello")
    history = await client.threads.get_history(thread_id, limit=100)
    [first] = [s for s in history if s["parent_checkpoint"] is None]
    edited = await client.runs.wait(
        thread_id, AGENT, input=said(WEATHER), checkpoint_id=checkpoint_id(first)
    )
    assert [m["content"] for m in edited["messages"] if m["type"] == "human"] == [WEATHER]
    return thread_id, first


async def test_editing_the_first_message_branches_the_history(client: LangGraphClient) -> None:
    thread_id, first = await edit_first_message(client)
    history = await client.threads.get_history(thread_id, limit=100)
    branches = [s for s in history if s["parent_checkpoint"] == first["checkpoint"]]
    assert len(branches) == 2
    ends = [s for s in history if s["next"] == []]
    said_first = {m["content"] for s in ends for m in s["values"]["messages"][:1]}
    assert said_first == {"hello", WEATHER}


async def test_editing_the_first_message_shows_sibling_turns(
    client: LangGraphClient, http: httpx.AsyncClient
) -> None:
    thread_id, _ = await edit_first_message(client)
    tree = (await http.get(f"/threads/{thread_id}/tree")).json()
    original, edited = tree["turns"]
    assert [
        (t["user_message"]["content"], t["parent_turn_id"], t["sibling_index"], t["sibling_count"])
        for t in (original, edited)
    ] == [("hello", None, 0, 2), (WEATHER, None, 1, 2)]
    assert original["children"] == edited["children"] == []
    assert tree["head_path"] == [edited["turn_id"]]


@dataclass
class FakeProvider:
    """OpenAI-compatible chat completions answering the queued replies in order: an HTTP
    error status, or a text streamed as completion chunks."""

    replies: list[int | str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            self.requests.append(await request.json())
            reply = self.replies.pop(0)
            if isinstance(reply, int):
                error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
                return JSONResponse({"error": error}, status_code=reply)
            return StreamingResponse(_completion(reply), media_type="text/event-stream")

        return app


async def _completion(text: str) -> AsyncIterator[str]:
    """`text` word by word, as providers stream it."""
    words = [{"content": word} for word in re.findall(r"\s*\S+", text)]
    deltas = [{"role": "assistant", "content": ""}, *words, {}]
    for i, delta in enumerate(deltas):
        finish = "stop" if i == len(deltas) - 1 else None
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        chunk = {"object": "chat.completion.chunk", "model": "fake-model", "choices": [choice]}
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


@pytest.fixture
def provider(serve_app: ServeApp, monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    """A fake provider on localhost, the one the served "provider_agent" graph calls."""
    fake = FakeProvider()
    monkeypatch.setenv(PROVIDER_URL_VARIABLE, serve_app(fake.app()) + "/v1")
    return fake


async def test_a_model_error_fails_the_run_and_the_thread_recovers(
    client: LangGraphClient, provider: FakeProvider
) -> None:
    provider.replies += [401, "Hello again!"]
    thread_id = await new_thread(client)
    parts = await collect(
        client.runs.stream(
            thread_id, PROVIDER_AGENT, input=said("hello"), stream_mode=["values", "messages"]
        )
    )
    assert parts[-1] == (
        "error",
        {
            "error": "ModelProviderError",
            "message": "The model provider refused the credentials (HTTP 401): Incorrect API key "
            "provided. Check THREADLINE_OPENAI_API_KEY.",
        },
    )
    [failed] = await client.runs.list(thread_id)
    assert failed["status"] == "error"
    assert await thread_status(client, thread_id) == "error"
    values = await client.runs.wait(thread_id, PROVIDER_AGENT, input=said("are you there?"))
    assert last_reply(values) == "Hello again!"
    assert await thread_status(client, thread_id) == "idle"
    assert [(m["role"], m["content"]) for m in provider.requests[-1]["messages"]] == [
        ("system", SYSTEM_PROMPT),
        ("user", "hello"),
        ("user", "are you there?"),
    ]


async def test_a_turn_over_the_step_limit_fails_clearly_and_the_thread_recovers(
    client: LangGraphClient, http: httpx.AsyncClient
) -> None:
    thread_id = await new_thread(client)
    parts = await collect(
        client.runs.stream(thread_id, AGENT, input=said(WEATHER), config={"recursion_limit": 2})
    )
    event, error = parts[-1]
    assert (event, error["error"]) == ("error", "GraphRecursionError")
    assert "Recursion limit of 2 reached" in error["message"]
    assert await thread_status(client, thread_id) == "error"
    values = await client.runs.wait(thread_id, AGENT, input=None)
    assert last_reply(values) == forecast_reply(await forecast(http, "Paris", "tomorrow"))
    assert await thread_status(client, thread_id) == "idle"


async def test_a_slow_forecast_does_not_hold_up_another_thread(
    client: LangGraphClient, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = forecast_reply(await forecast(http, "Paris", "tomorrow"))
    monkeypatch.setenv("THREADLINE_FORECAST_DELAY_S", "1.5")
    weather_thread = await new_thread(client)
    chat_thread = await new_thread(client)
    weather = await client.runs.create(weather_thread, AGENT, input=said(WEATHER))
    await until_status(client, weather_thread, weather["run_id"], "running")
    chat = await client.runs.wait(chat_thread, AGENT, input=said("hello"))
    assert last_reply(chat).startswith('Hello! You said: "hello".')
    assert (await client.runs.get(weather_thread, weather["run_id"]))["status"] == "running"
    assert last_reply(await client.runs.join(weather_thread, weather["run_id"])) == expected
    [chatted] = await client.runs.list(chat_thread)
    answered = await client.runs.get(weather_thread, weather["run_id"])
    assert answered["status"] == chatted["status"] == "success"
    finished = [datetime.fromisoformat(r["updated_at"]) for r in (chatted, answered)]
    assert finished == sorted(finished)


@pytest.mark.parametrize("graph", [PROVIDER_AGENT, FAKE_AGENT])
async def test_other_chat_models_stream_their_reply_token_by_token(
    client: LangGraphClient, provider: FakeProvider, graph: str
) -> None:
    """The agent over an OpenAI-compatible server and over LangChain's fake chat model:
    the reply reaches an SSE client in pieces, all of one message."""
    if graph == PROVIDER_AGENT:
        provider.replies.append(FAKE_REPLY)  # what the OpenAI-compatible server answers
    thread_id = await new_thread(client)
    parts = await collect(
        client.runs.stream(
            thread_id, graph, input=said("hello"), stream_mode=["values", "messages-tuple"]
        )
    )
    chunks = [data[0] for event, data in parts if event == "messages"]
    assert len(chunks) >= len(FAKE_REPLY.split())
    assert "".join(chunk["content"] for chunk in chunks) == FAKE_REPLY
    [reply_id] = {chunk["id"] for chunk in chunks}
    final = parts[-1][1]["messages"][-1]
    assert (final["id"], final["content"]) == (reply_id, FAKE_REPLY)


async def test_the_agents_drawing_names_its_tools(client: LangGraphClient) -> None:
    """LangGraph Studio shows a ToolNode's tools from its node's `metadata.__tools`."""
    drawing = await client.assistants.get_graph("agent")
    [tools] = [node for node in drawing["nodes"] if node["id"] == "tools"]
    assert tools["metadata"]["__tools"] and tools["data"] == {"name": "tools"}
