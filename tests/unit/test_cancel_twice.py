"""A call cancelled twice returns only once the tasks it cut off have saved so: a second
cancel while it waits for them must not let a save land after the call has ended."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from engine.checkpoint.memory import InMemorySaver
from engine.graph import START, StateGraph


class State(TypedDict, total=False):
    a: int


class GatedSaver(InMemorySaver):
    """Holds each error write until `gate` opens, telling `asked` when one waits."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.asked = asyncio.Event()
        self.errors: list[str] = []

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        if writes and writes[0][0] == "__error__":
            self.asked.set()
            await self.gate.wait()
            self.errors.append(writes[0][1])
        await super().aput_writes(config, writes, task_id, task_path)


async def test_a_second_cancel_waits_for_the_cut_off_tasks_to_save() -> None:
    saver = GatedSaver()
    running = [asyncio.Event(), asyncio.Event()]

    def waiting(started: asyncio.Event) -> Any:
        async def node(state: State) -> State:
            started.set()
            await asyncio.Event().wait()
            return {}

        return node

    builder = (
        StateGraph(State).add_node("x", waiting(running[0])).add_node("y", waiting(running[1]))
    )
    graph = builder.add_edge(START, "x").add_edge(START, "y").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    call = asyncio.ensure_future(graph.ainvoke({"a": 1}, config, durability="sync"))
    await asyncio.gather(*(started.wait() for started in running))
    call.cancel()
    await saver.asked.wait()
    call.cancel()
    for _ in range(3):  # loop turns for the second cancel to reach the call
        await asyncio.sleep(0)
    saved_at_end: list[str] = []
    ended = asyncio.Event()
    call.add_done_callback(lambda _: (saved_at_end.extend(saver.errors), ended.set()))
    saver.gate.set()
    await ended.wait()
    assert saved_at_end == ["CancelledError()", "CancelledError()"]
    assert call.cancelled()
