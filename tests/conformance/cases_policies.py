"""Node policies of LangGraph 1.2: timeouts of async nodes and tasks, several retry
policies on one node, error handlers, defaults for every node of a graph.

A timed-out node here waits on an event nobody sets, so a case lasts its timeouts
(tens of milliseconds), not a sleep. Nodes that must outlive their idle timeout report
progress at a steady pace well inside it. No ``from __future__ import annotations``
here (see cases_core).
"""

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.base import BaseTracer

from .cases_core import Flaky, LogState, note
from .harness import NS, bump, case, error_obs, invoke, stream

IDLE_S = 0.15  # an idle timeout that steady progress every PACE_S never reaches
PACE_S = 0.02
EMPTY: dict[str, Any] = {"log": []}


async def forever() -> None:
    await asyncio.Event().wait()


def timeout_obs(exc: BaseException) -> dict[str, Any]:
    """What a run that timed out shows: the error, and which clock ran out."""
    return {
        **error_obs(exc),
        "kind": getattr(exc, "kind", None),
        "timeout": getattr(exc, "timeout", None),
        "run_timeout": getattr(exc, "run_timeout", None),
        "idle_timeout": getattr(exc, "idle_timeout", None),
        "node": getattr(exc, "node", None),
    }


def refused(make: Callable[[], Any]) -> Any:
    """How making something fails, or "accepted"."""
    try:
        make()
    except Exception as exc:  # the error is the observation
        return error_obs(exc)
    return "accepted"


def run_timed(graph: Any, inp: Any = EMPTY, **kwargs: Any) -> Any:
    try:
        return asyncio.run(graph.ainvoke(inp, **kwargs))
    except Exception as exc:  # the error's fields are the observation
        return timeout_obs(exc)


def one_node(ns: NS, node: Any, **options: Any) -> Any:
    return ns.StateGraph(LogState).add_node("n", node, **options).add_edge(ns.START, "n").compile()


async def stuck(state: Any) -> dict[str, Any]:
    await forever()
    return {"log": ["never"]}


@case
def case_timeout_of_a_stuck_node(ns: NS) -> Any:
    policy = ns.TimeoutPolicy
    return {
        "seconds": run_timed(one_node(ns, stuck, timeout=0.05)),
        "timedelta": run_timed(one_node(ns, stuck, timeout=timedelta(milliseconds=50))),
        "run": run_timed(one_node(ns, stuck, timeout=policy(run_timeout=0.05))),
        "idle": run_timed(one_node(ns, stuck, timeout=policy(idle_timeout=0.05))),
        "both, idle first": run_timed(
            one_node(ns, stuck, timeout=policy(run_timeout=5, idle_timeout=0.05))
        ),
    }


@case
def case_timeout_progress_keeps_a_node_alive(ns: NS) -> Any:
    async def beating(state: Any, runtime: Any) -> dict[str, Any]:
        for _ in range(12):
            await asyncio.sleep(PACE_S)
            runtime.heartbeat()
        return {"log": ["beat"]}

    async def writing(state: Any) -> dict[str, Any]:
        write = ns.get_stream_writer()
        for i in range(12):
            await asyncio.sleep(PACE_S)
            write(i)
        return {"log": ["wrote"]}

    policy = ns.TimeoutPolicy
    idle, heartbeat_only = (
        policy(idle_timeout=IDLE_S),
        policy(idle_timeout=IDLE_S, refresh_on="heartbeat"),
    )
    writer_graph = one_node(ns, writing, timeout=heartbeat_only)
    return {
        "heartbeat": run_timed(one_node(ns, beating, timeout=idle)),
        "heartbeat, heartbeat only": run_timed(one_node(ns, beating, timeout=heartbeat_only)),
        "writes": run_timed(one_node(ns, writing, timeout=idle)),
        # Writes are not progress when only heartbeats are; nor do they reach the stream
        # once the node is given up.
        "writes, heartbeat only": run_timed(writer_graph),
        "heartbeats do not extend the run timeout": run_timed(
            one_node(ns, beating, timeout=policy(idle_timeout=IDLE_S, run_timeout=0.1))
        ),
    }


@case
def case_timeout_is_retried(ns: NS) -> Any:
    calls: dict[str, int] = {}

    async def slow_then_fast(state: Any) -> dict[str, Any]:
        if bump(calls, "n") == 1:
            await forever()
        return {"log": ["done"]}

    retry = ns.RetryPolicy(initial_interval=0.0, jitter=False)
    graph = one_node(ns, slow_then_fast, timeout=0.05, retry_policy=retry)
    return {"result": run_timed(graph), "calls": calls}


@case
def case_timeout_refuses_sync_code(ns: NS) -> Any:
    def sync_node(state: Any) -> dict[str, Any]:
        return {"log": ["sync"]}

    async def async_node(state: Any) -> dict[str, Any]:
        return {"log": ["async"]}

    def outcome(build: Any) -> Any:
        try:
            return {"built": invoke(build(), {"log": []})}
        except Exception as exc:
            return {"refused": error_obs(exc)}

    return {
        "sync function": outcome(lambda: one_node(ns, sync_node, timeout=1)),
        "sync lambda": outcome(lambda: one_node(ns, RunnableLambda(sync_node), timeout=1)),
        "lambda with afunc": outcome(
            lambda: one_node(ns, RunnableLambda(sync_node, afunc=async_node), timeout=1)
        ),
        "sync run of an async node": outcome(lambda: one_node(ns, async_node, timeout=1)),
        "zero": outcome(lambda: one_node(ns, async_node, timeout=0)),
        "bad refresh_on": outcome(
            lambda: one_node(
                ns, async_node, timeout=ns.TimeoutPolicy(run_timeout=1, refresh_on="x")
            )
        ),
        "positional": outcome(lambda: ns.TimeoutPolicy(1)),
    }


@case
def case_timeout_of_a_send(ns: NS) -> Any:
    def fan_out(state: Any) -> list[Any]:
        return [ns.Send("n", state, timeout=0.05)]

    graph = (
        ns.StateGraph(LogState)
        .add_node("n", stuck, timeout=5)
        .add_conditional_edges(ns.START, fan_out)
        .compile()
    )
    saver = ns.InMemorySaver()
    packets = (
        ns.StateGraph(LogState)
        .add_node("n", stuck)
        .add_conditional_edges(ns.START, fan_out)
        .compile(checkpointer=saver, interrupt_before=["n"])
    )
    config = {"configurable": {"thread_id": "t"}}
    asyncio.run(packets.ainvoke({"log": []}, config))
    pending = packets.get_state(config).tasks
    return {
        "timed out": run_timed(graph),
        "repr": repr(ns.Send("n", 1, timeout=2)),
        "saved with its timeout": [task.name for task in pending],
        "resumed": run_timed(packets, None, config=config),
    }


@case
def case_timeout_defaults_and_several_retry_policies(ns: NS) -> Any:
    calls: dict[str, int] = {}

    async def flaky(state: Any) -> dict[str, Any]:
        n = bump(calls, "flaky")
        if n == 1:
            raise KeyError("first")
        if n == 2:
            raise Flaky("second")
        return {"log": ["flaky"]}

    policies = [
        ns.RetryPolicy(retry_on=KeyError, initial_interval=0.0, jitter=False, max_attempts=2),
        ns.RetryPolicy(retry_on=Flaky, initial_interval=0.0, jitter=False, max_attempts=5),
    ]
    retried = (
        ns.StateGraph(LogState)
        .set_node_defaults(retry_policy=policies)
        .add_node("flaky", flaky)
        .add_edge(ns.START, "flaky")
        .compile()
    )
    timed = (
        ns.StateGraph(LogState)
        .set_node_defaults(timeout=0.05)
        .add_node("own", stuck, timeout=0.08)
        .add_node("default", stuck)
        .add_edge(ns.START, "own")
        .compile()
    )
    return {
        "first matching policy": run_timed(retried),
        "calls": calls,
        "a node's own timeout wins": run_timed(timed),
    }


@case
def case_timeout_of_tasks_and_entrypoints(ns: NS) -> Any:
    @ns.task(timeout=0.05)
    async def slow_task(x: int) -> int:
        await forever()
        return x

    @ns.task(timeout=1)
    async def fast_task(x: int) -> int:
        return x + 1

    @ns.entrypoint()
    async def calls_tasks(x: int) -> Any:
        first = await fast_task(x)
        try:
            await slow_task(x)
        except Exception as exc:
            return {"first": first, "slow": timeout_obs(exc)}
        return {"first": first}

    @ns.entrypoint(timeout=0.05)
    async def stuck_entrypoint(x: int) -> int:
        await forever()
        return x

    def sync_task() -> Any:
        return ns.task(timeout=1)(lambda x: x)

    def sync_entrypoint() -> Any:
        return ns.entrypoint(timeout=1)(lambda x: x)

    return {
        "tasks": asyncio.run(calls_tasks.ainvoke(1)),
        "entrypoint": run_timed(stuck_entrypoint, 1),
        "sync task": refused(sync_task),
        "sync entrypoint": refused(sync_entrypoint),
    }


@case
def case_timeout_stream_of_a_timed_out_node(ns: NS) -> Any:
    async def writes_then_sticks(state: Any) -> dict[str, Any]:
        ns.get_stream_writer()("before")
        await forever()
        return {"log": ["never"]}

    graph = one_node(ns, writes_then_sticks, timeout=0.05)
    return stream(graph, {"log": []}, stream_mode=["custom", "updates"], aio=True)


# --------------------------------------------------------------------------- error handlers


def failing(calls: dict[str, int], name: str = "a") -> Any:
    def node(state: Any) -> dict[str, Any]:
        bump(calls, name)
        raise Flaky(f"{name} failed")

    return node


def handled_run(ns: NS, graph: Any, aio: bool, thread: str = "t") -> Any:
    """The run's streamed updates, and the thread's state and history afterwards."""
    config = {"configurable": {"thread_id": thread}}
    parts = stream(graph, {"log": []}, config, stream_mode="updates", aio=aio, unordered=True)
    state = graph.get_state(config)
    return {
        "parts": parts,
        "values": state.values,
        "next": state.next,
        "history": [
            [snap.next, [(task.name, task.error is not None) for task in snap.tasks]]
            for snap in graph.get_state_history(config)
        ],
    }


@case(aio=True)
def case_error_handler_takes_a_failure(ns: NS, aio: bool) -> Any:
    def with_failure(state: Any, error: ns.NodeError) -> dict[str, Any]:
        return {"log": [f"handled {error.node}: {type(error.error).__name__} {error.error}"]}

    def routing(state: Any, error: ns.NodeError) -> Any:
        return ns.Command(update={"log": ["routed"]}, goto="c")

    def plain(state: Any) -> dict[str, Any]:
        return {"log": ["plain"]}

    async def asynchronous(state: Any, error: ns.NodeError) -> dict[str, Any]:
        return {"log": [f"async {error.node}"]}

    out = {}
    for handler in (with_failure, routing, plain, asynchronous):
        calls: dict[str, int] = {}
        graph = (
            ns.StateGraph(LogState)
            .add_node("a", failing(calls), error_handler=handler)
            .add_node("b", note("b"))
            .add_node("c", note("c"))
            .add_node("steady", note("steady"))
            .add_edge(ns.START, "a")
            .add_edge(ns.START, "steady")
            .add_edge("a", "b")
            .compile(checkpointer=ns.InMemorySaver())
        )
        out[handler.__name__] = {**handled_run(ns, graph, aio), "calls": calls}
    out["drawn"] = graph.get_graph().draw_mermaid()
    return out


@case(aio=True)
def case_error_handler_writes_in_its_nodes_place(ns: NS, aio: bool) -> Any:
    """A handler's writes are applied where its failed node's would be (after a sibling
    that sorts before it), and a handler that asks starts again in the `tasks` stream
    when its step resumes."""

    def boom(state: Any) -> Any:
        raise ValueError("boom")

    def asking(state: Any, error: ns.NodeError) -> dict[str, Any]:
        return {"log": [f"fixed {ns.interrupt('fix?')}"]}

    out = {}
    for name, handler in (("handled", note("handled")), ("asking", asking)):
        graph = (
            ns.StateGraph(LogState)
            .add_node("a", note("a"))
            .add_node("c", boom, error_handler=handler)
            .add_edge(ns.START, "a")
            .add_edge(ns.START, "c")
            .compile(checkpointer=ns.InMemorySaver())
        )
        config = {"configurable": {"thread_id": name}}
        out[name] = invoke(graph, {"log": []}, config, aio=aio)
    resumed = stream(graph, ns.Command(resume="yes"), config, stream_mode="tasks", aio=aio)
    # The step's finished tasks' starts differ on purpose (docs/langgraph-differences.md).
    out["resumed"] = [part for part in resumed if "__error_handler__" in str(part)]
    out["values"] = graph.get_state(config).values
    return out


@case
def case_error_handler_after_retries_and_failing(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def broken_handler(state: Any) -> dict[str, Any]:
        raise KeyError("handler failed")

    retry = ns.RetryPolicy(initial_interval=0.0, jitter=False, max_attempts=3)
    retried = (
        ns.StateGraph(LogState)
        .add_node("a", failing(calls), retry_policy=retry, error_handler=note("handled"))
        .add_edge(ns.START, "a")
        .compile()
    )
    broken = (
        ns.StateGraph(LogState)
        .add_node("a", failing(calls, "b"), error_handler=broken_handler)
        .add_edge(ns.START, "a")
        .compile()
    )
    return {
        "retried": invoke(retried, {"log": []}),
        "handler fails": invoke(broken, {"log": []}),
        "calls": calls,
    }


@case
def case_error_handler_defaults(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def default(state: Any, error: ns.NodeError) -> dict[str, Any]:
        return {"log": [f"default for {error.node}"]}

    graph = (
        ns.StateGraph(LogState)
        .set_node_defaults(error_handler=default)
        .add_node("a", failing(calls))
        .add_node("b", failing(calls, "b"), error_handler=note("own"))
        .add_node("c", note("c"))
        .add_edge(ns.START, "a")
        .add_edge(ns.START, "b")
        .add_edge(ns.START, "c")
        .compile()
    )

    def clash_default() -> Any:
        return (
            ns.StateGraph(LogState)
            .set_node_defaults(error_handler=default)
            .add_node("__default_error_handler__", note("x"))
            .add_edge(ns.START, "__default_error_handler__")
            .compile()
        )

    def clash_own() -> Any:
        return (
            ns.StateGraph(LogState)
            .add_node("__error_handler__a", note("x"))
            .add_node("a", note("a"), error_handler=default)
        )

    result = invoke(graph, {"log": []})
    return {
        "result": {"log": sorted(result["log"])} if isinstance(result, dict) else result,
        "calls": calls,
        "drawn": graph.get_graph().draw_mermaid(),
        "clash with the default": refused(clash_default),
        "clash with a node's own": refused(clash_own),
    }


@case
def case_error_handler_of_a_subgraph_node_and_interrupts(ns: NS) -> Any:
    calls: dict[str, int] = {}
    inner = (
        ns.StateGraph(LogState)
        .add_node("inner", failing(calls, "inner"))
        .add_edge(ns.START, "inner")
        .compile()
    )

    def caught(state: Any, error: ns.NodeError) -> dict[str, Any]:
        return {"log": [f"caught {error.node}: {error.error}"]}

    parent = (
        ns.StateGraph(LogState)
        .add_node("sub", inner, error_handler=caught)
        .add_edge(ns.START, "sub")
        .compile()
    )

    def asks(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("why?")]}

    asking = (
        ns.StateGraph(LogState)
        .add_node("ask", asks, error_handler=note("wrongly handled"))
        .add_edge(ns.START, "ask")
        .compile(checkpointer=ns.InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    return {
        "subgraph": invoke(parent, {"log": []}),
        "interrupt": invoke(asking, {"log": []}, config),
        "answered": invoke(asking, ns.Command(resume="because"), config),
    }


@case
def case_error_handler_resumes_without_the_node(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def flaky_handler(state: Any, error: ns.NodeError) -> dict[str, Any]:
        if bump(calls, "handler") == 1:
            raise KeyError("the handler's first try")
        return {"log": [f"handled {error.node}"]}

    graph = (
        ns.StateGraph(LogState)
        .add_node("a", failing(calls), error_handler=flaky_handler)
        .add_node("steady", note("steady"))
        .add_edge(ns.START, "a")
        .add_edge(ns.START, "steady")
        .compile(checkpointer=ns.InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    first = invoke(graph, {"log": []}, config)
    pending = [(t.name, t.error is not None) for t in graph.get_state(config).tasks]
    return {
        "first": first,
        "pending": sorted(pending),
        "resumed": invoke(graph, None, config),
        "calls": calls,
    }


# --------------------------------------------------------------------------- trace policies


class Recorder(BaseTracer):
    """A tracer keeping each finished run's name, inputs and outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Any] = []

    def _persist_run(self, run: Any) -> None:
        pass

    def _on_chain_end(self, run: Any) -> None:
        self.runs.append([run.name, run.inputs, run.outputs])


class Seer(BaseCallbackHandler):
    """A plain handler: it must see a node's real input and output."""

    def __init__(self) -> None:
        self.starts: list[Any] = []
        self.ends: list[Any] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.starts.append([kwargs.get("name"), inputs])

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.ends.append(outputs)


@case(aio=True)
def case_trace_policy_of_a_node(ns: NS, aio: bool) -> Any:
    def summary(value: Any) -> dict[str, Any]:
        return {"entries": len(value["log"])}

    def broken(value: Any) -> Any:
        raise RuntimeError("the processor fails")

    graph = (
        ns.StateGraph(LogState)
        .add_node(
            "a",
            note("a"),
            trace_policy=ns.TracePolicy(process_inputs=summary, process_outputs=ns.omit_payload),
        )
        .add_node("b", note("b"), trace_policy=ns.TracePolicy(process_inputs=broken))
        .add_node("c", note("c"))
        .add_edge(ns.START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .compile()
    )
    recorder, seer = Recorder(), Seer()
    result = invoke(graph, {"log": ["x", "y"]}, {"callbacks": [recorder, seer]}, aio=aio)
    nodes = {"a", "b", "c"}
    return {
        "result": result,
        "recorded": [run for run in recorder.runs if run[0] in nodes],
        "seen": [start for start in seer.starts if start[0] in nodes],
    }


# --------------------------------------------------------------------------- lifecycle callbacks


@case(aio=True)
def case_lifecycle_callbacks(ns: NS, aio: bool) -> Any:
    """A graph's lifecycle handler is told of its stops and resumes: the normalised ids
    show which checkpoint each event names, and which run."""

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("why?")]}

    def shown(event: Any) -> dict[str, Any]:
        # Task ids in namespaces differ by design (docs/langgraph-differences.md).
        return {
            **vars(event),
            "run_id": str(event.run_id),
            "checkpoint_ns": [part.split(":")[0] for part in event.checkpoint_ns],
        }

    def recorder(events: list[Any]) -> Any:
        class Handler(ns.GraphCallbackHandler):
            def on_interrupt(self, event: Any) -> None:
                events.append(["interrupt", shown(event)])

            async def on_resume(self, event: Any) -> None:
                events.append(["resume", shown(event)])

        return Handler()

    inner = ns.StateGraph(LogState).add_node("ask", ask).add_edge(ns.START, "ask").compile()
    graphs = {
        "node": ns.StateGraph(LogState)
        .add_node("ask", ask)
        .add_node("b", note("b"))
        .add_edge(ns.START, "ask")
        .add_edge("ask", "b"),
        "before": ns.StateGraph(LogState).add_node("b", note("b")).add_edge(ns.START, "b"),
        "subgraph": ns.StateGraph(LogState).add_node("sub", inner).add_edge(ns.START, "sub"),
    }
    out = {}
    for name, builder in graphs.items():
        graph = builder.compile(
            checkpointer=ns.InMemorySaver(),
            interrupt_before=["b"] if name == "before" else None,
        )
        events: list[Any] = []
        config = {"configurable": {"thread_id": name}, "callbacks": [recorder(events)]}
        answer = None if name == "before" else ns.Command(resume="because")
        calls = [
            invoke(graph, {"log": []}, config, aio=aio),
            invoke(graph, answer, config, aio=aio),
            invoke(graph, None, {**config, "run_id": "00000000-0000-0000-0000-000000000005"}),
        ]
        head = graph.get_state({"configurable": {"thread_id": name}}).config
        out[name] = {"calls": calls, "events": events, "head": head["configurable"]}
    return out


@case(aio=True)
def case_failed_tasks_in_the_tasks_stream(ns: NS, aio: bool) -> Any:
    """A failed task's end shows its error (the exception), handled or not."""
    calls: dict[str, int] = {}

    def graph(**options: Any) -> Any:
        return (
            ns.StateGraph(LogState)
            .add_node("a", failing(calls), **options)
            .add_edge(ns.START, "a")
            .compile()
        )

    return {
        mode: {
            "handled": stream(graph(error_handler=note("h")), EMPTY, stream_mode=mode, aio=aio),
            "failed": stream(graph(), EMPTY, stream_mode=mode, aio=aio),
        }
        for mode in ("tasks", "debug")
    }


@case
def case_step_timeout_of_a_compiled_graph(ns: NS) -> Any:
    """`graph.step_timeout` (an attribute of the compiled graph): a step that outlasts
    it raises TimeoutError, the task still running is cancelled, and the one that
    finished keeps its writes, so a resume without the limit runs only the other."""
    seen = {"cancelled": 0, "quick": 0, "released": False}

    async def stuck(state: Any) -> dict[str, Any]:
        if seen["released"]:
            return {"log": ["stuck, at last"]}
        try:
            await forever()
        except asyncio.CancelledError:
            seen["cancelled"] += 1
            raise
        return EMPTY

    async def quick(state: Any) -> dict[str, Any]:
        seen["quick"] += 1
        return {"log": ["quick"]}

    graph = (
        ns.StateGraph(LogState)
        .add_node("stuck", stuck)
        .add_node("quick", quick)
        .add_edge(ns.START, "stuck")
        .add_edge(ns.START, "quick")
        .compile(checkpointer=ns.InMemorySaver())
    )
    graph.step_timeout = 0.05
    config = {"configurable": {"thread_id": "1"}}
    timed_out = invoke(graph, EMPTY, config, aio=True)
    parts = stream(graph, EMPTY, {"configurable": {"thread_id": "2"}}, aio=True)
    after = dict(seen)
    graph.step_timeout = None
    seen["released"] = True
    return {
        # The class only: LangGraph's has no message, the engine's says which step.
        "timed out": timed_out["error"],
        "streamed": parts,
        "after": after,
        "next": graph.get_state(config).next,
        "resumed": invoke(graph, None, config, aio=True),
        "quick ran": seen["quick"],
    }


@case
def case_retry_policy_is_a_named_tuple(ns: NS) -> Any:
    policy = ns.RetryPolicy(max_attempts=5, retry_on=KeyError)
    initial, backoff, longest, attempts, jitter, retry_on = policy
    return {
        "tuple": isinstance(policy, tuple),
        "fields": list(policy._fields),
        "defaults": {k: v for k, v in policy._field_defaults.items() if k != "retry_on"},
        "unpacked": [initial, backoff, longest, attempts, jitter, retry_on.__name__],
        "replaced": policy._replace(max_attempts=2).max_attempts,
        "as a tuple": policy == (0.5, 2.0, 128.0, 5, True, KeyError),
    }


@case(aio=True)
def case_a_node_cancelling_itself_is_not_retried(ns: NS, aio: bool) -> Any:
    """A node whose own code raises `asyncio.CancelledError` fails at once, though its
    retry policy takes every error: its error handler, if any, is told of it."""
    always = ns.RetryPolicy(
        max_attempts=3, initial_interval=0.001, jitter=False, retry_on=lambda error: True
    )

    def handler(state: Any, error: ns.NodeError) -> dict[str, Any]:
        return {"log": [f"handled {type(error.error).__name__}"]}

    out = {}
    for kind in ("sync", "async"):
        for label, options in (
            ("retried", {"retry_policy": always}),
            ("retried and handled", {"retry_policy": always, "error_handler": handler}),
        ):
            calls: dict[str, int] = {}

            def cancels(state: Any, calls: dict[str, int] = calls) -> Any:
                bump(calls, "cancels")
                raise asyncio.CancelledError("mine")

            async def acancels(state: Any, calls: dict[str, int] = calls) -> Any:
                bump(calls, "cancels")
                raise asyncio.CancelledError("mine")

            graph = (
                ns.StateGraph(LogState)
                .add_node("n", acancels if kind == "async" else cancels, **options)
                .add_edge(ns.START, "n")
                .compile()
            )
            out[f"{kind} {label}"] = {"run": invoke(graph, EMPTY, aio=aio), "calls": calls}
    return out
