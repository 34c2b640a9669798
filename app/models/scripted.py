"""A deterministic, offline chat model: the default, so the server works with no API key.

It reads the last human message for a few phrasings ("weather in Paris tomorrow", "remind
me to call mom tomorrow at 9", "list my reminders"), answers them with real tool calls, and
after the tool results summarises them. Anything else gets a friendly echo. Replies stream
word by word, as a real model's tokens would.
"""

import asyncio
import json
import re
import uuid
from typing import Any

from app.models.base import emit
from engine import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage

_WEATHER = re.compile(
    r"\bweather\s+(?:in|for|at)\s+(?P<city>.+?)(?:\s+(?P<day>today|tomorrow))?\s*"
    r"(?=\band\b|[?.!,;]|$)",
    re.IGNORECASE,
)
_REMIND = re.compile(r"\bremind\s+me\s+to\s+(?P<what>.+?)[\s?.!]*$", re.IGNORECASE | re.DOTALL)
# Where the "when" of a reminder starts: "call mom | tomorrow at 9".
_DUE = re.compile(
    r"\s+(?P<due>(?:today|tonight|tomorrow|at\s+\d|on\s+(?:mon|tue|wed|thu|fri|sat|sun|\d)"
    r"|next\s+\w|in\s+\d|every\s+\w).*)$",
    re.IGNORECASE | re.DOTALL,
)
_LIST = re.compile(r"\b(?:list|show|what\s+are)\s+(?:all\s+)?my\s+reminders\b", re.IGNORECASE)


class ScriptedChatModel:
    """Rule-based replies with the same streaming and tool-calling shape as a real model."""

    async def respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        """Summarise fresh tool results, else act on the last human message."""
        message_id = str(uuid.uuid4())
        if messages and isinstance(messages[-1], ToolMessage):
            return await _say(message_id, _summarise(messages))
        text = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        offered = {t["function"]["name"] for t in tools}
        calls = [call for call in _requested_calls(text) if call["name"] in offered]
        if not calls:
            return await _say(message_id, _chat_reply(text))
        emit(AIMessageChunk(content="", id=message_id, tool_calls=calls, chunk_position="last"))
        return AIMessage(content="", id=message_id, tool_calls=calls)


def _requested_calls(text: str) -> list[dict[str, Any]]:
    """The tool calls `text` asks for, in the order it asks for them."""
    found: list[tuple[int, dict[str, Any]]] = []
    for match in _WEATHER.finditer(text):
        day = (match["day"] or "today").lower()
        found.append((match.start(), _call("get_forecast", city=match["city"].strip(), day=day)))
    if match := _REMIND.search(text):
        what, due = match["what"], None
        if when := _DUE.search(what):
            what, due = what[: when.start()], when["due"]
        found.append((match.start(), _call("add_reminder", text=what.strip(), due=due)))
    if match := _LIST.search(text):
        found.append((match.start(), _call("list_reminders")))
    return [call for _, call in sorted(found, key=lambda item: item[0])]


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:24]}", "type": "tool_call"}


def _chat_reply(text: str) -> str:
    said = " ".join(text.split())
    echo = f'You said: "{said}". ' if said else ""
    return (
        f'Hello! {echo}I can tell you the weather (try "weather in Paris tomorrow") and set '
        'reminders (try "remind me to call mom tomorrow at 9").'
    )


def _summarise(messages: list[BaseMessage]) -> str:
    """One sentence per call of the last tool-calling message, in call order."""
    asked = next(m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls)
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    return " ".join(_describe(call, results.get(call["id"])) for call in asked.tool_calls)


def _describe(call: dict[str, Any], result: ToolMessage | None) -> str:
    name, args = call["name"], call["args"]
    if result is None:
        return f"I got no answer from {name}."
    if isinstance(result.artifact, dict) and result.artifact.get("declined"):
        reason = result.artifact.get("message")
        return "OK, I did not set the reminder" + (f": {reason}" if reason else ".")
    if result.status == "error":
        detail = result.text.removeprefix("Error: ")
        if name == "get_forecast":
            return f"Sorry, I could not get the forecast for {args.get('city')}: {detail}."
        return f"Sorry, {name} did not work: {detail}."
    sentence = _SUCCESS.get(name)
    try:
        return sentence(json.loads(result.text)) if sentence else f"{name}: {result.text}"
    except (ValueError, KeyError, TypeError):
        # A result in a shape we do not know (another forecast service, say): pass it on.
        return f"{name}: {result.text}"


def _forecast(data: dict[str, Any]) -> str:
    return (
        f"The forecast for {data['city']} {data['day']}: {data['summary']}, high "
        f"{data['high_c']}°C, low {data['low_c']}°C, "
        f"{round(data['precipitation_chance'] * 100)}% chance of precipitation."
    )


def _reminder_set(data: dict[str, Any]) -> str:
    return f"Done: I set a reminder to {_reminder(data)}."


def _reminder_list(data: dict[str, Any]) -> str:
    reminders = data["reminders"]
    if not reminders:
        return "You have no reminders."
    return "Your reminders: " + "; ".join(_reminder(r) for r in reminders) + "."


_SUCCESS = {
    "get_forecast": _forecast,
    "add_reminder": _reminder_set,
    "list_reminders": _reminder_list,
}


def _reminder(data: dict[str, Any]) -> str:
    return f"{data['text']} ({data['due']})" if data.get("due") else data["text"]


async def _say(message_id: str, text: str) -> AIMessage:
    """Stream `text` word by word, yielding to the event loop between words."""
    words = re.findall(r"\s*\S+", text)
    for i, word in enumerate(words):
        last = i == len(words) - 1
        emit(AIMessageChunk(content=word, id=message_id, chunk_position="last" if last else None))
        await asyncio.sleep(0)
    return AIMessage(content=text, id=message_id)
