"""Tracing: what LangChain's tracers and callback handlers see of a graph's runs when
the handlers come from elsewhere than the call's config (a configure hook such as
`collect_runs`, the Runnable the graph runs inside) or from both.

Handlers of an async run may be called from worker threads in any order, so each case
records what it sees as sorted (name, parent name) pairs. No ``from __future__ import
annotations`` here (see cases_core).
"""

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, dispatch_custom_event
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tracers.context import collect_runs
from langchain_core.tracers.langchain import wait_for_all_tracers
from langsmith import Client
from langsmith.run_helpers import tracing_context

from .cases_core import LogState, note
from .harness import NS, case, invoke


class Starts(BaseCallbackHandler):
    """The chain runs it is told of: (name, its parent's name), sorted."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.pairs: list[tuple[str, str | None]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names[kwargs["run_id"]] = kwargs["name"]
        self.pairs.append((kwargs["name"], kwargs.get("parent_run_id")))

    def seen(self) -> list[list[Any]]:
        return sorted(
            [name, self.names.get(parent, parent and "other")] for name, parent in self.pairs
        )


class Recorded(Client):
    """A LangSmith client that keeps the runs it is sent instead of sending them."""

    def __init__(self) -> None:
        super().__init__(api_url="http://127.0.0.1:9", api_key="unused", auto_batch_tracing=False)
        self.made: list[list[Any]] = []

    def create_run(self, name: str, inputs: Any, run_type: str, **kwargs: Any) -> None:
        self.made.append([name, run_type, kwargs.get("parent_run_id") is not None])

    def update_run(self, *args: Any, **kwargs: Any) -> None:
        pass


def _two_nodes(ns: NS) -> Any:
    builder = ns.StateGraph(LogState)
    builder.add_node("a", note("a")).add_node("b", note("b"))
    builder.add_edge(ns.START, "a").add_edge("a", "b")
    return builder.compile()


def _tree(runs: list[Any]) -> list[Any]:
    """Each traced run's name, type and children's names, depth first."""
    return [
        [run.name, run.run_type, [child.name for child in run.child_runs], _tree(run.child_runs)]
        for run in runs
    ]


@case(aio=True)
def case_tracing_collect_runs(ns: NS, aio: bool) -> Any:
    """A graph invoked inside `collect_runs()` (a configure hook: no callbacks in the
    call's config) is traced: its run, with its nodes' under it."""
    graph = _two_nodes(ns)
    with collect_runs() as collected:
        out = invoke(graph, {"log": []}, aio=aio)
    return {"out": out, "runs": _tree(collected.traced_runs)}


@case(aio=True)
def case_tracing_langsmith_without_callbacks(ns: NS, aio: bool) -> Any:
    """LangSmith tracing switched on (here by `tracing_context`; its environment
    variables take the same path) traces a graph called without callbacks: the graph's
    run at the root, its nodes' under it."""
    client = Recorded()
    with tracing_context(enabled=True, client=client, project_name="conformance"):
        out = invoke(_two_nodes(ns), {"log": []}, aio=aio)
    wait_for_all_tracers()
    return {"out": out, "runs": sorted(client.made)}


@case(aio=True)
def case_tracing_callbacks_of_the_call_and_of_its_caller(ns: NS, aio: bool) -> Any:
    """A graph invoked with handlers of its own inside a Runnable that has others: both
    see the graph's run, nested under the Runnable's; fallbacks nest each attempt."""
    graph = _two_nodes(ns)
    outer, inner, fallback = Starts(), Starts(), Starts()
    chain = RunnableLambda(lambda x: graph.invoke(x, {"callbacks": [inner]}), name="outer")
    achain = RunnableLambda(
        lambda x: graph.invoke(x, {"callbacks": [inner]}),
        afunc=lambda x: graph.ainvoke(x, {"callbacks": [inner]}),
        name="outer",
    )
    out = invoke(achain if aio else chain, {"log": []}, {"callbacks": [outer]}, aio=aio)
    failing = ns.StateGraph(LogState)
    failing.add_node("boom", lambda state: 1 / 0).add_edge(ns.START, "boom")
    guarded = failing.compile().with_fallbacks([graph])
    rescued = invoke(guarded, {"log": []}, {"callbacks": [fallback]}, aio=aio)
    return {
        "out": out,
        "outer": outer.seen(),
        "inner": inner.seen(),
        "rescued": rescued,
        "fallback": fallback.seen(),
    }


@case(aio=True)
def case_tracing_subgraph_run_names(ns: NS, aio: bool) -> Any:
    """A compiled subgraph used as a node runs as a run of its own, named after the
    subgraph, or after the run name it was bound to with `with_config`; the call's run
    name is its root run's only."""
    inner = ns.StateGraph(LogState)
    inner.add_node("inner", note("inner")).add_edge(ns.START, "inner")
    named = {}
    for key, sub in (
        ("compiled", inner.compile(name="Sub")),
        ("bound", inner.compile(name="Sub").with_config(run_name="SubRun", tags=["bound"])),
    ):
        outer = ns.StateGraph(LogState)
        outer.add_node("sub", sub).add_edge(ns.START, "sub")
        seen = Starts()
        out = invoke(
            outer.compile(), {"log": []}, {"callbacks": [seen], "run_name": "Top"}, aio=aio
        )
        named[key] = [out, seen.seen()]
    return named


@case(aio=True)
def case_custom_events_dispatched_without_callbacks(ns: NS, aio: bool) -> Any:
    """Code that dispatches custom events (LangChain's `dispatch_custom_event`, which
    refuses to outside a run) runs in a graph called without callbacks, as every node
    call is a run: in a node, with the config it is given, in a `RunnableLambda`, in a
    graph it calls and in a `@task`; with a handler, the handler hears each."""

    def dispatched(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        dispatch_custom_event("seen", {"by": "config"}, config=config)
        return {"log": ["config"]}

    def current(state: dict[str, Any]) -> dict[str, Any]:
        dispatch_custom_event("seen", {"by": "current"})
        return {"log": ["current"]}

    inner = ns.StateGraph(LogState)
    inner.add_node("inner", current).add_edge(ns.START, "inner")
    called = inner.compile()
    builder = ns.StateGraph(LogState)
    builder.add_node("config", dispatched).add_node("lambda", RunnableLambda(current))
    builder.add_node("calls", lambda state: called.invoke({"log": []}))
    builder.add_edge(ns.START, "config").add_edge("config", "lambda").add_edge("lambda", "calls")
    graph = builder.compile()

    @ns.task
    def step(x: int) -> int:
        dispatch_custom_event("seen", {"by": "task"})
        return x + 1

    @ns.entrypoint()
    def flow(x: int) -> int:
        return step(x).result()

    heard = Heard()
    return {
        "graph": invoke(graph, {"log": []}, aio=aio),
        "entrypoint": invoke(flow, 1, aio=aio),
        "heard": (invoke(graph, {"log": []}, {"callbacks": [heard]}, aio=aio), heard.events),
    }


class Heard(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))
