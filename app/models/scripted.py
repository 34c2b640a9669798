"""A deterministic, offline chat model: the default, so the server works with no API key.

It reads the last human message for a few phrasings ("weather in Paris tomorrow", "remind
me to call mom tomorrow at 9", "list my reminders"), answers them with real tool calls, and
after the tool results summarises them. Anything else gets a friendly echo. Replies stream
as a real model's do: text word by word, each tool call as its name and id, then its
arguments in pieces; `pace_s` apart (0: as fast as the event loop goes).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk

from app.models.base import StreamingChatModel

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


class ScriptedChatModel(StreamingChatModel):
    """Rule-based replies with the same streaming and tool-calling shape as a real model."""

    pace_s: float = 0.0
    """Pause between two streamed pieces, in seconds: 0.05 reads like a person typing."""

    @property
    def _llm_type(self) -> str:
        return "threadline-scripted"

    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        for i, chunk in enumerate(_reply(messages, options)):
            if i and self.pace_s:
                time.sleep(self.pace_s)
            yield chunk

    async def _achunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> AsyncIterator[ChatGenerationChunk]:
        for i, chunk in enumerate(_reply(messages, options)):
            if i:
                # Even at pace 0, other tasks get their turn between two pieces.
                await asyncio.sleep(self.pace_s)
            yield chunk


def _reply(messages: list[BaseMessage], options: dict[str, Any]) -> list[ChatGenerationChunk]:
    """Summarise fresh tool results, else act on the last human message with the tools
    `options` offer; the reply's pieces, the last one marked as such."""
    if messages and isinstance(messages[-1], ToolMessage):
        pieces = _words(_summarise(messages))
    else:
        text = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        offered = {tool["function"]["name"] for tool in options.get("tools") or []}
        calls = [call for call in _requested_calls(text) if call["name"] in offered]
        pieces = _call_pieces(calls) if calls else _words(_chat_reply(text))
    pieces[-1].chunk_position = "last"
    return [ChatGenerationChunk(message=piece) for piece in pieces]


def _words(text: str) -> list[AIMessageChunk]:
    return [AIMessageChunk(content=word) for word in _split(text)]


def _call_pieces(calls: list[dict[str, Any]]) -> list[AIMessageChunk]:
    """Each call as providers stream it: name and id first, then the arguments' JSON."""
    pieces: list[AIMessageChunk] = []
    for index, call in enumerate(calls):
        start = tool_call_chunk(name=call["name"], args="", id=call["id"], index=index)
        pieces.append(AIMessageChunk(content="", tool_call_chunks=[start]))
        pieces += [
            AIMessageChunk(content="", tool_call_chunks=[tool_call_chunk(args=part, index=index)])
            for part in _split(json.dumps(call["args"]))
        ]
    return pieces


def _split(text: str) -> list[str]:
    """`text` in pieces that add up to it: each word with the spaces before it."""
    return re.findall(r"\s*\S+", text)


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
