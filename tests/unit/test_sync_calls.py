"""Sync calls of a graph run on a loop that the calling thread keeps for its next sync
call (engine/pregel/sync.py): each call still ends with nothing of its own running, a
call made while a sync stream is being read runs beside it, an error leaves the next
call a working loop, a thread's loop is closed when the thread ends, and a sync node
runs with no loop, as in LangGraph: its code may call `asyncio.run` or `invoke`."""

import asyncio
import gc
import threading
from typing import Any, TypedDict

import pytest

from engine import END, START, StateGraph
from engine.pregel import sync


class Count(TypedDict):
    n: int


def one_node(node: Any) -> Any:
    builder = StateGraph(Count)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder.compile()


def counter() -> Any:
    return one_node(lambda state: {"n": state["n"] + 1})


def kept_loop() -> asyncio.AbstractEventLoop:
    """The loop this thread keeps for its sync calls."""
    return sync._here.kept.loop


def test_a_thread_keeps_one_loop_for_its_sync_calls() -> None:
    graph = counter()
    assert graph.invoke({"n": 0}) == {"n": 1}
    loop = kept_loop()
    for n in range(3):
        assert graph.invoke({"n": n}) == {"n": n + 1}
    assert list(graph.stream({"n": 0})) == [{"node": {"n": 1}}]
    assert kept_loop() is loop and not loop.is_closed()


def test_a_call_ends_with_nothing_of_its_own_running() -> None:
    counter().invoke({"n": 0})
    tasks: list[asyncio.Task[None]] = []

    def spawn(state: Count) -> Count:
        tasks.append(kept_loop().create_task(asyncio.sleep(3600)))
        return {"n": 1}

    assert one_node(spawn).invoke({"n": 0}) == {"n": 1}
    assert tasks[0].cancelled()


def test_a_call_made_while_a_sync_stream_is_read_runs_beside_it() -> None:
    graph = counter()
    seen = []
    for chunk in graph.stream({"n": 10}, stream_mode="values"):
        seen.append((chunk["n"], graph.invoke({"n": chunk["n"]})["n"]))
    assert seen == [(10, 11), (11, 12)]
    assert graph.invoke({"n": 0}) == {"n": 1}


def test_after_an_error_the_next_call_works() -> None:
    def fail(state: Count) -> Count:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        one_node(fail).invoke({"n": 0})
    assert counter().invoke({"n": 0}) == {"n": 1}


def test_a_threads_loop_is_closed_when_the_thread_ends() -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    graph = counter()

    def call() -> None:
        graph.invoke({"n": 0})
        loops.append(kept_loop())

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    gc.collect()
    assert len({id(loop) for loop in loops}) == 3
    assert all(loop.is_closed() for loop in loops)


def test_a_sync_node_may_run_async_code_and_invoke_graphs_in_its_thread() -> None:
    inner = counter()
    threads = []

    async def fetch() -> int:
        await asyncio.sleep(0)
        return 40

    def node(state: Count) -> Count:
        threads.append(threading.get_ident())
        return {"n": asyncio.run(fetch()) + inner.invoke({"n": 1})["n"]}

    assert one_node(node).invoke({"n": 0}) == {"n": 42}
    assert threads == [threading.get_ident()]
