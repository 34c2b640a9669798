"""Nesting conformance cases: a graph in a graph in a graph ("top" runs "mid" as a node,
"mid" runs "leaf"), each level asking a question with ``interrupt()``. The thread is
resumed level by level, replayed from a version of each level, forked with
``update_state`` (in the top graph and inside a subgraph), copied
(``as_node="__copy__"``) and resumed again. Every case runs on InMemorySaver and, with
``sql=True``, on the SQL saver (SQLite and PostgreSQL).

No ``from __future__ import annotations`` here (see cases_core).
"""

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig

from .cases_core import LogState, Node, build, chain, chain_edges, note
from .harness import NS, bump, case, history, invoke, stream, thread


def union(left: list, right: list) -> list:
    """Appends the entries that are new: a subgraph hands its parent's entries back."""
    return left + [x for x in right if x not in left]


class NestState(TypedDict):
    log: Annotated[list, union]


LEVELS = ("top", "mid", "leaf")


def asker(ns: NS, calls: dict[str, int], name: str) -> Node:
    """A node that counts its calls and logs the answer to its question."""

    def node(state: Any) -> dict[str, Any]:
        bump(calls, name)
        return {"log": [f"{name}={ns.interrupt(f'{name}?')}"]}

    return node


def level(ns: NS, calls: dict[str, int], name: str, inner: Any = None, **compile_kw: Any) -> Any:
    """<name>_pre -> <name>_ask (interrupts) -> [the next level's graph] -> <name>_post."""
    below = LEVELS[LEVELS.index(name) + 1 :]
    nodes: dict[str, Any] = {f"{name}_pre": note(f"{name}_pre")}
    nodes[f"{name}_ask"] = asker(ns, calls, f"{name}_ask")
    if inner is not None:
        nodes[below[0]] = inner
    nodes[f"{name}_post"] = note(f"{name}_post")
    return build(ns, NestState, nodes, chain_edges(list(nodes)), **compile_kw)


def nested(ns: NS, calls: dict[str, int], **mid_kw: Any) -> Any:
    """The three levels; only the top graph has a checkpointer (``mid_kw`` compiles mid)."""
    leaf = level(ns, calls, "leaf")
    mid = level(ns, calls, "mid", leaf, **mid_kw)
    return level(ns, calls, "top", mid, checkpointer=ns.InMemorySaver())


def subgraph_configs(snapshot: Any) -> list[dict[str, Any]]:
    """The checkpoint configs of the subgraph states under a ``subgraphs=True`` snapshot,
    outermost first."""
    found = []
    for task in snapshot.tasks:
        if task.state is not None and hasattr(task.state, "config"):
            found.append(task.state.config)
            found.extend(subgraph_configs(task.state))
    return found


def namespace(config: dict[str, Any]) -> dict[str, Any]:
    """A config naming a namespace's latest version."""
    conf = config["configurable"]
    return thread(conf["thread_id"], checkpoint_ns=conf["checkpoint_ns"])


def histories(graph: Any, cfg: dict[str, Any], spaces: list[dict[str, Any]]) -> list[Any]:
    """The history of the top graph, then of each subgraph namespace."""
    return [history(graph, cfg), *(history(graph, namespace(c)) for c in spaces)]


def timeline(graph: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    """The thread's state down to the innermost subgraph, and the top graph's history."""
    return {"deep": graph.get_state(cfg, subgraphs=True), "history": history(graph, cfg)}


def stopped_in_leaf(ns: NS, graph: Any, cfg: dict[str, Any], aio: bool = False) -> dict[str, Any]:
    """Run to the first question and answer the top's and mid's: the thread then waits
    in the leaf, three levels down. The result of each call, and the subgraph versions
    the thread waited at: mid's at its question, then mid's and the leaf's at the leaf's."""
    stops = [invoke(graph, {"log": []}, cfg, aio=aio)]
    waits = []
    for answer in ("t", "m"):
        stops.append(invoke(graph, ns.Command(resume=answer), cfg, aio=aio))
        waits.extend(subgraph_configs(graph.get_state(cfg, subgraphs=True)))
    return {"stops": stops, "waits": waits}


def version(graph: Any, config: dict[str, Any], next_node: str) -> dict[str, Any]:
    """The config of the oldest version of ``config``'s namespace where ``next_node`` is due."""
    for snap in reversed(history(graph, config)):
        if snap.next == (next_node,):
            return snap.config
    raise LookupError(next_node)


def resumed_to_end(ns: NS, graph: Any, cfg: dict[str, Any], *answers: str) -> list[Any]:
    return [invoke(graph, ns.Command(resume=a), cfg) for a in answers]


@case(aio=True, sql=True)
def case_nested_interrupts_resumed(ns: NS, aio: bool) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    return {
        "stops": stopped_in_leaf(ns, graph, cfg, aio)["stops"],
        "deep": graph.get_state(cfg, subgraphs=True),
        "last": invoke(graph, ns.Command(resume="l"), cfg, aio=aio),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(aio=True)
def case_nested_node_finished_callback(ns: NS, aio: bool) -> Any:
    """A run's config may carry a function (LangGraph's `__pregel_node_finished` key)
    told each node that finishes, at every level: not one interrupted, nor the input."""
    calls: dict[str, int] = {}
    graph, finished = nested(ns, calls), []
    cfg = thread()
    cfg["configurable"]["__pregel_node_finished"] = finished.append
    out = []
    for command in (None, ns.Command(resume="t"), ns.Command(resume="m"), ns.Command(resume="l")):
        out.append(invoke(graph, {"log": []} if command is None else command, cfg, aio=aio))
        out.append(list(finished))
    return out


@case(sql=True)
def case_nested_read_by_namespace(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    waits = stopped_in_leaf(ns, graph, cfg)["waits"]
    states = [graph.get_state(c) for c in waits]
    latest = [graph.get_state(namespace(c)) for c in waits]
    invoke(graph, ns.Command(resume="l"), cfg)
    leaf = namespace(waits[2])
    return {
        "states": states,
        "latest": latest,
        "histories": [history(graph, namespace(c)) for c in waits[1:]],
        "leaf_inputs": history(graph, leaf, filter={"source": "input"}),
        "leaf_before": history(graph, leaf, before=waits[2], limit=1),
    }


def replayed(ns: NS, pick: Any) -> Any:
    """Finish the thread, then re-run from the version ``pick(graph, cfg, waits)`` gives
    (no input: time travel asks the questions from there again) and answer anew."""
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    waits = stopped_in_leaf(ns, graph, cfg)["waits"]
    invoke(graph, ns.Command(resume="l"), cfg)
    return {
        "replay": invoke(graph, None, pick(graph, cfg, waits)),
        "answers": resumed_to_end(ns, graph, cfg, "m2", "l2"),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_replay_from_top_version(ns: NS) -> Any:
    return replayed(ns, lambda graph, cfg, waits: version(graph, cfg, "mid"))


@case(sql=True)
def case_nested_replay_from_mid_version(ns: NS) -> Any:
    return replayed(ns, lambda graph, cfg, waits: waits[0])


@case(sql=True)
def case_nested_replay_from_leaf_version(ns: NS) -> Any:
    return replayed(ns, lambda graph, cfg, waits: waits[2])


def resumed_at(ns: NS, pick: Any) -> Any:
    """Finish the thread, then answer anew the question pending at the version
    ``pick(waits)`` gives, and the questions asked after it."""
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    waits = stopped_in_leaf(ns, graph, cfg)["waits"]
    invoke(graph, ns.Command(resume="l"), cfg)
    return {
        "resumed": invoke(graph, ns.Command(resume="again"), pick(waits)),
        "answers": resumed_to_end(ns, graph, cfg, "l2"),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_resume_at_mid_version(ns: NS) -> Any:
    return resumed_at(ns, lambda waits: waits[0])


@case(sql=True)
def case_nested_resume_at_leaf_version(ns: NS) -> Any:
    return resumed_at(ns, lambda waits: waits[2])


@case(sql=True)
def case_nested_fork_in_top_graph(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    stopped_in_leaf(ns, graph, cfg)
    invoke(graph, ns.Command(resume="l"), cfg)
    fork = graph.update_state(version(graph, cfg, "mid"), {"log": ["edited"]})
    return {
        "fork": graph.get_state(fork, subgraphs=True),
        "run": invoke(graph, None, fork),
        "answers": resumed_to_end(ns, graph, cfg, "m2", "l2"),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_update_inside_subgraph(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    waits = stopped_in_leaf(ns, graph, cfg)["waits"]
    written = graph.update_state(waits[2], {"log": ["by hand"]}, as_node="leaf_ask")
    return {
        "written": graph.get_state(written),
        "run": invoke(graph, None, cfg),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_update_finishes_subgraph(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    waits = stopped_in_leaf(ns, graph, cfg)["waits"]
    written = graph.update_state(waits[2], {"log": ["by hand"]}, as_node="leaf_post")
    return {
        "written": graph.get_state(written),
        "run": invoke(graph, None, cfg),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_copy_of_top_version(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    stopped_in_leaf(ns, graph, cfg)
    copy = graph.update_state(graph.get_state(cfg).config, None, as_node="__copy__")
    return {
        "copy": graph.get_state(copy, subgraphs=True),
        "run": invoke(graph, None, copy),
        "answers": resumed_to_end(ns, graph, cfg, "m2", "l2"),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_copy_inside_subgraph(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls), thread()
    waits = stopped_in_leaf(ns, graph, cfg)["waits"]
    copy = graph.update_state(waits[2], None, as_node="__copy__")
    return {
        "copy": graph.get_state(copy),
        "answer": invoke(graph, ns.Command(resume="l2"), cfg),
        "calls": calls,
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_nested_stateful_mid_replayed(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = nested(ns, calls, checkpointer=True), thread()
    first = stopped_in_leaf(ns, graph, cfg)["stops"]
    invoke(graph, ns.Command(resume="l"), cfg)
    second = stopped_in_leaf(ns, graph, cfg)["stops"]
    before_second = [s.config for s in history(graph, cfg) if s.next == ("mid",)][0]
    return {
        "first": first,
        "second": second,
        "replay": invoke(graph, None, before_second),
        "answers": resumed_to_end(ns, graph, cfg, "m2", "l2"),
        "calls": calls,
        **timeline(graph, cfg),
    }


class Keyed(TypedDict):
    my_key: Annotated[str, operator.add]


def two_steps(ns: NS, first: str, second: str, **compile_kw: Any) -> Any:
    """A subgraph of two nodes, i1 then i2, each adding its text to `my_key`."""
    return (
        ns.StateGraph(Keyed)
        .add_node("i1", lambda s: {"my_key": first})
        .add_node("i2", lambda s: {"my_key": second})
        .add_edge(ns.START, "i1")
        .add_edge("i1", "i2")
        .compile(**compile_kw)
    )


@case(aio=True)
def case_subgraph_breakpoint_beside_a_parallel_node(ns: NS, aio: bool) -> Any:
    """A subgraph stopped at its own breakpoint while a parallel node of the parent
    finished: the parent's output and `values` parts show that node's write and no
    empty `__interrupt__` part; the resumed run goes on from there."""
    inner = two_steps(ns, "got here", " and there", interrupt_before=["i2"])
    graph = (
        ns.StateGraph(Keyed)
        .add_node("inner", inner)
        .add_node("side", lambda s: {"my_key": " and parallel"})
        .add_node("last", lambda s: {"my_key": " back"})
        .add_edge(ns.START, "inner")
        .add_edge(ns.START, "side")
        .add_edge(["inner", "side"], "last")
        .compile(checkpointer=ns.InMemorySaver())
    )
    out = {}
    for mode in ("values", "updates"):
        config = thread(mode)
        out[mode] = [
            stream(graph, {"my_key": ""}, config, stream_mode=mode, aio=aio),
            stream(graph, None, config, stream_mode=mode, aio=aio),
        ]
    config = thread("invoke")
    out["invoke"] = [
        invoke(graph, {"my_key": ""}, config, aio=aio),
        invoke(graph, None, config, aio=aio),
    ]
    return out


@case(aio=True)
def case_checkpoint_parts_of_subgraphs_name_their_versions(ns: NS, aio: bool) -> Any:
    """The `checkpoints` parts of a graph and its subgraph, by durability: a subgraph's
    configs carry the `checkpoint_map` of the graphs around it, and under `exit`, where
    no version of the run is saved before its end, a part names no parent (not even on
    a second run, whose saved head's parent is the first run's)."""
    inner = two_steps(ns, "1", "2")
    graph = (
        ns.StateGraph(Keyed)
        .add_node("inner", inner)
        .add_node("after", lambda s: {"my_key": "3"})
        .add_edge(ns.START, "inner")
        .add_edge("inner", "after")
        .compile(checkpointer=ns.InMemorySaver())
    )
    out = {}
    for durability in ("sync", "exit"):
        config = thread(durability)
        out[durability] = [
            stream(
                graph,
                {"my_key": ""},
                config,
                stream_mode="checkpoints",
                subgraphs=True,
                durability=durability,
                aio=aio,
            )
            for _ in range(2)
        ]
    return out


@case
def case_saver_lists_namespaces_and_threads_one_after_another(ns: NS) -> Any:
    """The in-memory saver lists a thread's namespaces (for a config without one) and,
    with no config, the threads, one after another in the order they were first saved
    to, each newest first."""
    sub = chain(ns, ["s"])
    saver = ns.InMemorySaver()
    builder = ns.StateGraph(LogState).add_node("sub", sub).add_node("after", note("after"))
    graph = builder.add_edge(ns.START, "sub").add_edge("sub", "after").compile(checkpointer=saver)
    for tid in ("b", "a"):
        graph.invoke({"log": []}, thread(tid))

    def listed(config: Any) -> list[Any]:
        return [
            [
                t.config["configurable"]["thread_id"],
                t.config["configurable"]["checkpoint_ns"].split(":")[0],
                t.metadata["step"],
            ]
            for t in saver.list(config)
        ]

    return {"thread": listed(thread("a")), "all": listed(None)}


@case(aio=True)
def case_router_of_a_graph_invoked_in_a_node_runs_under_its_own_task(ns: NS, aio: bool) -> Any:
    """The router of a graph that a node invokes runs under the inner task's config:
    its metadata, the config it is given and `get_config()` name the inner node, its
    step and its namespace, with callbacks or without."""
    seen: list[Any] = []

    def where(metadata: Any) -> list[Any]:
        return [
            metadata.get("langgraph_node"),
            metadata.get("langgraph_step"),
            str(metadata.get("langgraph_checkpoint_ns", "")).count("|"),
        ]

    class Routers(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            if kwargs.get("name") == "route":
                seen.append(["run", *where(kwargs.get("metadata") or {})])

    def route(state: Any, config: RunnableConfig) -> str:
        seen.append(["given", *where(config["metadata"])])
        seen.append(["get_config", *where(ns.get_config()["metadata"])])
        return ns.END

    inner_builder = ns.StateGraph(LogState).add_node("inner_node", note("inner"))
    inner_builder.add_edge(ns.START, "inner_node").add_conditional_edges("inner_node", route)
    inner = inner_builder.compile()

    def outer_node(state: Any) -> Any:
        return inner.invoke(state)

    async def aouter_node(state: Any) -> Any:
        return await inner.ainvoke(state)

    graph = build(
        ns, LogState, {"outer_node": aouter_node if aio else outer_node}, [("S", "outer_node")]
    )
    out = {}
    for label, config in (("traced", {"callbacks": [Routers()]}), ("untraced", None)):
        seen.clear()
        out[label] = [invoke(graph, {"log": []}, config, aio=aio), list(seen)]
    return out


def invoking(graph: Any, aio: bool) -> Node:
    """A node that invokes `graph` with its own config (as its subgraph)."""

    def caller(state: Any, config: RunnableConfig) -> Any:
        return graph.invoke(state, config)

    async def acaller(state: Any, config: RunnableConfig) -> Any:
        return await graph.ainvoke(state, config)

    return acaller if aio else caller


@case(aio=True)
def case_subgraph_with_own_saver_saves_in_parents(ns: NS, aio: bool) -> Any:
    """A subgraph compiled with a saver of its own, run as a node or invoked by one,
    saves its checkpoints where its parent saves (nowhere, for a parent without a
    saver): its own saver keeps nothing of the parent's thread."""
    out = {}
    for parent_saves in (True, False):
        calls: dict[str, int] = {}
        own = ns.InMemorySaver()
        leaf = level(ns, calls, "leaf", checkpointer=own)
        for how, node in (("as node", leaf), ("invoked", invoking(leaf, aio))):
            top_saver = ns.InMemorySaver() if parent_saves else None
            graph = build(ns, NestState, {"sub": node}, [("S", "sub")], checkpointer=top_saver)
            cfg = thread(f"{how} {parent_saves}")
            first = invoke(graph, {"log": []}, cfg, aio=aio)
            seen = {"first": first, "own saver": len(list(own.list(None)))}
            if top_saver is not None:
                seen["top saver"] = len(list(top_saver.list(None)))
                seen["state"] = graph.get_state(cfg, subgraphs=True)
                seen["resumed"] = invoke(graph, ns.Command(resume="R"), cfg, aio=aio)
            out[f"{how}, parent saves: {parent_saves}"] = seen
    return out
