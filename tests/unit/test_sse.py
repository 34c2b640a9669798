"""A stream gives its caller's slot back with its last event: before the response's final
message, so a client that opens its next stream as soon as this one ends (a chat sends
its next turn at once) is not refused for a slot still held."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from app.api.sse import event_stream
from app.runs.broker import Event
from app.runs.slots import StreamSlots


async def _one_batch() -> AsyncIterator[tuple[str, list[Event]]]:
    yield "run", [Event(0, "metadata", "{}"), Event(1, "values", '{"messages":[]}')]


async def test_the_slot_is_free_before_the_response_ends() -> None:
    slots = StreamSlots(limit=1)
    free_at_end: list[bool] = []
    ended = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await ended.wait()  # the client stays until the response ends
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            free_at_end.append(not slots.open)
            ended.set()

    with slots.hold("alice") as release:
        response = event_stream(_one_batch(), release)
        scope = {"type": "http", "method": "GET", "headers": []}
        await asyncio.wait_for(response(scope, receive, send), 10)
        assert free_at_end == [True]
    assert not slots.open
