"""From engine stream parts to the API's SSE events: names and payloads (which the broker
encodes with `app.jsonable.to_json` as it records them)."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType
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
        if mode == "checkpoints":
            payload = shown_configs(payload)
        elif mode == "debug" and payload.get("type") == "checkpoint":
            payload = {**payload, "payload": studio_checkpoint(shown_configs(payload["payload"]))}
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


def shown_configs(payload: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint part whose `config` and `parent_config` show the run's configurable
    keys as a client may read them: the engine gives them all, as LangGraph's does, and
    the server's carry its own objects (the run's user, its resources) beside the
    client's values; those stay in the server."""
    shown = dict(payload)
    for key in ("config", "parent_config"):
        config = payload.get(key)
        if isinstance(config, dict) and isinstance(config.get("configurable"), dict):
            configurable = config["configurable"]
            shown[key] = {
                **config,
                "configurable": {k: v for k, v in configurable.items() if _plain(v)},
            }
    return shown


def _plain(value: Any) -> bool:
    """Whether `value` is JSON as it is: no object of the server's inside."""
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(map(_plain, value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def studio_checkpoint(payload: dict[str, Any]) -> dict[str, Any]:
    """A `debug` checkpoint as LangGraph's server sends it (LangGraph Studio reads it):
    its version and its parent's also as checkpoint objects, and each task's subgraph
    state as the `checkpoint` it is at."""
    return {
        **payload,
        "checkpoint": _checkpoint_of(payload.get("config")),
        "parent_checkpoint": _checkpoint_of(payload.get("parent_config")),
        "tasks": [_task_checkpoint(task) for task in payload.get("tasks") or ()],
    }


def _checkpoint_of(config: dict[str, Any] | None) -> dict[str, Any] | None:
    conf = (config or {}).get("configurable") or {}
    if not conf.get("thread_id") or not conf.get("checkpoint_id"):
        return None
    found = {k: conf[k] for k in ("checkpoint_id", "thread_id")}
    if "checkpoint_ns" in conf:
        found["checkpoint_ns"] = conf["checkpoint_ns"] or ""
    if conf.get("checkpoint_map"):
        found["checkpoint_map"] = conf["checkpoint_map"]
    return found


def _task_checkpoint(task: dict[str, Any]) -> dict[str, Any]:
    state = task.get("state")
    if not isinstance(state, dict) or not state.get("configurable"):
        return task
    shown = {k: v for k, v in task.items() if k != "state"}
    return {**shown, "checkpoint": state["configurable"]}


class Later:
    """Calls made now, run in order once the calling task gives the event loop up (or at
    the latest when the `with` block ends): when `astream`'s reader would read a part.

    A run's parts are encoded then, not as the engine makes them: a node's `updates` part
    (and its `debug` and `tasks` results) holds the very objects the step's reducers take
    right after, and `add_messages` gives a message without an id its id in place. Read
    as `astream` (and LangGraph's server) reads them, the part shows that id, the id the
    message has in the state; encoded at once it would show `"id": null`. (In a step of
    several tasks the step waits for the others, and the part is read before the reducers
    ran, with no id: so it is in LangGraph too.)"""

    def __init__(self) -> None:
        self._calls: deque[Callable[[], None]] = deque()
        self._handle: asyncio.Handle | None = None

    def __call__(self, call: Callable[[], None]) -> None:
        self._calls.append(call)
        if self._handle is None:
            self._handle = asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Run the calls waiting, now."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        while self._calls:
            self._calls.popleft()()

    def __enter__(self) -> Later:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.flush()


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
