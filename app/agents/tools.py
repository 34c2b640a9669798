"""The reminder agent's tools: plain async functions, each with the JSON schema a model sees.

A tool reports trouble by raising `ToolError`; `run_tool` turns that into an error
`ToolMessage` the model can read and answer, so a failing service never crashes the turn.
"""

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.messages import ToolMessage

from app.agents.reminder_store import get_store

DEFAULT_FORECAST_URL = "http://127.0.0.1:8123/demo/forecast"
FORECAST_ATTEMPTS = 3
# First pause between forecast attempts; it doubles after each failed attempt.
FORECAST_BACKOFF_S = 0.1


class ToolError(Exception):
    """A failure the model should be told about, in words it can repeat to the user."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a call acts for: the reminder's owner and thread, and its idempotency key."""

    owner: str
    thread_id: str
    tool_call_id: str


async def get_forecast(ctx: ToolContext, city: str, day: str = "today") -> dict[str, Any]:
    """Ask the forecast service; connect errors and 5xx are retried, as they often heal."""
    url = os.environ.get("THREADLINE_FORECAST_URL") or DEFAULT_FORECAST_URL
    timeout = float(os.environ.get("THREADLINE_FORECAST_TIMEOUT_S") or 5)
    async with httpx.AsyncClient(timeout=timeout) as client:
        for attempt in range(1, FORECAST_ATTEMPTS + 1):
            try:
                response = await client.get(url, params={"city": city, "day": day})
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                problem = f"could not reach the forecast service ({type(exc).__name__})"
            except httpx.TimeoutException as exc:
                raise ToolError(f"the forecast service did not answer within {timeout:g}s") from exc
            except httpx.HTTPError as exc:
                raise ToolError(f"the forecast request failed: {exc!r}") from exc
            else:
                if response.status_code < 500:
                    return _forecast_body(response)
                problem = f"the forecast service answered HTTP {response.status_code}"
            if attempt < FORECAST_ATTEMPTS:
                await asyncio.sleep(FORECAST_BACKOFF_S * 2 ** (attempt - 1))
    raise ToolError(f"{problem}; tried {FORECAST_ATTEMPTS} times")


def _forecast_body(response: httpx.Response) -> dict[str, Any]:
    """A 4xx is the request's fault and won't heal on retry: report it with its detail."""
    if response.status_code >= 400:
        raise ToolError(
            f"the forecast service rejected the request (HTTP {response.status_code}): "
            f"{response.text[:200]}"
        )
    try:
        body = response.json()
    except ValueError as exc:
        raise ToolError("the forecast service answered something that is not JSON") from exc
    if not isinstance(body, dict):
        raise ToolError("the forecast service answered JSON that is not an object")
    return body


async def add_reminder(ctx: ToolContext, text: str, due: str | None = None) -> dict[str, Any]:
    """Set a reminder once per tool call, however often the call is re-run."""
    if not text.strip():
        raise ToolError("a reminder needs some text")
    reminder = await get_store().add(
        owner=ctx.owner,
        thread_id=ctx.thread_id,
        text=text.strip(),
        due=due.strip() if due and due.strip() else None,
        tool_call_id=ctx.tool_call_id,
    )
    return {"id": reminder["id"], "text": reminder["text"], "due": reminder["due"]}


async def list_reminders(ctx: ToolContext) -> dict[str, Any]:
    """The owner's reminders from every thread, so "list my reminders" works anywhere."""
    reminders = await get_store().list(owner=ctx.owner)
    return {"reminders": [{"text": r["text"], "due": r["due"]} for r in reminders]}


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool as both sides see it: the schema for the model, the function for the graph
    (called as `fn(ctx, **args)`, so every tool can reach its owner and idempotency key)."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Awaitable[dict[str, Any]]]

    def schema(self) -> dict[str, Any]:
        """The OpenAI chat completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def check_args(self, args: Any) -> str | None:
        """Why `args` do not fit the schema, or None; models do send malformed calls."""
        if not isinstance(args, dict):
            return f"{self.name} takes an object of arguments, got {type(args).__name__}"
        properties: dict[str, Any] = self.parameters["properties"]
        required: list[str] = self.parameters.get("required", [])
        if missing := [key for key in required if key not in args]:
            return f"{self.name} is missing {', '.join(missing)}"
        if unknown := sorted(args.keys() - properties.keys()):
            return f"{self.name} does not take {', '.join(unknown)}"
        for key, value in args.items():
            if not isinstance(value, str) and not (value is None and key not in required):
                return f"{self.name}: {key} must be a string"
        return None


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="get_forecast",
            description="Get the weather forecast for a city on a given day.",
            parameters={
                "type": "object",
                "properties": {
                    "city": _string("City name, e.g. Paris"),
                    "day": _string("'today' (the default) or 'tomorrow'"),
                },
                "required": ["city"],
            },
            fn=get_forecast,
        ),
        Tool(
            name="add_reminder",
            description="Set a reminder for the user. The user is asked to confirm first.",
            parameters={
                "type": "object",
                "properties": {
                    "text": _string("What to remind the user of, e.g. 'call mom'"),
                    "due": _string("When, in the user's words, e.g. 'tomorrow at 9'"),
                },
                "required": ["text"],
            },
            fn=add_reminder,
        ),
        Tool(
            name="list_reminders",
            description="List the reminders the user has set.",
            parameters={"type": "object", "properties": {}},
            fn=list_reminders,
        ),
    )
}


def tool_schemas() -> list[dict[str, Any]]:
    """Every tool's schema, in a stable order, for the model's tool list."""
    return [tool.schema() for tool in TOOLS.values()]


def declined(call: dict[str, Any], message: str | None) -> ToolMessage:
    """The answer to a call the user turned down; the artifact keeps their words apart from
    the sentence the model reads, so a model can quote them."""
    reason = f" Their message: {message}" if message else ""
    return ToolMessage(
        content=f"The user declined to run {call['name']}.{reason}",
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
        artifact={"declined": True, "message": message},
    )


async def run_tool(call: dict[str, Any], *, owner: str, thread_id: str) -> ToolMessage:
    """Run one tool call; whatever goes wrong in a foreseeable way becomes an error reply."""
    name, call_id = call["name"], call["id"]
    try:
        tool = TOOLS.get(name)
        if tool is None:
            raise ToolError(f"there is no tool named {name!r}; use one of {', '.join(TOOLS)}")
        if problem := tool.check_args(call["args"]):
            raise ToolError(problem)
        ctx = ToolContext(owner=owner, thread_id=thread_id, tool_call_id=call_id)
        result = await tool.fn(ctx, **call["args"])
    except ToolError as exc:
        return ToolMessage(content=f"Error: {exc}", tool_call_id=call_id, name=name, status="error")
    return ToolMessage(content=json.dumps(result), tool_call_id=call_id, name=name)
