"""`@task` futures where LangGraph refuses them (docs/langgraph-differences.md): a sync
task's `result()` in an async entrypoint, and an async task called from a sync
entrypoint under `invoke`. The cases LangGraph allows are differential conformance
cases (`tests/conformance/cases_func.py`)."""

from __future__ import annotations

import asyncio
import threading

from engine.checkpoint.memory import InMemorySaver
from engine.func import entrypoint, task


@task
def double(x: int) -> int:
    return 2 * x


@task
async def on_a_loop(x: int) -> tuple[int, bool]:
    await asyncio.sleep(0)
    return x + 100, threading.current_thread() is threading.main_thread()


def _config(thread_id: str) -> dict[str, dict[str, str]]:
    return {"configurable": {"thread_id": thread_id}}


async def test_a_sync_task_result_is_taken_in_an_async_entrypoint() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    async def flow(x: int) -> int:
        return double(x).result() + await double(x)  # type: ignore[no-any-return]

    assert await flow.ainvoke(3, _config("a")) == 12


def test_an_async_task_runs_from_a_sync_entrypoint_under_invoke() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    def flow(x: int) -> tuple[int, bool]:
        return on_a_loop(x).result()  # type: ignore[no-any-return]

    value, on_main_thread = flow.invoke(1, _config("b"))
    assert value == 101
    assert not on_main_thread  # the invoke's loop is held by the entrypoint


async def test_an_async_task_from_a_sync_entrypoint_runs_on_the_run_loop() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    def flow(x: int) -> tuple[int, bool]:
        return on_a_loop(x).result()  # type: ignore[no-any-return]

    value, on_main_thread = await flow.ainvoke(1, _config("c"))
    assert value == 101
    assert on_main_thread
