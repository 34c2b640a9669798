"""Where work runs: a sync node's user code goes to a worker thread, and nothing else does.

A hop to a thread is not free on a busy server: the thread waits for the GIL (up to the
interpreter's switch interval) before it runs, and the loop waits for it, so every hop
on a turn's path delayed its first token by milliseconds."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from app import api
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


def _calls(dependant: Dependant) -> list[Any]:
    return [dependant.call, *(c for d in dependant.dependencies for c in _calls(d))]


def _api_routes() -> list[APIRoute]:
    modules = [
        importlib.import_module(f"app.api.{m.name}") for m in pkgutil.iter_modules(api.__path__)
    ]
    routers = [m.router for m in modules if isinstance(getattr(m, "router", None), APIRouter)]
    return [r for router in routers for r in router.routes if isinstance(r, APIRoute)]


def test_no_endpoint_or_dependency_needs_a_worker_thread() -> None:
    """FastAPI runs a plain function endpoint or dependency in a worker thread."""
    routes = _api_routes()
    assert any(route.path.endswith("/runs/stream") for route in routes)
    sync = {
        f"{route.path}: {getattr(call, '__qualname__', call)}"
        for route in routes
        for call in _calls(route.dependant)
        if call is not None
        and not inspect.iscoroutinefunction(call)
        and not inspect.isasyncgenfunction(call)
        and not inspect.iscoroutinefunction(getattr(call, "__call__", None))  # noqa: B004
    }
    assert not sync, sorted(sync)
