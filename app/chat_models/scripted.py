"""A deterministic, offline chat model: the default, so the server works with no API key.

It reads the last human message for a few phrasings ("weather in Paris tomorrow", "remind
me to call mom tomorrow at 9", "list my reminders"), answers them with real tool calls, and
after the tool results summarises them; a reminder come due, it says ("⏰ Reminder: call
mom."). Anything else gets a friendly echo. Replies stream
as a real model's do: text word by word, each tool call as its name and id, then its
arguments in pieces; `pace_s` apart (0: as fast as the event loop goes).

A reply asked for again (regenerated from an earlier version of the conversation) is worded
differently, as a real model's would be: each graph step that asks the same question of
the same conversation gets the next wording, and a step asked again (a retry) the wording
it had. The first answer is always the same, so tests and examples can quote it. What
steps asked is kept in this process, for the last few thousand conversations.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
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
from langchain_core.runnables.config import ensure_config
from pydantic import PrivateAttr

from app.chat_models.base import StreamingChatModel

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
# What the agent's `remind` node asks when a reminder comes due (`reminders.DUE_NOW`).
_DUE_NOW = re.compile(r"^Reminder due now: (?P<what>.+?)[\s.]*$", re.DOTALL)


class _Wordings:
    """Which wording each graph step got, per point of a conversation: a step is known by
    its task (`langgraph_checkpoint_ns`, unique to the version it started from), a point
    of the conversation by its thread, length and last message."""

    SIZE = 4096

    def __init__(self) -> None:
        self._steps: OrderedDict[tuple[Any, ...], list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def wording(self, messages: Sequence[BaseMessage]) -> int:
        """0 for the first step asking at this point, 1 for the next one, ...; a call
        outside a graph's step is always a first."""
        metadata = ensure_config().get("metadata") or {}
        step = metadata.get("langgraph_checkpoint_ns")
        if not step or not messages:
            return 0
        point = (metadata.get("thread_id"), len(messages), messages[-1].id)
        with self._lock:
            steps = self._steps.setdefault(point, [])
            self._steps.move_to_end(point)
            if step not in steps:
                steps.append(step)
            while len(self._steps) > self.SIZE:
                self._steps.popitem(last=False)
            return steps.index(step)


class ScriptedChatModel(StreamingChatModel):
    """Rule-based replies with the same streaming and tool-calling shape as a real model."""

    pace_s: float = 0.0
    """Pause between two streamed pieces, in seconds: 0.05 reads like a person typing."""

    _asked: _Wordings = PrivateAttr(default_factory=_Wordings)

    @property
    def _llm_type(self) -> str:
        return "threadline-scripted"

    def _pieces(
        self, messages: list[BaseMessage], options: dict[str, Any]
    ) -> list[ChatGenerationChunk]:
        return _reply(messages, options, self._asked.wording(messages))

    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        for i, chunk in enumerate(self._pieces(messages, options)):
            if i and self.pace_s:
                time.sleep(self.pace_s)
            yield chunk

    async def _achunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> AsyncIterator[ChatGenerationChunk]:
        for i, chunk in enumerate(self._pieces(messages, options)):
            if i:
                # Even at pace 0, other tasks get their turn between two pieces.
                await asyncio.sleep(self.pace_s)
            yield chunk


def _reply(
    messages: list[BaseMessage], options: dict[str, Any], wording: int
) -> list[ChatGenerationChunk]:
    """Summarise fresh tool results, else act on the last human message with the tools
    `options` offer; the reply's pieces, the last one marked as such."""
    if messages and isinstance(messages[-1], ToolMessage):
        pieces = _words(_summarise(messages, wording))
    elif messages and (due := _DUE_NOW.match(messages[-1].text)):
        pieces = _words(f"⏰ Reminder: {due['what']}.")
    else:
        text = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        offered = {tool["function"]["name"] for tool in options.get("tools") or []}
        calls = [call for call in _requested_calls(text) if call["name"] in offered]
        pieces = _call_pieces(calls) if calls else _words(_chat_reply(text, wording))
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


def _pick(wordings: Sequence[str], wording: int) -> str:
    return wordings[wording % len(wordings)]


_HELLO = (
    'Hello! {echo}I can tell you the weather (try "weather in Paris tomorrow") and set '
    'reminders (try "remind me to call mom tomorrow at 9").',
    'Hi there! {echo}Ask me for a forecast, like "weather in Oslo today", or for a '
    'reminder, like "remind me to water the plants tonight".',
    'Hey! {echo}Two things I do well: the weather ("weather in Lima tomorrow") and '
    'reminders ("remind me to pay rent on Friday").',
)
_ECHO = ('You said: "{said}". ', 'I read: "{said}". ', 'You wrote "{said}". ')


def _chat_reply(text: str, wording: int) -> str:
    said = " ".join(text.split())
    echo = _pick(_ECHO, wording).format(said=said) if said else ""
    return _pick(_HELLO, wording).format(echo=echo)


def _summarise(messages: list[BaseMessage], wording: int) -> str:
    """One sentence per call of the last tool-calling message, in call order (results
    no call asked for, which a client may send, are said as they are)."""
    asked = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls), None)
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    if asked is None:
        return "I did not ask for these results: " + "; ".join(m.text for m in results.values())
    return " ".join(_describe(call, results.get(call["id"]), wording) for call in asked.tool_calls)


_DECLINED = ("OK, I did not set the reminder", "Fine, no reminder then", "Understood, I left it")


def _describe(call: dict[str, Any], result: ToolMessage | None, wording: int) -> str:
    name, args = call["name"], call["args"]
    if result is None:
        return f"I got no answer from {name}."
    if isinstance(result.artifact, dict) and result.artifact.get("declined"):
        reason = result.artifact.get("message")
        return _pick(_DECLINED, wording) + (f": {reason}" if reason else ".")
    if result.status == "error":
        detail = result.text.removeprefix("Error: ")
        if name == "get_forecast":
            return f"Sorry, I could not get the forecast for {args.get('city')}: {detail}."
        return f"Sorry, {name} did not work: {detail}."
    sentence = _SUCCESS.get(name)
    try:
        return sentence(json.loads(result.text), wording) if sentence else f"{name}: {result.text}"
    except (ValueError, KeyError, TypeError):
        # A result in a shape we do not know (another forecast service, say): pass it on.
        return f"{name}: {result.text}"


_FORECAST = (
    "The forecast for {city} {day}: {summary}, high {high}°C, low {low}°C, "
    "{rain}% chance of precipitation.",
    "The forecast for {city} {day} says {summary}, between {low}°C and {high}°C, with a "
    "{rain}% chance of precipitation.",
    "The forecast for {city} {day}: expect {summary}, {low}°C to {high}°C, {rain}% chance "
    "of precipitation.",
)


def _forecast(data: dict[str, Any], wording: int) -> str:
    return _pick(_FORECAST, wording).format(
        city=data["city"],
        day=data["day"],
        summary=data["summary"],
        high=data["high_c"],
        low=data["low_c"],
        rain=round(data["precipitation_chance"] * 100),
    )


_SET = ("Done: I set a reminder to {what}.", "All set: I will remind you to {what}.")


def _reminder_set(data: dict[str, Any], wording: int) -> str:
    return _pick(_SET, wording).format(what=_reminder(data))


_LISTED = ("Your reminders: {items}.", "Here is what I will remind you of: {items}.")
_NONE = ("You have no reminders.", "There are no reminders yet.")


def _reminder_list(data: dict[str, Any], wording: int) -> str:
    reminders = data["reminders"]
    if not reminders:
        return _pick(_NONE, wording)
    return _pick(_LISTED, wording).format(items="; ".join(_reminder(r) for r in reminders))


_SUCCESS: dict[str, Callable[[dict[str, Any], int], str]] = {
    "get_forecast": _forecast,
    "add_reminder": _reminder_set,
    "list_reminders": _reminder_list,
}


def _reminder(data: dict[str, Any]) -> str:
    return f"{data['text']} ({data['due']})" if data.get("due") else data["text"]
