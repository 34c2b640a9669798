"""Sync calls of a graph run on a loop that the calling thread keeps for its next sync
call (engine/pregel/sync.py): each call still ends with nothing of its own running, a
call made while a sync stream is being read runs beside it, an error leaves the next
call a working loop, a thread's loop is closed when the thread ends and holds nothing
of the call that made it (no run outlives its stream), and a sync node
runs with no loop, as in LangGraph: its code may call `asyncio.run` or `invoke`. A sync
stream turns the loop twice a part, stops its run where its reader stops reading
(keeping the thread's loop), raises the run's error after the parts before it, and hands
over the parts a node makes while it runs."""

import asyncio
import contextvars
import gc
import threading
import weakref
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage

from engine import END, START, StateGraph
from engine.config import get_stream_writer
from engine.func import entrypoint, task
from engine.graph.message import push_message
from engine.pregel import sync
from engine.pregel.loop import Loop


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


class Held:
    """A value a context holds, whose end a weak reference sees."""


def test_a_threads_loop_keeps_nothing_of_the_call_that_made_it() -> None:
    # A worker thread's first sync call may come from a node's code, inside a run: the
    # loop it keeps must not hold that run's context (and so the run) for the thread.
    var: contextvars.ContextVar[Held] = contextvars.ContextVar("held")
    graph = counter()
    seen: list[weakref.ref[Held]] = []
    made, checked = threading.Event(), threading.Event()

    def call() -> None:
        held = Held()
        seen.append(weakref.ref(held))
        token = var.set(held)
        graph.invoke({"n": 0})
        var.reset(token)
        del held
        made.set()
        checked.wait()

    thread = threading.Thread(target=contextvars.Context().run, args=(call,))
    thread.start()
    made.wait()
    gc.collect()
    try:
        assert seen[0]() is None
    finally:
        checked.set()
        thread.join()


def test_a_sync_stream_keeps_no_run_of_a_graph_its_node_invoked() -> None:
    inner = counter()

    def node(state: Count) -> Count:
        return {"n": inner.invoke(state)["n"]}

    assert list(one_node(node).stream({"n": 0})) == [{"node": {"n": 1}}]
    gc.collect()
    assert not [obj for obj in gc.get_objects() if isinstance(obj, Loop)]


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


def chain(length: int, ran: list[int]) -> Any:
    """Nodes one after another, each adding one to `n` and noting that it ran."""

    def step(state: Count) -> Count:
        ran.append(state["n"])
        return {"n": state["n"] + 1}

    builder = StateGraph(Count)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        builder.add_node(name, step)
    for before, after in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(before, after)
    return builder.compile()


def test_a_sync_stream_turns_its_loop_twice_a_part() -> None:
    graph = chain(40, [])
    graph.invoke({"n": 0})
    loop = kept_loop()
    turns = 0
    run_once = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:
        nonlocal turns
        turns += 1
        run_once()

    loop._run_once = counted  # type: ignore[attr-defined]
    try:
        parts = list(graph.stream({"n": 0}))
    finally:
        del loop._run_once  # type: ignore[attr-defined]
    assert len(parts) == 40
    # Each part: the run's step, then the loop's stop (and a few to start and end).
    # Through an async iterator and events it took four.
    assert turns <= 2 * len(parts) + 4


def test_a_reader_that_stops_after_a_part_stops_the_run_at_that_step() -> None:
    ran: list[int] = []
    graph = chain(10, ran)
    parts = graph.stream({"n": 0})
    assert next(parts) == {"n0": {"n": 1}}
    loop = kept_loop()
    parts.close()  # type: ignore[attr-defined]
    assert ran == [0]
    # The thread keeps its loop, with nothing of the stopped run left on it.
    assert kept_loop() is loop and not asyncio.all_tasks(loop)
    assert graph.invoke({"n": 0}) == {"n": 10}


def test_an_error_of_a_sync_stream_reaches_its_reader_after_the_parts_before_it() -> None:
    def fail(state: Count) -> Count:
        raise ValueError("no")

    builder = StateGraph(Count)
    builder.add_node("first", lambda state: {"n": 1})
    builder.add_node("fail", fail)
    builder.add_edge(START, "first")
    builder.add_edge("first", "fail")
    parts = builder.compile().stream({"n": 0})
    assert next(parts) == {"first": {"n": 1}}
    with pytest.raises(ValueError, match="no"):
        next(parts)
    assert counter().invoke({"n": 0}) == {"n": 1}


@pytest.mark.parametrize("mode", ["custom", "messages"])
def test_a_sync_stream_hands_over_parts_while_their_node_runs(mode: str) -> None:
    """With the modes a node makes parts in while it runs (and with subgraphs), its code
    runs in a worker thread, as in LangGraph, so the reader gets each part at once: here
    the node goes on only once its reader has its first part."""
    read = threading.Event()

    def node(state: Count) -> Count:
        get_stream_writer()("first")
        push_message(AIMessage("hi", id="m1"), state_key=None)
        return {"n": int(read.wait(timeout=10))}

    parts = one_node(node).stream({"n": 0}, stream_mode=[mode, "updates"])
    assert next(parts)[0] == mode
    read.set()
    assert list(parts)[-1] == ("updates", {"node": {"n": 1}})


def test_a_sync_stream_of_an_entrypoint_hands_over_each_task_update_at_once() -> None:
    """An entrypoint streams eagerly, as in LangGraph: a task call's update reaches the
    reader while the entrypoint goes on (here it waits for the reader to have it)."""
    read = threading.Event()

    @task
    def first() -> str:
        return "first"

    @entrypoint()
    def flow(given: int) -> bool:
        first().result()
        return read.wait(timeout=10)

    parts = flow.stream(0)
    assert next(parts) == {"first": "first"}
    read.set()
    assert list(parts) == [{"flow": True}]
