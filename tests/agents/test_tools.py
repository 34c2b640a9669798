"""The tools and the built-in forecast service, over real HTTP."""

import json
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Response
from langchain_core.messages import ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from app.agents.reminder_store import REMINDER_STORE, InMemoryReminderStore, ReminderStore
from app.agents.tools import TOOLS, ToolError, get_forecast, tool_error
from engine.prebuilt import ToolNode
from tests.agents.helpers import Serve

TOOL_NODE = ToolNode(TOOLS, handle_tool_errors=tool_error)


async def run_tool(
    call: dict[str, Any], store: ReminderStore | None = None, **configurable: Any
) -> ToolMessage:
    """One call through the agent's ToolNode, for alice on thread t1, handed `store`."""
    handed = store or InMemoryReminderStore()
    config = {
        "configurable": {"user_id": "alice", "thread_id": "t1", REMINDER_STORE: handed}
        | configurable
    }
    [message] = (await TOOL_NODE.ainvoke([{**call, "type": "tool_call"}], config))["messages"]
    return message


async def test_demo_forecast_is_deterministic(forecast_url: str) -> None:
    async with httpx.AsyncClient() as client:
        paris = await client.get(forecast_url, params={"city": "Paris", "day": "tomorrow"})
        again = await client.get(forecast_url, params={"city": " paris ", "day": "Tomorrow"})
        today = await client.get(forecast_url, params={"city": "Paris"})

    body = paris.json()
    assert paris.status_code == 200
    assert set(body) == {"city", "day", "summary", "high_c", "low_c", "precipitation_chance"}
    assert body["high_c"] > body["low_c"]
    assert 0 <= body["precipitation_chance"] <= 1
    assert {k: v for k, v in again.json().items() if k not in ("city", "day")} == {
        k: v for k, v in body.items() if k not in ("city", "day")
    }
    assert today.json()["day"] == "today"


@pytest.mark.parametrize("params", [{}, {"city": ""}, {"city": "   "}, {"day": "today"}])
async def test_demo_forecast_needs_a_city(forecast_url: str, params: dict[str, str]) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(forecast_url, params=params)
    assert response.status_code == 422


async def test_get_forecast_reads_the_service(forecast_url: str) -> None:
    async with httpx.AsyncClient() as client:
        expected = (await client.get(forecast_url, params={"city": "Lima"})).json()
    assert await get_forecast.ainvoke({"city": "Lima"}) == expected


def flaky_service(statuses: list[int], seen: list[int]) -> FastAPI:
    """Answers each status in turn (then 200 with a forecast), counting requests."""
    app = FastAPI()

    @app.get("/forecast")
    async def forecast(city: str) -> Response:
        seen.append(len(seen))
        status = statuses[len(seen) - 1] if len(seen) <= len(statuses) else 200
        body = {"city": city} if status == 200 else {"detail": "try later"}
        return Response(json.dumps(body), status_code=status, media_type="application/json")

    return app


@pytest.mark.parametrize(
    ("statuses", "requests", "outcome"),
    [
        ([503, 502], 3, {"city": "Oslo"}),
        ([500, 500, 500], 3, "the forecast service answered HTTP 500; tried 3 times"),
        ([404], 1, "rejected the request (HTTP 404)"),
    ],
)
async def test_get_forecast_retries_only_transient_errors(
    serve: Serve,
    monkeypatch: pytest.MonkeyPatch,
    statuses: list[int],
    requests: int,
    outcome: Any,
) -> None:
    seen: list[int] = []
    monkeypatch.setenv(
        "THREADLINE_FORECAST_URL", await serve(flaky_service(statuses, seen)) + "/forecast"
    )

    if isinstance(outcome, dict):
        assert await get_forecast.ainvoke({"city": "Oslo"}) == outcome
    else:
        with pytest.raises(ToolError, match=re.escape(outcome)):
            await get_forecast.ainvoke({"city": "Oslo"})
    assert len(seen) == requests


async def test_get_forecast_times_out(forecast_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADLINE_FORECAST_DELAY_S", "0.5")
    monkeypatch.setenv("THREADLINE_FORECAST_TIMEOUT_S", "0.1")
    with pytest.raises(ToolError, match="did not answer within 0.1s"):
        await get_forecast.ainvoke({"city": "Oslo"})


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ({"name": "send_email", "args": {}}, "Error: send_email is not a valid tool"),
        ({"name": "get_forecast", "args": {}}, "city: Field required"),
        ({"name": "add_reminder", "args": {"text": 3}}, "text: Input should be a valid string"),
        ({"name": "add_reminder", "args": {"text": "  "}}, "Error: a reminder needs some text"),
    ],
)
async def test_bad_calls_become_error_messages(call: dict[str, Any], error: str) -> None:
    message = await run_tool({**call, "id": "call-1"})
    assert message.status == "error"
    assert message.tool_call_id == "call-1"
    assert error in message.text


async def test_add_reminder_is_idempotent_on_the_call_id(store: InMemoryReminderStore) -> None:
    call = {"name": "add_reminder", "args": {"text": " call mom ", "due": ""}, "id": "call-1"}
    first = await run_tool(call, store)
    second = await run_tool(call, store)
    other = await run_tool({**call, "id": "call-2"}, store)

    assert first.text == second.text
    assert json.loads(first.text)["text"] == "call mom"
    assert json.loads(first.text)["due"] is None
    assert json.loads(other.text)["id"] != json.loads(first.text)["id"]
    assert len(await store.list(owner="alice")) == 2
    assert await store.list(owner="bob") == []


async def test_reminders_are_the_users_the_server_runs_the_call_for(
    store: InMemoryReminderStore,
) -> None:
    """A client may set `user_id` (as on LangGraph's server), not whose reminders a call
    reads and writes: that is the server's `langgraph_auth_user_id`."""
    call = {"name": "add_reminder", "args": {"text": "pay rent", "due": ""}, "id": "call-1"}
    await run_tool(call, store, langgraph_auth_user_id="bob")
    listing = {"name": "list_reminders", "args": {}, "id": "call-2"}
    spoofed = await run_tool(listing, store, user_id="bob", langgraph_auth_user_id="mallory")
    assert json.loads(spoofed.text) == {"reminders": []}
    assert [r["text"] for r in await store.list(owner="bob")] == ["pay rent"]


def test_schemas_describe_every_tool_without_its_runtime() -> None:
    schemas = [convert_to_openai_tool(tool)["function"] for tool in TOOLS]
    assert [s["name"] for s in schemas] == ["get_forecast", "add_reminder", "list_reminders"]
    assert all(s["description"] for s in schemas)
    assert [sorted(s["parameters"]["properties"]) for s in schemas] == [
        ["city", "day"],
        ["due", "text"],
        [],
    ]
    assert [s["parameters"].get("required", []) for s in schemas] == [["city"], ["text"], []]
