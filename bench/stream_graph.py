"""The graph bench/streams.py serves (THREADLINE_GRAPHS points here as `ticker`).

One node sends a `ready` custom event as soon as its run starts, waits until the client
creates `start_file` (once every stream is open; at most `max_wait` seconds), then sends
`ticks` custom events `interval` seconds apart, each stamped with its creation time: the
client measures the delay from that stamp to the receipt. A file is the barrier because
the client and the server share the machine, and the wait costs no database queries.
"""

import asyncio
import os
import time
from typing import Any, TypedDict

from engine import START, StateGraph, get_stream_writer

BARRIER_POLL_S = 0.1


class TickState(TypedDict, total=False):
    start_file: str
    max_wait: float
    ticks: int
    interval: float
    sent: int


async def tick(state: TickState) -> dict[str, Any]:
    write = get_stream_writer()
    write({"ready": time.time()})
    deadline = time.monotonic() + state["max_wait"]
    while not os.path.exists(state["start_file"]) and time.monotonic() < deadline:
        await asyncio.sleep(BARRIER_POLL_S)
    for i in range(state["ticks"]):
        if i:
            await asyncio.sleep(state["interval"])
        write({"tick": i, "created": time.time()})
    return {"sent": state["ticks"]}


graph = StateGraph(TickState).add_node("tick", tick).add_edge(START, "tick")
