"""Sync calls of a graph run on a loop that the calling thread keeps for its next sync
call (engine/pregel/sync.py): each call still ends with nothing of its own running, a
call made while a sync stream is being read runs beside it, an error leaves the next
call a working loop, and a thread's loop is closed when the thread ends."""

import asyncio
import gc
import threading
from typing import TypedDict

import pytest

from engine import END, START, StateGraph


class Count(TypedDict):
    n: int


def counter() -> object:
    builder = StateGraph(Count)
    builder.add_node("add", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile()


async def loop_of_the_call() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_a_thread_keeps_one_loop_for_its_sync_calls() -> None:
    graph = counter()
    loops = set()
    for n in range(3):
        assert graph.invoke({"n": n}) == {"n": n + 1}
    builder = StateGraph(Count)

    def where(state: Count) -> Count:
        loops.add(asyncio.get_running_loop())  # a sync node of a sync call runs on it
        return {"n": state["n"]}

    builder.add_node("where", where)
    builder.add_edge(START, "where")
    looking = builder.compile()
    looking.invoke({"n": 0})
    list(looking.stream({"n": 0}))
    assert len(loops) == 1 and not next(iter(loops)).is_closed()


def test_a_call_ends_with_nothing_of_its_own_running() -> None:
    tasks: list[asyncio.Task[None]] = []

    def spawn(state: Count) -> Count:
        tasks.append(asyncio.get_running_loop().create_task(asyncio.sleep(3600)))
        return {"n": 1}

    builder = StateGraph(Count)
    builder.add_node("spawn", spawn)
    builder.add_edge(START, "spawn")
    assert builder.compile().invoke({"n": 0}) == {"n": 1}
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

    builder = StateGraph(Count)
    builder.add_node("fail", fail)
    builder.add_edge(START, "fail")
    with pytest.raises(ValueError, match="no"):
        builder.compile().invoke({"n": 0})
    assert counter().invoke({"n": 0}) == {"n": 1}


def test_a_threads_loop_is_closed_when_the_thread_ends() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    def where(state: Count) -> Count:
        loops.append(asyncio.get_running_loop())
        return {"n": state["n"]}

    builder = StateGraph(Count)
    builder.add_node("where", where)
    builder.add_edge(START, "where")
    graph = builder.compile()
    threads = [threading.Thread(target=graph.invoke, args=({"n": 0},)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    gc.collect()
    assert len({id(loop) for loop in loops}) == 3
    assert all(loop.is_closed() for loop in loops)
