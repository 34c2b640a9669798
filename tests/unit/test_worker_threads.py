"""Where work runs: a sync node's user code goes to a worker thread, and nothing else does.

A hop to a thread is not free on a busy server: the thread waits for the GIL (up to the
interpreter's switch interval) before it runs, and the loop waits for it, so every hop
on a turn's path delayed its first token by milliseconds."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine import END, START, MessagesState, StateGraph
from engine.checkpoint.memory import InMemorySaver


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.calls: list[str] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(getattr(fn, "__name__", repr(fn)))
        return super().submit(fn, *args, **kwargs)


def _threaded_calls(nodes: dict[str, Any]) -> list[str]:
    builder = StateGraph(MessagesState)
    names = list(nodes)
    for name, fn in nodes.items():
        builder.add_node(name, fn)
    for a, b in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(a, b)
    graph = builder.compile(checkpointer=InMemorySaver())
    executor = CountingExecutor()

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        config = {"configurable": {"thread_id": "t"}}
        async for _ in graph.astream({"messages": [("user", "hi")]}, config):
            pass

    asyncio.run(main())
    return executor.calls


async def reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [("ai", "hello")]}


def note(state: MessagesState) -> dict[str, Any]:
    return {"messages": [("ai", "noted")]}


def test_the_input_node_runs_on_the_loop_and_user_sync_nodes_in_a_thread() -> None:
    assert _threaded_calls({"reply": reply}) == []
    assert len(_threaded_calls({"reply": reply, "note": note})) == 1
