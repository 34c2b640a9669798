"""The reminder agent's tools, written as LangChain tools (`@tool`), as a LangGraph user
writes them: the model sees each one's schema through `bind_tools`, and the agent's
`ToolNode` runs them, handing each the `ToolRuntime` of its call (whose user and thread it
acts for, the call's id, the idempotency key of its side effect, and in its config the
reminder store the run was handed: `app.agents.reminder_store.reminder_store`).

A tool reports trouble by raising `ToolError`; `tool_error`, the ToolNode's error handler,
turns that (and arguments that do not fit a tool's schema) into an error `ToolMessage` the
model can read and answer, so a failing service never crashes the turn.
"""

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

import httpx
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool

from app.agents.due import resolve_due, zone_of
from app.agents.reminder_store import reminder_store
from app.config import get_settings
from engine.prebuilt import ToolRuntime
from engine.prebuilt.tool_node import ToolInvocationError

FORECAST_ATTEMPTS = 3
# First pause between forecast attempts; it doubles after each failed attempt.
FORECAST_BACKOFF_S = 0.1


class ToolError(Exception):
    """A failure the model should be told about, in words it can repeat to the user."""


@tool
async def get_forecast(
    city: Annotated[str, "City name, e.g. Paris"],
    day: Annotated[str, "'today' (the default) or 'tomorrow'"] = "today",
) -> dict[str, Any]:
    """Get the weather forecast for a city on a given day."""
    # Connect errors and 5xx are retried, as they often heal.
    settings = get_settings()
    url, timeout = settings.forecast, settings.forecast_timeout_s
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


@tool
async def add_reminder(
    text: Annotated[str, "What to remind the user of, e.g. 'call mom'"],
    runtime: ToolRuntime,
    due: Annotated[str | None, "When, in the user's words, e.g. 'tomorrow at 9'"] = None,
) -> dict[str, Any]:
    """Set a reminder for the user. The user is asked to confirm first."""
    # Set once per tool call, however often the call is re-run. Its time is read when
    # it is set (approved): "in 2 hours" counts from then.
    if not text.strip():
        raise ToolError("a reminder needs some text")
    configurable = runtime.config["configurable"]
    words = due.strip() if due and due.strip() else None
    when = resolve_due(words, zone_of(configurable), datetime.now(UTC))
    reminder = await reminder_store(runtime.config).add(
        owner=_owner(runtime),
        thread_id=configurable.get("thread_id", ""),
        text=text.strip(),
        due=words,
        due_at=when.at,
        assistant_id=configurable.get("assistant_id"),
        tool_call_id=runtime.tool_call_id or "",
    )
    result = {"id": reminder["id"], "text": reminder["text"], "due": reminder["due"]}
    if reminder["due_at"]:
        result["due_at"] = reminder["due_at"]
    elif when.problem:
        result["not_scheduled"] = when.problem
    return result


@tool
async def list_reminders(runtime: ToolRuntime) -> dict[str, Any]:
    """List the reminders the user has set."""
    # From every thread of the user, so "list my reminders" works anywhere.
    reminders = await reminder_store(runtime.config).list(owner=_owner(runtime))
    return {"reminders": [{"text": r["text"], "due": r["due"]} for r in reminders]}


def _owner(runtime: ToolRuntime) -> str:
    """The user the server runs the call for ("local" outside a server)."""
    return owner_of(runtime.config["configurable"])


def owner_of(configurable: Mapping[str, Any]) -> str:
    """The user a run is for: the server's `langgraph_auth_user_id`, which no client sets
    (a client may set `user_id`, as on LangGraph's server); else `user_id` (a run
    outside a server); else "local"."""
    return configurable.get("langgraph_auth_user_id") or configurable.get("user_id") or "local"


TOOLS: list[BaseTool] = [get_forecast, add_reminder, list_reminders]


def tool_error(exc: ToolError | ToolInvocationError) -> str:
    """The ToolNode's error handler: what the model reads when a call failed in a way it
    can tell the user about (or fix: arguments that do not fit the tool's schema)."""
    return exc.message if isinstance(exc, ToolInvocationError) else f"Error: {exc}"


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
