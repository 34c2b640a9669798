"""From engine stream parts to the API's SSE events: names and payloads (which the broker
encodes with `app.jsonable.to_json` as it records them)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage, message_chunk_to_message
from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler

from engine.constants import TAG_HIDDEN

# API stream mode -> the engine mode that feeds it.
ENGINE_MODE = {
    "values": "values",
    "updates": "updates",
    "custom": "custom",
    "debug": "debug",
    "tasks": "tasks",
    "checkpoints": "checkpoints",
    "messages-tuple": "messages",
    "messages": "messages",
}


def engine_modes(api_modes: list[str]) -> list[str]:
    modes = {ENGINE_MODE[m] for m in api_modes if m != "events"}
    if "messages" in api_modes:
        # A streamed message is completed by the node's update that carries it.
        modes.add("updates")
    return sorted(modes)


class EventMapper:
    """Stateful per run: `messages` mode accumulates chunks into whole messages."""

    def __init__(self, api_modes: list[str], subgraphs: bool) -> None:
        self.modes = set(api_modes)
        self.subgraphs = subgraphs
        self.partial: dict[str, AIMessageChunk] = {}
        self.announced: set[str] = set()

    def events(self, ns: tuple[str, ...], mode: str, payload: Any) -> Iterator[tuple[str, Any]]:
        suffix = "|" + "|".join(ns) if ns and self.subgraphs else ""
        if mode == "messages":
            message, metadata = payload
            if "messages-tuple" in self.modes:
                yield "messages" + suffix, [message, metadata]
            if "messages" in self.modes:
                yield from self._message(message, metadata, suffix)
            return
        if mode == "updates" and "messages" in self.modes:
            yield from self._complete(payload, suffix)
            if "updates" not in self.modes:
                return
        yield mode + suffix, payload

    def _message(self, message: Any, metadata: Any, suffix: str) -> Iterator[tuple[str, Any]]:
        mid = getattr(message, "id", None) or ""
        if mid not in self.announced:
            self.announced.add(mid)
            yield "messages/metadata" + suffix, {mid: {"metadata": metadata}}
        if isinstance(message, AIMessageChunk):
            so_far = self.partial.get(mid)
            so_far = message if so_far is None else so_far + message
            self.partial[mid] = so_far
            yield "messages/partial" + suffix, [message_chunk_to_message(so_far)]
        else:
            self.partial.pop(mid, None)
            yield "messages/complete" + suffix, [message]

    def _complete(self, update: Any, suffix: str) -> Iterator[tuple[str, Any]]:
        if not isinstance(update, dict):
            return
        for node_update in update.values():
            if not isinstance(node_update, dict):
                continue
            for value in node_update.values():
                for item in value if isinstance(value, list) else [value]:
                    mid = getattr(item, "id", None)
                    if isinstance(item, BaseMessage) and mid in self.partial:
                        del self.partial[mid]
                        yield "messages/complete" + suffix, [item]


class CallbackEvents(_AstreamEventsCallbackHandler):
    """The `events` stream mode: what `astream_events(version="v2")` yields for the run's
    graph, its nodes and what they call (chat models, tools, retrievers, custom events),
    each event handed to `publish` as it happens, in order with the run's other parts.
    Events tagged `langsmith:hidden` are left out, and the graph's own end event carries
    no input (its start event has it), as in LangGraph's server."""

    def __init__(self, root_run_id: str, publish: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self.root_run_id = root_run_id
        self.publish = publish
        self.home = threading.get_ident()
        self.loop = asyncio.get_running_loop()

    def _send(self, event: Any, event_type: str) -> None:
        if TAG_HIDDEN in event.get("tags", ()):
            return
        if event["run_id"] == self.root_run_id and event["event"].endswith("_end"):
            event["data"].pop("input", None)
        # Callbacks of a sync node fire in its worker thread: the event is published on
        # the run's event loop, as the node's other parts are.
        if threading.get_ident() == self.home:
            self.publish(event)
        else:
            self.loop.call_soon_threadsafe(self.publish, event)
