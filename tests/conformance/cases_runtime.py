"""What a node gets besides its state: the run's context and runtime, a store, managed
values (RemainingSteps, IsLastStep), stream writers; deferred nodes and cached nodes.

No ``from __future__ import annotations`` here (see cases_core).
"""

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig

from .cases_core import ItemsState, LogState, XLogState, build, chain_edges, note
from .cases_persistence import timeline
from .harness import NS, bump, case, invoke, stream, thread


@dataclass
class UserContext:
    user: str
    level: int = 1


class DictContext(TypedDict):
    user: str


# --------------------------------------------------------------------------- context


@case(aio=True)
def case_context_reaches_the_runtime(ns: NS, aio: bool) -> Any:
    def typed(state: Any, runtime: ns.Runtime[UserContext]) -> dict[str, Any]:
        return {"log": [runtime.context.user, runtime.context.level]}

    def untyped(state, runtime):  # found by its name, not by an annotation
        return {"log": [type(runtime.context).__name__, runtime.store is None]}

    async def looked_up(state: Any) -> dict[str, Any]:
        return {"log": [ns.get_runtime(UserContext).context.user]}

    graph = (
        ns.StateGraph(LogState, context_schema=UserContext)
        .add_node("typed", typed)
        .add_node("untyped", untyped)
        .add_node("looked_up", looked_up)
        .add_edge(ns.START, "typed")
        .add_edge("typed", "untyped")
        .add_edge("untyped", "looked_up")
        .compile()
    )
    context = UserContext(user="ann", level=3)
    return {
        "invoke": invoke(graph, {"log": []}, aio=aio, context=context),
        "stream": stream(graph, {"log": []}, aio=aio, context=context),
    }


@case
def case_typeddict_context_and_no_context(ns: NS) -> Any:
    def read(state: Any, runtime: ns.Runtime[DictContext]) -> dict[str, Any]:
        return {"log": [runtime.context]}

    graph = (
        ns.StateGraph(LogState, context_schema=DictContext)
        .add_node("read", read)
        .add_edge(ns.START, "read")
        .compile()
    )
    return {
        "given": invoke(graph, {"log": []}, context={"user": "bob"}),
        "none": invoke(graph, {"log": []}),
    }


@case(sql=True)
def case_context_survives_interrupt_and_resume(ns: NS) -> Any:
    def ask(state: Any, runtime: ns.Runtime[UserContext]) -> dict[str, Any]:
        return {"log": [runtime.context.user, ns.interrupt("sure?")]}

    graph = (
        ns.StateGraph(LogState, context_schema=UserContext)
        .add_node("ask", ask)
        .add_edge(ns.START, "ask")
        .compile(checkpointer=ns.InMemorySaver())
    )
    cfg = thread()
    first = invoke(graph, {"log": []}, cfg, context=UserContext(user="ann"))
    second = invoke(graph, ns.Command(resume="yes"), cfg, context=UserContext(user="bob"))
    return {"first": first, "second": second, **timeline(graph, cfg)}


# --------------------------------------------------------------------------- store


def item_obs(item: Any) -> Any:
    return None if item is None else [list(item.namespace), item.key, item.value]


@case(aio=True, sql=True)
def case_store_in_nodes(ns: NS, aio: bool) -> Any:
    def write(state: Any) -> dict[str, Any]:
        store = ns.get_store()
        store.put(("users", "ann"), "prefs", {"tone": "brief"})
        store.put(("users", "bob"), "prefs", {"tone": "long"})
        return {"log": ["write"]}

    def by_param(state: Any, *, store: ns.BaseStore) -> dict[str, Any]:
        return {"log": [item_obs(store.get(("users", "ann"), "prefs"))]}

    async def by_runtime(state: Any, runtime: ns.Runtime) -> dict[str, Any]:
        found = await runtime.store.asearch(("users",))
        return {"log": [sorted(item_obs(i) for i in found)]}

    store = ns.InMemoryStore()
    graph = build(
        ns,
        LogState,
        {"write": write, "by_param": by_param, "by_runtime": by_runtime},
        chain_edges(["write", "by_param", "by_runtime"]),
        checkpointer=ns.InMemorySaver(),
        store=store,
    )
    cfg = thread()
    run = stream(graph, {"log": []}, cfg, stream_mode=["updates", "values"], aio=aio)
    return {
        "run": run,
        **timeline(graph, cfg),
        "after": item_obs(store.get(("users", "bob"), "prefs")),
    }


@case
def case_no_store(ns: NS) -> Any:
    def look(state: Any) -> dict[str, Any]:
        return {"log": [ns.get_store() is None]}

    return invoke(build(ns, LogState, {"look": look}, [("S", "look")]), {"log": []})


@case(aio=True)
def case_context_and_store_reach_subgraphs(ns: NS, aio: bool) -> Any:
    def inner(state: Any, runtime: ns.Runtime[UserContext]) -> dict[str, Any]:
        runtime.store.put(("seen",), runtime.context.user, {"level": runtime.context.level})
        return {"log": [runtime.context.user]}

    sub = (
        ns.StateGraph(LogState, context_schema=UserContext)
        .add_node("inner", inner)
        .add_edge(ns.START, "inner")
        .compile()
    )

    def calls_sub(state: Any) -> dict[str, Any]:
        return {"log": sub.invoke({"log": []})["log"]}

    store = ns.InMemoryStore()
    graph = (
        ns.StateGraph(LogState, context_schema=UserContext)
        .add_node("as_node", sub)
        .add_node("calls_sub", calls_sub)
        .add_edge(ns.START, "as_node")
        .add_edge("as_node", "calls_sub")
        .compile(store=store)
    )
    context = UserContext(user="ann", level=2)
    run = stream(graph, {"log": []}, subgraphs=True, aio=aio, context=context)
    return {"run": run, "stored": item_obs(store.get(("seen",), "ann"))}


# --------------------------------------------------------------------------- managed values


def managed_loop(
    ns: NS, key: str, managed: Any, done: Callable[[Any], bool], **compile_kw: Any
) -> Any:
    """One node, "work", that logs the managed value `key` and runs again until `done`."""
    schema = TypedDict("LoopState", {"log": Annotated[list, operator.add], key: managed})

    def work(state: Any) -> dict[str, Any]:
        return {"log": [state[key]]}

    return (
        ns.StateGraph(schema)
        .add_node("work", work)
        .add_edge(ns.START, "work")
        .add_conditional_edges("work", lambda s: ns.END if done(s) else "work")
        .compile(**compile_kw)
    )


@case(aio=True, sql=True)
def case_remaining_steps(ns: NS, aio: bool) -> Any:
    graph = managed_loop(
        ns,
        "remaining_steps",
        ns.RemainingSteps,
        lambda s: s["remaining_steps"] <= 2,
        checkpointer=ns.InMemorySaver(),
    )
    cfg = {**thread(), "recursion_limit": 7}
    run = stream(graph, {"log": []}, cfg, stream_mode="values", aio=aio)
    return {"run": run, **timeline(graph, cfg)}


@case(aio=True)
def case_remaining_steps_on_a_resumed_run(ns: NS, aio: bool) -> Any:
    """A run that goes on from a checkpoint (an answered interrupt, a static breakpoint,
    a run stopped by the step limit) counts its limit from the loaded step, which leaves
    its nodes one more step than a run that starts with input."""

    class ResumeState(TypedDict):
        log: Annotated[list, operator.add]
        remaining_steps: ns.RemainingSteps

    schema = ResumeState

    def ask(state: Any) -> dict[str, Any]:
        ns.interrupt("q")
        return {"log": [state["remaining_steps"]]}

    def work(state: Any) -> dict[str, Any]:
        return {"log": [state["remaining_steps"]]}

    asking = build(ns, schema, {"ask": ask}, chain_edges(["ask"]), checkpointer=ns.InMemorySaver())
    cfg = {**thread("ask"), "recursion_limit": 10}
    first = invoke(asking, {"log": []}, cfg, aio=aio)
    resumed = invoke(asking, ns.Command(resume=1), cfg, aio=aio)

    paused = build(
        ns,
        schema,
        {"a": work, "b": work},
        chain_edges(["a", "b"]),
        checkpointer=ns.InMemorySaver(),
        interrupt_before=["b"],
    )
    cfg2 = {**thread("bp"), "recursion_limit": 10}
    before = invoke(paused, {"log": []}, cfg2, aio=aio)
    after = invoke(paused, None, cfg2, aio=aio)

    looping = (
        ns.StateGraph(schema)
        .add_node("work", work)
        .add_edge(ns.START, "work")
        .add_edge("work", "work")
        .compile(checkpointer=ns.InMemorySaver())
    )
    cfg3 = {**thread("loop"), "recursion_limit": 4}
    limited = invoke(looping, {"log": []}, cfg3, aio=aio)
    again = stream(looping, None, cfg3, stream_mode="updates", aio=aio)
    return {
        "interrupt": [first, resumed],
        "breakpoint": [before, after],
        "limited": [limited, again, looping.get_state(cfg3).values],
    }


@case
def case_is_last_step(ns: NS) -> Any:
    graph = managed_loop(ns, "is_last_step", ns.IsLastStep, lambda s: s["is_last_step"])
    return {
        "limit_4": invoke(graph, {"log": []}, {"recursion_limit": 4}),
        "limit_1": invoke(graph, {"log": []}, {"recursion_limit": 1}),
    }


# --------------------------------------------------------------------------- writers


@case(aio=True)
def case_writer_and_runtime_stream_writer(ns: NS, aio: bool) -> Any:
    def by_param(state: Any, writer: ns.StreamWriter) -> dict[str, Any]:
        writer({"from": "writer"})
        return {"log": ["by_param"]}

    def by_runtime(state: Any, runtime: ns.Runtime) -> dict[str, Any]:
        runtime.stream_writer({"from": "runtime"})
        return {"log": ["by_runtime"]}

    graph = build(ns, LogState, {"a": by_param, "b": by_runtime}, chain_edges(["a", "b"]))
    return {
        "custom": stream(graph, {"log": []}, stream_mode=["custom", "updates"], aio=aio),
        "not_streamed": invoke(graph, {"log": []}, aio=aio),
    }


@case(aio=True)
def case_routers_get_runtime_store_and_writer(ns: NS, aio: bool) -> Any:
    """A router is handed what it asks for as a node is: the runtime, the store (also
    keyword-only), the writer (its parts go to the custom stream) and the config; an
    entry router too."""

    def by_runtime(state: Any, runtime: ns.Runtime[UserContext]) -> str:
        return "b" if runtime.context.level > 1 else ns.END

    def by_store(state: Any, *, store: ns.BaseStore) -> str:
        return "b" if store.get(("k",), "go") else ns.END

    def by_writer(state: Any, writer: ns.StreamWriter, config: RunnableConfig) -> str:
        writer({"routed": config["metadata"]["langgraph_node"]})
        return "b"

    async def by_writer_async(state: Any, writer: ns.StreamWriter) -> str:
        writer({"routed": "async"})
        return "b"

    routers = [by_runtime, by_store, by_writer] + ([by_writer_async] if aio else [])
    out: dict[str, Any] = {}
    for router in routers:
        for entry in (False, True):
            builder = ns.StateGraph(LogState, context_schema=UserContext)
            builder.add_node("a", note("a")).add_node("b", note("b"))
            if entry:
                builder.set_conditional_entry_point(router, ["b", ns.END])
            else:
                builder.add_edge(ns.START, "a").add_conditional_edges("a", router, ["b", ns.END])
            store = ns.InMemoryStore()
            store.put(("k",), "go", {})
            graph = builder.compile(store=store)
            out[f"{router.__name__}/{entry}"] = stream(
                graph,
                {"log": []},
                stream_mode=["custom", "updates"],
                aio=aio,
                context=UserContext(user="ann", level=2),
            )
    return out


# --------------------------------------------------------------------------- defer


@case(aio=True, sql=True)
def case_deferred_node_waits_for_every_branch(ns: NS, aio: bool) -> Any:
    builder = ns.StateGraph(LogState)
    for name in ("a", "b1", "b2", "c"):
        builder.add_node(name, note(name))
    builder.add_node("join", note("join"), defer=True)
    for src, dst in (("a", "b1"), ("b1", "b2"), ("a", "c"), ("b2", "join"), ("c", "join")):
        builder.add_edge(src, dst)
    builder.add_edge(ns.START, "a").add_edge("join", ns.END)
    graph = builder.compile(checkpointer=ns.InMemorySaver())
    cfg = thread()
    run = stream(graph, {"log": []}, cfg, aio=aio, unordered=True)
    return {"run": run, **timeline(graph, cfg)}


@case(aio=True, sql=True)
def case_deferred_node_outlasts_a_longer_branch(ns: NS, aio: bool) -> Any:
    """A deferred node whose triggers were all written while another branch goes on for
    more steps without writing them: it runs once that branch is done, by plain edges
    and by a waiting edge alike."""
    out = {}
    for joined in (False, True):
        builder = ns.StateGraph(LogState)
        for name in ("a", "b", "c", "c2", "c3"):
            builder.add_node(name, note(name))
        builder.add_node("join", note("join"), defer=True)
        for src, dst in (("a", "b"), ("a", "c"), ("c", "c2"), ("c2", "c3")):
            builder.add_edge(src, dst)
        if joined:
            builder.add_edge(["b", "c"], "join")
        else:
            builder.add_edge("b", "join").add_edge("c", "join")
        builder.add_edge(ns.START, "a").add_edge("join", ns.END)
        graph = builder.compile(checkpointer=ns.InMemorySaver())
        cfg = thread(f"joined {joined}")
        run = stream(graph, {"log": []}, cfg, aio=aio, unordered=True)
        out[f"joined {joined}"] = {"run": run, **timeline(graph, cfg)}
    return out


@case
def case_deferred_node_after_sends(ns: NS) -> Any:
    class FanState(TypedDict):
        items: list
        log: Annotated[list, operator.add]

    graph = (
        ns.StateGraph(FanState)
        .add_node("work", lambda s: {"log": [s["item"]]})
        .add_node("summary", lambda s: {"log": [f"{len(s['log'])} done"]}, defer=True)
        .add_conditional_edges(
            ns.START, lambda s: [ns.Send("work", {"item": i}) for i in s["items"]]
        )
        .add_edge("work", "summary")
        .compile()
    )
    return invoke(graph, {"items": [1, 2, 3], "log": []})


# --------------------------------------------------------------------------- cache


@case(aio=True)
def case_cached_node(ns: NS, aio: bool) -> Any:
    calls: dict[str, int] = {}

    def slow(state: Any) -> dict[str, Any]:
        return {"log": [f"slow#{bump(calls, 'slow')} x={state['x']}"]}

    graph = (
        ns.StateGraph(XLogState)
        .add_node("slow", slow, cache_policy=ns.CachePolicy())
        .add_node("fresh", note("fresh"))
        .add_edge(ns.START, "slow")
        .add_edge("slow", "fresh")
        .compile(cache=ns.InMemoryCache())
    )
    runs = [
        stream(graph, {"x": x, "log": []}, stream_mode=["updates"], aio=aio) for x in (1, 1, 2, 1)
    ]
    return {"runs": runs, "calls": calls}


@case(aio=True)
def case_cached_node_sent_the_same_input_twice_in_a_step(ns: NS, aio: bool) -> Any:
    """Tasks of one step with the same input all run (the cache is looked up before
    the step, written after); the next run's are all served from the cache."""
    calls: list[int] = []

    def work(state: Any) -> dict[str, Any]:
        calls.append(state["item"])
        return {"results": [state["item"] * 10]}

    async def awork(state: Any) -> dict[str, Any]:
        return work(state)

    def fan(state: Any) -> list[Any]:
        return [ns.Send("work", {"item": i}) for i in state["items"]]

    builder = ns.StateGraph(ItemsState)
    builder.add_node("work", awork if aio else work, cache_policy=ns.CachePolicy())
    graph = builder.add_conditional_edges(ns.START, fan, ["work"]).compile(cache=ns.InMemoryCache())
    runs = [
        stream(graph, {"items": [1, 2, 2], "results": []}, aio=aio, unordered=True)
        for _ in range(2)
    ]
    return {"runs": runs, "calls": sorted(calls)}


@case(aio=True, sql=True)
def case_cached_subgraph_node(ns: NS, aio: bool) -> Any:
    """A compiled subgraph as a node with a cache policy: its result is cached as any
    node's, so the next run with the same input runs none of its inner nodes; a
    subgraph that stopped on a question is not cached."""
    calls: dict[str, int] = {}

    def inner(state: Any) -> dict[str, Any]:
        return {"log": [f"inner#{bump(calls, 'inner')} x={state['x']}"]}

    def asking(state: Any) -> dict[str, Any]:
        bump(calls, "asking")
        return {"log": [ns.interrupt("go?")]}

    def parent(node: Any) -> Any:
        sub = ns.StateGraph(XLogState).add_node("inner", node).add_edge(ns.START, "inner")
        return (
            ns.StateGraph(XLogState)
            .add_node("sub", sub.compile(), cache_policy=ns.CachePolicy())
            .add_edge(ns.START, "sub")
            .compile(checkpointer=ns.InMemorySaver(), cache=ns.InMemoryCache())
        )

    graph = parent(inner)
    runs = [
        stream(graph, {"x": x, "log": []}, thread(f"t{i}"), subgraphs=True, aio=aio)
        for i, x in enumerate((1, 1, 2))
    ]
    asked = parent(asking)
    questions = [stream(asked, {"x": 1, "log": []}, thread(f"q{i}"), aio=aio) for i in range(2)]
    resumed = invoke(asked, ns.Command(resume="yes"), thread("q0"), aio=aio)
    again = stream(asked, {"x": 1, "log": []}, thread("q2"), aio=aio)
    return {
        "runs": runs,
        "questions": questions,
        "resumed": resumed,
        "again": again,
        "calls": calls,
        "state": graph.get_state(thread("t1")).values,
    }


@case(aio=True)
def case_subgraph_does_not_use_the_parent_cache(ns: NS, aio: bool) -> Any:
    """Only the parent has a cache: a cached node of a subgraph (a node, or a graph a
    node invokes) runs again on the same input, as LangGraph hands subgraphs no cache;
    a subgraph with a cache of its own uses it."""
    calls: dict[str, int] = {}

    def sub(label: str, **compile_kw: Any) -> Any:
        def inner(state: Any) -> dict[str, Any]:
            return {"log": [f"{label}#{bump(calls, label)}"]}

        builder = ns.StateGraph(LogState).add_node("inner", inner, cache_policy=ns.CachePolicy())
        return builder.add_edge(ns.START, "inner").compile(**compile_kw)

    invoked = sub("invoked")

    def call(state: Any) -> dict[str, Any]:
        return {"log": invoked.invoke({"log": []})["log"]}

    graph = (
        ns.StateGraph(LogState)
        .add_node("node", sub("node"))
        .add_node("own", sub("own", cache=ns.InMemoryCache()))
        .add_node("call", call)
        .add_edge(ns.START, "node")
        .add_edge(ns.START, "own")
        .add_edge(ns.START, "call")
        .compile(cache=ns.InMemoryCache())
    )
    runs = [invoke(graph, {"log": []}, aio=aio) for _ in range(2)]
    return {"runs": runs, "calls": calls}


@case(aio=True)
def case_subgraph_uses_the_parent_store(ns: NS, aio: bool) -> Any:
    """A subgraph compiled with a store of its own: its nodes see the parent's store
    (none when the parent has none), as LangGraph's do."""
    own = ns.InMemoryStore()
    own.put(("ns",), "k", {"v": 1})

    def count(state: Any) -> dict[str, Any]:
        store = ns.get_store()
        return {"log": [None if store is None else len(store.search(("ns",)))]}

    sub = ns.StateGraph(LogState).add_node("count", count).add_edge(ns.START, "count")
    parent = ns.StateGraph(LogState).add_node("sub", sub.compile(store=own))
    parent.add_edge(ns.START, "sub")
    return [
        invoke(parent.compile(**kw), {"log": []}, aio=aio)
        for kw in ({}, {"store": ns.InMemoryStore()})
    ]


@case()
def case_clear_cache(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def slow(state: Any) -> dict[str, Any]:
        return {"log": [f"slow#{bump(calls, 'slow')}"]}

    graph = (
        ns.StateGraph(XLogState)
        .add_node("slow", slow, cache_policy=ns.CachePolicy())
        .add_edge(ns.START, "slow")
        .compile(cache=ns.InMemoryCache())
    )
    runs = [invoke(graph, {"x": 1, "log": []})]
    graph.clear_cache()
    runs.append(invoke(graph, {"x": 1, "log": []}))
    return {"runs": runs, "calls": calls}


@case(sql=True)
def case_cache_key_function_and_saved_thread(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def slow(state: Any) -> dict[str, Any]:
        return {"log": [f"slow#{bump(calls, 'slow')}"]}

    policy = ns.CachePolicy(key_func=lambda s: str(s["x"] % 2))
    graph = (
        ns.StateGraph(XLogState)
        .add_node("slow", slow, cache_policy=policy)
        .add_edge(ns.START, "slow")
        .compile(checkpointer=ns.InMemorySaver(), cache=ns.InMemoryCache())
    )
    cfg = thread()
    runs = [invoke(graph, {"x": x, "log": []}, cfg) for x in (1, 3, 2)]
    return {"runs": runs, "calls": calls, **timeline(graph, cfg)}


@case
def case_max_concurrency_bounds_a_fan_out(ns: NS) -> Any:
    """`max_concurrency` in the config: at most that many of a step's tasks (here a
    fan-out of Sends) run at once, in a graph and in the subgraph it runs; without it,
    all of them."""
    import asyncio

    running = {"now": 0, "most": 0}

    async def work(state: Any) -> dict[str, Any]:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        for _ in range(5):  # let the other tasks start, if they may
            await asyncio.sleep(0)
        running["now"] -= 1
        return {"log": [state["item"]]}

    inner = (
        ns.StateGraph(LogState)
        .add_node("work", work)
        .add_conditional_edges(
            ns.START, lambda s: [ns.Send("work", {"item": i}) for i in range(12)]
        )
        .compile()
    )
    outer = ns.StateGraph(LogState).add_node("inner", inner).add_edge(ns.START, "inner").compile()
    out = {}
    for label, graph in (("graph", inner), ("subgraph", outer)):
        for limit in (None, 1, 4):
            running["most"] = 0
            config = {"max_concurrency": limit} if limit else {}
            result = invoke(graph, {"log": []}, config, aio=True)
            out[f"{label} {limit}"] = {"result": result, "most at once": running["most"]}
    return out


# --------------------------------------------------------------------------- drain


@case(aio=True, sql=True)
def case_a_node_drains_its_own_run(ns: NS, aio: bool) -> Any:
    """Every run's runtime has a control: a node that asks for a drain stops the run
    after its step (saved, the next node due), with GraphDrained; a graph the node
    invokes shares the control; a later call goes on."""
    seen: list[Any] = []

    def inner_node(state: Any, runtime: ns.Runtime) -> dict[str, Any]:
        seen.append(["inner", type(runtime.control).__name__])
        return {"log": ["inner"]}

    inner = build(ns, LogState, {"inner": inner_node}, [("S", "inner")])

    def drains(state: Any, runtime: ns.Runtime) -> dict[str, Any]:
        seen.append(["a", type(runtime.control).__name__])
        inner.invoke({"log": []})
        runtime.control.request_drain("enough")
        return {"log": ["a"]}

    builder = ns.StateGraph(LogState).add_node("a", drains).add_node("b", note("b"))
    graph = (
        builder.add_edge(ns.START, "a").add_edge("a", "b").compile(checkpointer=ns.InMemorySaver())
    )
    cfg, streamed = thread(), thread()
    first = invoke(graph, {"log": []}, cfg, aio=aio)
    drained = {"first": first, "state": graph.get_state(cfg)}
    return {
        "invoke": drained,
        "stream": stream(graph, {"log": []}, streamed, aio=aio),
        "then": invoke(graph, None, cfg, aio=aio),
        "seen": seen,
    }


@case(aio=True)
def case_a_store_of_ones_own_with_langgraphs_ttl_sentinel(ns: NS, aio: bool) -> Any:
    """A project's own store, written as LangGraph's docs write one: its `put` takes
    `ttl=NOT_PROVIDED` (falsy, not None) and its `batch` answers the graph's calls."""

    class Dicts(ns.BaseStore):
        def __init__(self) -> None:
            self.items: dict[tuple[tuple[str, ...], str], Any] = {}
            self.ttls: list[Any] = []

        def batch(self, ops: Any) -> list[Any]:
            results: list[Any] = []
            for op in ops:
                if hasattr(op, "value"):  # a put
                    self.items[(op.namespace, op.key)] = op.value
                    results.append(None)
                else:
                    value = self.items.get((op.namespace, op.key))
                    results.append(
                        value
                        and ns.Item(
                            value=value,
                            key=op.key,
                            namespace=op.namespace,
                            created_at="2026-01-01T00:00:00+00:00",
                            updated_at="2026-01-01T00:00:00+00:00",
                        )
                    )
            return results

        async def abatch(self, ops: Any) -> list[Any]:
            return self.batch(ops)

        def put(
            self,
            namespace: Any,
            key: str,
            value: Any,
            index: Any = None,
            *,
            ttl: Any = ns.NOT_PROVIDED,
        ) -> None:
            self.ttls.append([ttl is ns.NOT_PROVIDED, bool(ttl)])
            super().put(namespace, key, value, index, ttl=None if ttl is ns.NOT_PROVIDED else ttl)

    def remember(state: Any, *, store: Any) -> dict[str, Any]:
        store.put(("notes",), "last", {"log": state["log"]})
        found = store.get(("notes",), "last")
        return {"log": [f"kept {found.value['log']}"]}

    store = Dicts()
    graph = (
        ns.StateGraph(LogState)
        .add_node("remember", remember)
        .add_edge(ns.START, "remember")
        .compile(store=store)
    )
    return {"out": invoke(graph, {"log": ["a"]}, aio=aio), "ttls": store.ttls}
