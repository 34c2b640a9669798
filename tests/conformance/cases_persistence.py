"""Persistence conformance cases: checkpointer, threads, history, interrupts, time travel.

No ``from __future__ import annotations`` here (see cases_core).
"""

import asyncio
import contextlib
import itertools
import operator
import threading
from collections import deque
from collections.abc import Sequence
from typing import Annotated, Any, NamedTuple, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig

from .cases_core import LogState, Node, XLogState, build, chain, chain_edges, note, notes
from .harness import (
    NS,
    bump,
    case,
    error_obs,
    history,
    invoke,
    raw_stream,
    run_sync_or_async,
    stream,
    thread,
    update_next,
)


class AskState(TypedDict):
    log: Annotated[list, operator.add]
    answers: Annotated[list, operator.add]


# --------------------------------------------------------------------------- helpers


def saved(ns: NS, builder: Any, **compile_kw: Any) -> Any:
    """Compile ``builder`` with a fresh in-memory checkpointer."""
    return builder.compile(checkpointer=ns.InMemorySaver(), **compile_kw)


def saved_chain(ns: NS, names: Sequence[str], **compile_kw: Any) -> Any:
    """START -> names... -> END with note nodes, saved."""
    return chain(ns, names, checkpointer=ns.InMemorySaver(), **compile_kw)


def diamond(ns: NS, nodes: dict[str, Node] | None = None, **compile_kw: Any) -> Any:
    """START -> a -> (b, c) -> d -> END, saved; ``nodes`` override the note nodes."""
    all_nodes = {**notes("a", "b", "c", "d"), **(nodes or {})}
    return build(
        ns,
        LogState,
        all_nodes,
        [("S", "a"), ("a", "b"), ("a", "c"), (["b", "c"], "d"), ("d", "E")],
        checkpointer=ns.InMemorySaver(),
        **compile_kw,
    )


def timeline(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The thread's current state and full history."""
    return {"state": graph.get_state(config), "history": history(graph, config)}


def asker(ns: NS, calls: dict[str, int], name: str, *questions: str) -> Node:
    """A node that counts its calls, asks each question with interrupt(), logs answers."""

    def node(state: Any) -> dict[str, Any]:
        bump(calls, name)
        answers = [ns.interrupt(q) for q in questions]
        return {"answers": answers, "log": [name]}

    return node


def ask_graph(ns: NS, calls: dict[str, int], *questions: str, **compile_kw: Any) -> Any:
    """START -> a -> ask (interrupts) -> b -> END, saved."""
    nodes = {"a": note("a"), "ask": asker(ns, calls, "ask", *questions), "b": note("b")}
    return build(
        ns,
        AskState,
        nodes,
        chain_edges(["a", "ask", "b"]),
        checkpointer=ns.InMemorySaver(),
        **compile_kw,
    )


def parallel_askers(ns: NS, calls: dict[str, int]) -> Any:
    """START -> (p, q) both interrupting -> join -> END, saved."""
    nodes = {
        "p": asker(ns, calls, "p", "p?"),
        "q": asker(ns, calls, "q", "q?"),
        "join": note("join"),
    }
    return build(
        ns,
        AskState,
        nodes,
        [("S", "p"), ("S", "q"), (["p", "q"], "join")],
        checkpointer=ns.InMemorySaver(),
    )


def pending_ids(graph: Any, config: dict[str, Any]) -> dict[Any, str]:
    """Interrupt value -> interrupt id for the thread's pending interrupts."""
    return {i.value: i.id for i in graph.get_state(config).interrupts}


def checkpoint_configs(graph: Any, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Configs of the thread's checkpoints, oldest first."""
    return [s.config for s in reversed(history(graph, config))]


def at_step(graph: Any, config: dict[str, Any], step: int) -> dict[str, Any]:
    """The config of the (first) checkpoint written at ``step``."""
    for snap in reversed(history(graph, config)):
        if snap.metadata["step"] == step:
            return snap.config
    raise LookupError(step)


# --------------------------------------------------------------------------- history


@case(aio=True)
def case_history_after_run(ns: NS, aio: bool) -> Any:
    graph, cfg = diamond(ns), thread()
    return {"result": invoke(graph, {"log": ["in"]}, cfg, aio=aio), **timeline(graph, cfg)}


@case
def case_get_state_after_completion(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    graph.invoke({"log": []}, cfg)
    return graph.get_state(cfg)


@case
def case_get_state_of_unknown_thread(ns: NS) -> Any:
    graph = saved_chain(ns, ["a"])
    return {"state": graph.get_state(thread("nobody")), "history": history(graph, thread("x"))}


@case
def case_get_state_at_checkpoint_id(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"]), thread()
    graph.invoke({"log": []}, cfg)
    return [graph.get_state(c) for c in checkpoint_configs(graph, cfg)]


@case
def case_checkpoint_ids_sort_in_creation_order(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"]), thread()
    graph.invoke({"log": []}, cfg)
    graph.invoke({"log": ["again"]}, cfg)
    ids = [c["configurable"]["checkpoint_id"] for c in checkpoint_configs(graph, cfg)]
    return {"count": len(ids), "sorted": ids == sorted(ids), "distinct": len(set(ids))}


@case
def case_history_limit(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"]), thread()
    graph.invoke({"log": []}, cfg)
    return {str(n): history(graph, cfg, limit=n) for n in (1, 2)}


@case
def case_history_before(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"]), thread()
    graph.invoke({"log": []}, cfg)
    return history(graph, cfg, before=at_step(graph, cfg, 1), limit=2)


@case
def case_history_filter_source(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    graph.invoke({"log": []}, cfg)
    graph.update_state(cfg, {"log": ["manual"]})
    return {
        src: [s.metadata["step"] for s in history(graph, cfg, filter={"source": src})]
        for src in ("loop", "input", "update")
    }


@case
def case_new_turn_after_end(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    first = graph.invoke({"log": ["t1"]}, cfg)
    second = graph.invoke({"log": ["t2"]}, cfg)
    return {"first": first, "second": second, **timeline(graph, cfg)}


@case
def case_invoke_none_on_finished_thread(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a"]), thread()
    graph.invoke({"log": []}, cfg)
    return {"result": invoke(graph, None, cfg), **timeline(graph, cfg)}


@case
def case_multiple_threads_isolated(ns: NS) -> Any:
    graph = saved_chain(ns, ["a", "b"])
    graph.invoke({"log": ["one"]}, thread("one"))
    graph.invoke({"log": ["two"]}, thread("two"))
    graph.invoke({"log": ["one again"]}, thread("one"))
    return {tid: timeline(graph, thread(tid)) for tid in ("one", "two")}


@case
def case_messages_conversation_turns(ns: NS) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        # An explicit id: LangGraph gives an id-less reply its id in place while its saver
        # may still be serializing the write, so the history's task result is racy there.
        turn = len(state["messages"])
        return {"messages": [AIMessage(content=f"turn {turn}", id=f"ai-{turn}")]}

    graph = build(
        ns, ns.MessagesState, {"reply": reply}, [("S", "reply")], checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    for text in ("hi", "again"):
        graph.invoke({"messages": [{"role": "user", "content": text}]}, cfg)
    return timeline(graph, cfg)


@case
def case_recursion_error_history(ns: NS) -> Any:
    builder = ns.StateGraph(LogState).add_node("spin", note("spin"))
    builder.add_edge(ns.START, "spin").add_conditional_edges("spin", lambda s: "spin")
    graph, cfg = saved(ns, builder), thread()
    result = invoke(graph, {"log": []}, {**cfg, "recursion_limit": 3})
    return {"result": result, **timeline(graph, cfg)}


# --------------------------------------------------------------------------- durability


def durability_case(mode: str) -> None:
    def run(ns: NS) -> Any:
        graph, cfg = diamond(ns), thread()
        result = invoke(graph, {"log": []}, cfg, durability=mode)
        hist = history(graph, cfg)
        return {
            "result": result,
            "length": len(hist),
            "steps": [s.metadata["step"] for s in hist],
            "state": graph.get_state(cfg),
        }

    run.__name__ = f"durability_{mode}"
    case(run)


for _mode in ("sync", "async", "exit"):
    durability_case(_mode)


@case
def case_durability_exit_with_interrupt(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    first = invoke(graph, {"log": []}, cfg, durability="exit")
    second = invoke(graph, ns.Command(resume="yes"), cfg, durability="exit")
    return {"first": first, "second": second, "calls": calls, **timeline(graph, cfg)}


# --------------------------------------------------------------------------- breakpoints


@case(aio=True)
def case_interrupt_before_then_continue(ns: NS, aio: bool) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"], interrupt_before=["b"]), thread()
    first = invoke(graph, {"log": []}, cfg, aio=aio)
    mid = graph.get_state(cfg)
    second = invoke(graph, None, cfg, aio=aio)
    return {"first": first, "mid": mid, "second": second, **timeline(graph, cfg)}


@case(aio=True)
def case_interrupt_after_then_continue(ns: NS, aio: bool) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"], interrupt_after=["a"]), thread()
    first = invoke(graph, {"log": []}, cfg, aio=aio)
    mid = graph.get_state(cfg)
    second = invoke(graph, None, cfg, aio=aio)
    return {"first": first, "mid": mid, "second": second, **timeline(graph, cfg)}


@case
def case_breakpoints_given_at_invoke(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"]), thread()
    parts = [
        stream(graph, {"log": []}, cfg, interrupt_before=["c"], stream_mode="values"),
        stream(graph, None, cfg, interrupt_after=["c"], stream_mode="values"),
    ]
    return {"parts": parts, **timeline(graph, cfg)}


@case
def case_interrupt_before_one_of_parallel_nodes(ns: NS) -> Any:
    graph, cfg = diamond(ns, interrupt_before=["c"]), thread()
    first = invoke(graph, {"log": []}, cfg)
    mid = graph.get_state(cfg)
    second = invoke(graph, None, cfg)
    return {"first": first, "mid": mid, "second": second, "final": graph.get_state(cfg)}


@case
def case_interrupt_before_node_in_loop(ns: NS) -> Any:
    def step(state: Any) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": [state["x"]]}

    builder = ns.StateGraph(XLogState).add_node("step", step).add_edge(ns.START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["x"] < 2 else ns.END)
    graph, cfg = saved(ns, builder, interrupt_before=["step"]), thread()
    results = [invoke(graph, {"x": 0, "log": []}, cfg)]
    results += [invoke(graph, None, cfg) for _ in range(3)]
    return {"results": results, "state": graph.get_state(cfg)}


@case
def case_interrupt_after_last_node(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a"], interrupt_after=["a"]), thread()
    first = invoke(graph, {"log": []}, cfg)
    return {"first": first, "state": graph.get_state(cfg), "again": invoke(graph, None, cfg)}


@case(aio=True)
def case_breakpoints_on_start_given_at_call(ns: NS, aio: bool) -> Any:
    """`__start__` is refused at compile time but honoured at call time: the run stops
    before or after the input step, and the next call goes on from there."""
    modes = ["values", "updates", "debug"]
    out: dict[str, Any] = {}
    for i, where in enumerate(["interrupt_before", "interrupt_after"]):
        graph, cfg = saved_chain(ns, ["a"]), thread(f"t{i}")
        first = stream(
            graph, {"log": []}, cfg, stream_mode=modes, aio=aio, **{where: ["__start__"]}
        )
        mid = graph.get_state(cfg)
        again = invoke(graph, None, cfg, aio=aio, **{where: ["__start__"]})
        rest = stream(graph, None, cfg, stream_mode=modes, aio=aio)
        out[where] = {
            "first": first,
            "mid": mid,
            "again": again,
            "rest": rest,
            **timeline(graph, cfg),
        }
    out["compiled"] = _message(lambda: saved_chain(ns, ["a"], interrupt_after=["__start__"]))
    return out


# --------------------------------------------------------------------------- interrupt()


@case(aio=True)
def case_interrupt_in_node(ns: NS, aio: bool) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, {"question": "ok?", "options": [1, 2]}), thread()
    result = invoke(graph, {"log": []}, cfg, aio=aio)
    return {"result": result, "calls": calls, **timeline(graph, cfg)}


@case(aio=True)
def case_resume_reruns_node(ns: NS, aio: bool) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "ok?"), thread()
    first = invoke(graph, {"log": []}, cfg, aio=aio)
    second = invoke(graph, ns.Command(resume={"approved": True}), cfg, aio=aio)
    return {"first": first, "second": second, "calls": calls, **timeline(graph, cfg)}


@case(aio=True, sql=True)
def case_resume_map_naming_no_waiting_interrupt(ns: NS, aio: bool) -> Any:
    """A map whose keys all look like interrupt ids is a map of answers, even when none
    is waiting (an answer to an older question): the node asks again, and the map is not
    taken as one answer."""
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "ok?"), thread()
    first = invoke(graph, {"log": []}, cfg, aio=aio)
    stale = invoke(graph, ns.Command(resume={"0" * 32: "old answer"}), cfg, aio=aio)
    plain = invoke(graph, ns.Command(resume={"not an id": 1}), cfg, aio=aio)
    return {"first": first, "stale": stale, "plain": plain, "calls": calls}


@case
def case_two_interrupts_in_one_node(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "first?", "second?"), thread()
    results = [invoke(graph, {"log": []}, cfg)]
    for answer in ("one", "two"):
        results.append(invoke(graph, ns.Command(resume=answer), cfg))
        results.append(graph.get_state(cfg))
    return {"results": results, "calls": calls, "history": history(graph, cfg)}


@case
def case_interrupt_stream_parts(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    modes = ["updates", "values"]
    return {
        "first": stream(graph, {"log": []}, cfg, stream_mode=modes),
        "resume": stream(graph, ns.Command(resume="a"), cfg, stream_mode=modes),
        "calls": calls,
    }


@case
def case_parallel_interrupts_plain_resume_refused(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = parallel_askers(ns, calls), thread()
    first = invoke(graph, {"log": []}, cfg)
    refused = invoke(graph, ns.Command(resume="both?"), cfg)
    return {"first": first, "refused": refused, "calls": calls, "state": graph.get_state(cfg)}


@case
def case_parallel_interrupts_resumed_one_by_one(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = parallel_askers(ns, calls), thread()
    results = [invoke(graph, {"log": []}, cfg)]
    for question in ("q?", "p?"):
        ids = pending_ids(graph, cfg)
        results.append(invoke(graph, ns.Command(resume={ids[question]: f"ans {question}"}), cfg))
        results.append(graph.get_state(cfg))
    return {"results": results, "calls": calls, "history": history(graph, cfg)}


@case
def case_parallel_interrupts_resumed_together(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = parallel_askers(ns, calls), thread()
    first = invoke(graph, {"log": []}, cfg)
    answers = {iid: f"ans {value}" for value, iid in pending_ids(graph, cfg).items()}
    second = invoke(graph, ns.Command(resume=answers), cfg)
    return {"first": first, "second": second, "calls": calls, **timeline(graph, cfg)}


@case(aio=True, sql=True)
def case_parallel_interrupts_stream_an_update_each(ns: NS, aio: bool) -> Any:
    """Parallel tasks that ask show their questions in an `updates` part each, as they
    stop; resumed one by one, the task that finished is shown again, as cached."""
    calls: dict[str, int] = {}
    graph, cfg = parallel_askers(ns, calls), thread()
    first = stream(graph, {"log": []}, cfg, aio=aio, unordered=True)
    # Each asking task's part comes when it asks: in the order the two happen to ask (and
    # LangGraph's `values` part after each splits the step, so no ordering applies).
    parts = [{**first, "parts": sorted(first["parts"], key=_questions)}]
    for question in ("q?", "p?"):
        answer = ns.Command(resume={pending_ids(graph, cfg)[question]: f"ans {question}"})
        parts.append(stream(graph, answer, cfg, aio=aio, unordered=True))
    return {"parts": parts, "calls": calls}


def _questions(part: Any) -> list[Any]:
    return [getattr(i, "value", i) for i in part.get("__interrupt__", ())]


@case
def case_parallel_interrupt_ids_distinct_and_stable(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = parallel_askers(ns, calls), thread()
    graph.invoke({"log": []}, cfg)
    before = pending_ids(graph, cfg)
    graph.invoke(ns.Command(resume={before["p?"]: "x"}), cfg)
    after = pending_ids(graph, cfg)
    return {
        "distinct": len(set(before.values())) == 2,
        "stable": after["q?"] == before["q?"],
        "pending_after": sorted(after),
    }


@case
def case_new_input_to_interrupted_thread(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    first = invoke(graph, {"log": ["turn1"]}, cfg)
    second = invoke(graph, {"log": ["turn2"]}, cfg)
    third = invoke(graph, ns.Command(resume="finally"), cfg)
    return {"results": [first, second, third], "calls": calls, **timeline(graph, cfg)}


@case
def case_resume_without_pending_interrupt(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a"]), thread()
    graph.invoke({"log": []}, cfg)
    return {"result": invoke(graph, ns.Command(resume="stray"), cfg), **timeline(graph, cfg)}


@case
def case_command_update_as_input(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    graph.invoke({"log": []}, cfg)
    result = invoke(graph, ns.Command(update={"log": ["patched"]}), cfg)
    return {"result": result, "calls": calls, **timeline(graph, cfg)}


@case
def case_command_goto_on_resume(ns: NS) -> Any:
    def route(state: Any) -> Any:
        choice = ns.interrupt("where?")
        return ns.Command(update={"log": [f"chose {choice}"]}, goto=choice)

    builder = (
        ns.StateGraph(LogState)
        .add_node("route", route)
        .add_node("left", note("left"))
        .add_node("right", note("right"))
        .add_edge(ns.START, "route")
    )
    graph, cfg = saved(ns, builder), thread()
    first = invoke(graph, {"log": []}, cfg)
    second = invoke(graph, ns.Command(resume="right"), cfg)
    return {"first": first, "second": second, **timeline(graph, cfg)}


@case
def case_resume_command_with_goto(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    graph.invoke({"log": []}, cfg)
    result = invoke(graph, ns.Command(resume="r", goto="b"), cfg)
    return {"result": result, "calls": calls, **timeline(graph, cfg)}


@case
def case_send_targets_interrupt(ns: NS) -> Any:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def worker(state: Any) -> dict[str, Any]:
        with lock:
            bump(calls, f"w{state['item']}")
        if state["item"] == 2:
            return {"results": [ns.interrupt(f"item {state['item']}?")]}
        return {"results": [state["item"]]}

    class S(TypedDict):
        items: list
        results: Annotated[list, operator.add]

    builder = ns.StateGraph(S).add_node("w", worker)
    builder.add_conditional_edges(
        ns.START, lambda s: [ns.Send("w", {"item": i}) for i in s["items"]]
    )
    graph, cfg = saved(ns, builder), thread()
    first = invoke(graph, {"items": [1, 2, 3], "results": []}, cfg)
    mid = graph.get_state(cfg)
    second = invoke(graph, ns.Command(resume="two"), cfg)
    return {
        "first": first,
        "mid": mid,
        "second": second,
        "calls": calls,
        "history": history(graph, cfg),
    }


def interrupting_subgraph(ns: NS, calls: dict[str, int]) -> Any:
    """A subgraph "inner": pre -> ask (interrupt) -> post, used as a parent node."""
    nodes = {"pre": note("pre"), "ask": asker(ns, calls, "ask", "sub?"), "post": note("post")}
    return build(ns, AskState, nodes, chain_edges(["pre", "ask", "post"]))


@case(aio=True)
def case_subgraph_interrupt_resumed_from_parent(ns: NS, aio: bool) -> Any:
    calls: dict[str, int] = {}
    parent = build(
        ns,
        AskState,
        {"outer": note("outer"), "inner": interrupting_subgraph(ns, calls), "last": note("last")},
        chain_edges(["outer", "inner", "last"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    first = invoke(parent, {"log": []}, cfg, aio=aio)
    mid = parent.get_state(cfg)
    second = invoke(parent, ns.Command(resume="deep"), cfg, aio=aio)
    return {
        "first": first,
        "mid": mid,
        "second": second,
        "calls": calls,
        "history": history(parent, cfg),
    }


@case
def case_subgraph_interrupt_state_with_subgraphs(ns: NS) -> Any:
    calls: dict[str, int] = {}
    parent = build(
        ns,
        AskState,
        {"inner": interrupting_subgraph(ns, calls)},
        chain_edges(["inner"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    parent.invoke({"log": []}, cfg)
    return {
        "state": parent.get_state(cfg, subgraphs=True),
        "stream": stream(parent, ns.Command(resume="x"), cfg, subgraphs=True),
    }


# --------------------------------------------------------------------------- errors and retries


@case
def case_parallel_error_sibling_not_rerun(ns: NS) -> Any:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def counted(name: str, fail_first: bool) -> Node:
        def node(state: Any) -> dict[str, Any]:
            with lock:
                n = bump(calls, name)
            if fail_first and n == 1:
                raise RuntimeError(f"{name} broke")
            return {"log": [name]}

        return node

    graph = diamond(
        ns, {"b": counted("b", False), "c": counted("c", True), "d": counted("d", False)}
    )
    cfg = thread()
    first = invoke(graph, {"log": []}, cfg)
    mid = timeline(graph, cfg)
    second = invoke(graph, None, cfg)
    return {
        "first": first,
        "mid": mid,
        "second": second,
        "calls": dict(calls),
        "final": timeline(graph, cfg),
    }


@case
def case_error_then_retry_sequential(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def fragile(state: Any) -> dict[str, Any]:
        if bump(calls, "fragile") == 1:
            raise KeyError("first time")
        return {"log": ["fragile"]}

    graph = build(
        ns,
        LogState,
        {"a": note("a"), "fragile": fragile, "z": note("z")},
        chain_edges(["a", "fragile", "z"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    first = invoke(graph, {"log": []}, cfg)
    mid = graph.get_state(cfg)
    second = invoke(graph, None, cfg)
    return {
        "first": first,
        "mid": mid,
        "second": second,
        "calls": calls,
        "history": history(graph, cfg),
    }


# --------------------------------------------------------------------------- time travel


@case
def case_replay_from_older_checkpoint(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def counted(name: str) -> Node:
        def node(state: Any) -> dict[str, Any]:
            bump(calls, name)
            return {"log": [name]}

        return node

    graph = build(
        ns,
        LogState,
        {n: counted(n) for n in "abc"},
        chain_edges("abc"),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    graph.invoke({"log": []}, cfg)
    replay = invoke(graph, None, at_step(graph, cfg, 1))
    return {"replay": replay, "calls": calls, **timeline(graph, cfg)}


@case
def case_new_input_on_older_checkpoint(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    graph.invoke({"log": ["first"]}, cfg)
    fork = invoke(graph, {"log": ["forked"]}, at_step(graph, cfg, 1))
    return {"fork": fork, **timeline(graph, cfg)}


@case
def case_replay_interrupted_checkpoint(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    graph.invoke({"log": []}, cfg)
    graph.invoke(ns.Command(resume="first answer"), cfg)
    older = at_step(graph, cfg, 2)
    again = invoke(graph, ns.Command(resume="second answer"), older)
    return {"again": again, "calls": calls, **timeline(graph, cfg)}


@case
def case_update_state_as_node(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"], interrupt_before=["b"]), thread()
    graph.invoke({"log": []}, cfg)
    new_cfg = graph.update_state(cfg, {"log": ["patched"]}, as_node="b")
    after = graph.get_state(cfg)
    result = invoke(graph, None, cfg)
    return {"returned": new_cfg, "after": after, "result": result, "history": history(graph, cfg)}


@case
def case_update_state_without_as_node(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"], interrupt_after=["a"]), thread()
    graph.invoke({"log": []}, cfg)
    graph.update_state(cfg, {"log": ["patched"]})
    after = graph.get_state(cfg)
    return {"after": after, "result": invoke(graph, None, cfg), "history": history(graph, cfg)}


@case
def case_update_state_uses_reducers(ns: NS) -> Any:
    graph, cfg = (
        build(ns, XLogState, notes("a"), chain_edges(["a"]), checkpointer=ns.InMemorySaver()),
        thread(),
    )
    graph.invoke({"x": 1, "log": ["start"]}, cfg)
    graph.update_state(cfg, {"x": 5, "log": ["more"]}, as_node="a")
    return timeline(graph, cfg)


@case
def case_update_state_on_older_checkpoint(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b", "c"]), thread()
    graph.invoke({"log": []}, cfg)
    forked = graph.update_state(at_step(graph, cfg, 1), {"log": ["edit"]}, as_node="a")
    result = invoke(graph, None, forked)
    return {"result": result, **timeline(graph, cfg)}


@case
def case_update_state_on_fresh_thread(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    graph.update_state(cfg, {"log": ["seed"]}, as_node="a")
    mid = graph.get_state(cfg)
    return {"mid": mid, "result": invoke(graph, None, cfg), "history": history(graph, cfg)}


@case
def case_update_state_during_interrupt(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    graph.invoke({"log": []}, cfg)
    graph.update_state(cfg, {"log": ["edited while waiting"]})
    mid = graph.get_state(cfg)
    resumed = invoke(graph, ns.Command(resume="ok"), cfg)
    return {"mid": mid, "resumed": resumed, "calls": calls, "history": history(graph, cfg)}


@case
def case_update_state_unknown_as_node(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a"]), thread()
    graph.invoke({"log": []}, cfg)
    try:
        graph.update_state(cfg, {"log": ["x"]}, as_node="ghost")
    except Exception as exc:  # the error class is the observation
        return {"error": type(exc).__name__}
    return {"ok": graph.get_state(cfg)}


# --------------------------------------------------------------------------- stream payloads


def config_view(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The public keys of a checkpoint config (not LangGraph's internal checkpoint_map)."""
    if config is None:
        return None
    conf = config["configurable"]
    return {k: conf.get(k) for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}


def checkpoint_payload_view(chunk: dict[str, Any]) -> dict[str, Any]:
    return {
        "config": config_view(chunk["config"]),
        "parent": config_view(chunk.get("parent_config")),
        "values": chunk["values"],
        "metadata": {k: chunk["metadata"].get(k) for k in ("source", "step", "parents")},
        "next": chunk["next"],
        "tasks": chunk["tasks"],
    }


@case(aio=True)
def case_stream_checkpoints(ns: NS, aio: bool) -> Any:
    graph, cfg = diamond(ns), thread()
    out = stream(graph, {"log": []}, cfg, stream_mode="checkpoints", aio=aio)
    parts = [checkpoint_payload_view(p) for p in out["parts"]]
    return {"parts": parts, "error": out["error"], "history": history(graph, cfg)}


def debug_view(part: dict[str, Any]) -> dict[str, Any]:
    payload = part["payload"]
    if part["type"] == "checkpoint":
        payload = checkpoint_payload_view(payload)
    else:
        payload = {k: v for k, v in payload.items() if k != "triggers"}
    return {"type": part["type"], "step": part["step"], "payload": payload}


@case
def case_stream_debug_with_checkpointer(ns: NS) -> Any:
    graph, cfg = diamond(ns), thread()
    out = stream(graph, {"log": []}, cfg, stream_mode="debug", unordered=True)
    return {"parts": [debug_view(p) for p in out["parts"]], "error": out["error"]}


@case
def case_stream_checkpoints_with_interrupt(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "q?"), thread()
    first = stream(graph, {"log": []}, cfg, stream_mode="checkpoints")
    second = stream(graph, ns.Command(resume="y"), cfg, stream_mode="checkpoints")
    return [[checkpoint_payload_view(p) for p in out["parts"]] for out in (first, second)]


# --------------------------------------------------------------------------- async API


@case
def case_async_state_api(ns: NS) -> Any:
    import asyncio

    graph, cfg = saved_chain(ns, ["a", "b"], interrupt_before=["b"]), thread()

    async def run() -> dict[str, Any]:
        await graph.ainvoke({"log": []}, cfg)
        state = await graph.aget_state(cfg)
        await graph.aupdate_state(cfg, {"log": ["async edit"]})
        hist = [s async for s in graph.aget_state_history(cfg)]
        final = await graph.ainvoke(None, cfg)
        return {"state": state, "history": hist, "final": final}

    return asyncio.run(run())


# --------------------------------------------------------------------------- more persistence


@case
def case_invoke_none_on_fresh_thread(ns: NS) -> Any:
    graph = saved_chain(ns, ["a"])
    return {"result": invoke(graph, None, thread()), "history": history(graph, thread())}


@case
def case_checkpointer_requires_thread_id(ns: NS) -> Any:
    return invoke(saved_chain(ns, ["a"]), {"log": []})


@case
def case_history_from_checkpoint_config(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    graph.invoke({"log": []}, cfg)
    return history(graph, at_step(graph, cfg, 0))


@case
def case_interrupt_in_async_node(ns: NS) -> Any:
    calls: dict[str, int] = {}

    async def ask(state: Any) -> dict[str, Any]:
        bump(calls, "ask")
        return {"answers": [ns.interrupt("async?")], "log": ["ask"]}

    graph = build(
        ns,
        AskState,
        {"ask": ask, "b": note("b")},
        chain_edges(["ask", "b"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    first = invoke(graph, {"log": []}, cfg, aio=True)
    second = invoke(graph, ns.Command(resume="async answer"), cfg, aio=True)
    return {"first": first, "second": second, "calls": calls, **timeline(graph, cfg)}


@case
def case_interrupt_sibling_not_rerun(ns: NS) -> Any:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def steady(state: Any) -> dict[str, Any]:
        with lock:
            bump(calls, "steady")
        return {"log": ["steady"]}

    nodes = {"ask": asker(ns, calls, "ask", "q?"), "steady": steady, "join": note("join")}
    graph = build(
        ns,
        AskState,
        nodes,
        [("S", "ask"), ("S", "steady"), (["ask", "steady"], "join")],
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    first = invoke(graph, {"log": []}, cfg)
    mid = graph.get_state(cfg)
    second = invoke(graph, ns.Command(resume="done"), cfg)
    return {
        "first": first,
        "mid": mid,
        "second": second,
        "calls": dict(calls),
        "history": history(graph, cfg),
    }


@case
def case_stream_checkpoints_with_subgraphs(ns: NS) -> Any:
    sub = chain(ns, ["s1", "s2"])
    graph = build(
        ns,
        LogState,
        {"sub": sub, "after": note("after")},
        chain_edges(["sub", "after"]),
        checkpointer=ns.InMemorySaver(),
    )
    out = stream(graph, {"log": []}, thread(), stream_mode="checkpoints", subgraphs=True)
    return [[part[0], checkpoint_payload_view(part[1])] for part in out["parts"]]


@case
def case_fork_branches_share_parent(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"]), thread()
    graph.invoke({"log": []}, cfg)
    base = at_step(graph, cfg, 1)
    graph.invoke(None, base)
    graph.update_state(base, {"log": ["other"]}, as_node="b")
    hist = history(graph, cfg)
    children = [
        s
        for s in hist
        if s.parent_config
        and s.parent_config["configurable"]["checkpoint_id"]
        == base["configurable"]["checkpoint_id"]
    ]
    return {"children": children, "history": hist}


@case
def case_interrupt_before_all_nodes(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"], interrupt_before="*"), thread()
    results = [invoke(graph, {"log": []}, cfg)]
    results += [invoke(graph, None, cfg) for _ in range(3)]
    return {"results": results, "history": history(graph, cfg)}


@case
def case_breakpoint_update_parts(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a", "b"], interrupt_after=["a"]), thread()
    return [stream(graph, inp, cfg, stream_mode="updates") for inp in ({"log": []}, None)]


@case
def case_update_state_edits_message_by_id(ns: NS) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content="draft", id="ai-1")]}

    graph = build(
        ns,
        ns.MessagesState,
        {"reply": reply},
        [("S", "reply")],
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    graph.invoke({"messages": [HumanMessage(content="hi", id="h-1")]}, cfg)
    graph.update_state(cfg, {"messages": [AIMessage(content="final", id="ai-1")]})
    graph.update_state(cfg, {"messages": [RemoveMessage(id="h-1")]})
    return timeline(graph, cfg)


@case
def case_invoke_with_latest_checkpoint_id(ns: NS) -> Any:
    graph, cfg = saved_chain(ns, ["a"], interrupt_after=["a"]), thread()
    graph.invoke({"log": []}, cfg)
    latest = graph.get_state(cfg).config
    return {"result": invoke(graph, None, latest), "history": history(graph, cfg)}


@case
def case_resume_replays_custom_stream_writes(ns: NS) -> Any:
    def ask(state: Any) -> dict[str, Any]:
        ns.get_stream_writer()({"node": "ask", "phase": "before"})
        answer = ns.interrupt("q?")
        ns.get_stream_writer()({"node": "ask", "phase": "after", "answer": answer})
        return {"log": [answer]}

    graph = build(ns, LogState, {"ask": ask}, chain_edges(["ask"]), checkpointer=ns.InMemorySaver())
    cfg = thread()
    modes = ["custom", "updates"]
    return [
        stream(graph, {"log": []}, cfg, stream_mode=modes),
        stream(graph, ns.Command(resume="yes"), cfg, stream_mode=modes),
    ]


# --------------------------------------------------------------------------- copy and input


@case
def case_copy_fork_asks_again(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph = ask_graph(ns, calls, "q")
    config = thread()
    invoke(graph, {"log": []}, config)
    head = graph.get_state(config)
    copy = graph.update_state(head.config, None, as_node="__copy__")
    copied = graph.get_state(copy)
    return {
        "copied": copied,
        "same_parent": copied.parent_config == head.parent_config,
        "answered": invoke(graph, ns.Command(resume="yes"), copy),
        # Copy and update in one go: the updates are one superstep on the copy.
        "with_updates": graph.get_state(
            graph.update_state(copy, [({"log": ["x"]}, "a"), ({"log": ["y"]}, "ask")], "__copy__")
        ),
        "missing": _error_of(
            lambda: graph.update_state(thread("nowhere"), None, as_node="__copy__")
        ),
        "calls": calls,
        "timeline": timeline(graph, config),
    }


@case
def case_input_update_runs_from_start(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph = ask_graph(ns, calls, "q")
    config = thread()
    invoke(graph, {"log": []}, config)
    invoke(graph, ns.Command(resume="yes"), config)
    fed = graph.update_state(config, {"log": ["in"]}, as_node="__input__")
    return {
        "fed": graph.get_state(fed),
        "rerun": invoke(graph, None, fed),
        "calls": calls,
        "timeline": timeline(graph, config),
    }


@case
def case_bulk_update_state_supersteps(ns: NS) -> Any:
    calls: dict[str, int] = {}
    graph = ask_graph(ns, calls, "q")
    config = thread()
    first = [ns.StateUpdate({"log": ["x"]}, "a")]
    second = [ns.StateUpdate({"log": ["y"]}, "ask"), ns.StateUpdate({"log": ["z"]}, "b")]
    updated = graph.bulk_update_state(config, [first, second])
    return {
        "state": graph.get_state(updated),
        "empty": _error_of(lambda: graph.bulk_update_state(config, [])),
        "empty_step": _error_of(lambda: graph.bulk_update_state(config, [[]])),
        "copy_with_others": _error_of(
            lambda: graph.bulk_update_state(
                updated, [[ns.StateUpdate(None, "__copy__"), ns.StateUpdate({"log": []}, "a")]]
            )
        ),
        "run": invoke(graph, None, config),
        "timeline": timeline(graph, config),
    }


def _error_of(call: Any) -> Any:
    try:
        return call()
    except Exception as exc:  # the error class is the observation
        return type(exc).__name__


# --------------------------------------------------------------------------- subgraph state


def echo_chat(ns: NS, prefix: str, **compile_kw: Any) -> Any:
    """A MessagesState graph that answers `<prefix>: <last message>`."""

    def echo(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"messages": [AIMessage(content=f"{prefix}: {last.content}", id=f"{last.id}-re")]}

    return build(ns, ns.MessagesState, {"echo": echo}, chain_edges(["echo"]), **compile_kw)


def stateful(ns: NS, prefix: str, node: str) -> Any:
    """`echo_chat` wrapped as node `node` of a graph compiled with checkpointer=True."""
    inner = echo_chat(ns, prefix)
    return build(ns, ns.MessagesState, {node: inner}, chain_edges([node]), checkpointer=True)


@case
def case_graphs_invoked_in_one_node_keep_apart(ns: NS) -> Any:
    """A node runs two stateful graphs and a plain one twice: each run has a namespace of
    its own (numbered after the first), the stateful ones without task ids, so their
    messages carry over from one turn to the next and never mix."""
    fruit, veggie = stateful(ns, "fruit", "fruit_agent"), stateful(ns, "veggie", "veggie_agent")
    plain, seen = echo_chat(ns, "plain"), []

    def call_all(state: Any) -> dict[str, Any]:
        for graph, text in ((fruit, "cherry"), (veggie, "leek"), (plain, "a"), (plain, "b")):
            # With an id: LangGraph saves the input before its reducer gives one, so
            # whether a saved input shows it depends on timing there.
            message = HumanMessage(content=text, id=f"{text}{len(seen)}")
            out = graph.invoke({"messages": [message]})
            seen.append([m.content for m in out["messages"]])
        return {"log": [len(seen)]}

    parent = build(
        ns, LogState, {"call": call_all}, chain_edges(["call"]), checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    turns = [stream(parent, {"log": []}, cfg, subgraphs=True) for _ in range(2)]
    return {
        "turns": turns,
        "seen": seen,
        "fruit": parent.get_state(thread(checkpoint_ns="call")),
        "veggie": history(parent, thread(checkpoint_ns="call|1")),
        "parent": parent.get_state(cfg, subgraphs=True),
    }


@case(aio=True)
def case_subgraph_checkpointer_kinds(ns: NS, aio: bool) -> Any:
    """Graphs a node invokes, compiled with checkpointer None (a fresh state per run),
    False (no checkpoints at all) and True (state kept from one run to the next)."""
    graphs = {
        "fresh": echo_chat(ns, "fresh"),
        "unsaved": echo_chat(ns, "unsaved", checkpointer=False),
        "kept": stateful(ns, "kept", "agent"),
    }
    seen: dict[str, list[Any]] = {}

    def call(state: Any) -> dict[str, Any]:
        for name, graph in graphs.items():
            turn = len(seen.get(name, []))
            out = graph.invoke({"messages": [HumanMessage(content=name, id=f"{name}{turn}")]})
            seen.setdefault(name, []).append([m.content for m in out["messages"]])
        return {"log": ["call"]}

    parent = build(
        ns, LogState, {"call": call}, chain_edges(["call"]), checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    runs = [invoke(parent, {"log": []}, cfg, aio=aio) for _ in range(2)]
    return {
        "runs": runs,
        "seen": seen,
        "kept": history(parent, thread(checkpoint_ns="call|2")),
        "unsaved": history(parent, thread(checkpoint_ns="call")),
    }


@case
def case_stateful_graph_is_no_root_graph(ns: NS) -> Any:
    """checkpointer=True borrows the saver of the graph it runs in: alone it has none."""
    kept = stateful(ns, "kept", "agent")
    cfg = thread()
    return {
        "invoke": _error_of(lambda: kept.invoke({"messages": []})),
        "with_thread": _error_of(lambda: kept.invoke({"messages": []}, cfg)),
        "state": _error_of(lambda: kept.get_state(cfg)),
    }


@case(aio=True)
def case_graphs_invoked_in_a_resumed_node(ns: NS, aio: bool) -> Any:
    def ask(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"ok {ns.interrupt('go?')}")]}

    graphs = {
        "plain": echo_chat(ns, "plain"),
        "first": build(ns, ns.MessagesState, {"ask": ask}, chain_edges(["ask"])),
        "kept": build(
            ns,
            ns.MessagesState,
            {"agent": build(ns, ns.MessagesState, {"ask": ask}, chain_edges(["ask"]))},
            chain_edges(["agent"]),
            checkpointer=True,
        ),
        "second": build(ns, ns.MessagesState, {"ask": ask}, chain_edges(["ask"])),
    }
    seen: list[Any] = []

    def call(state: Any) -> dict[str, Any]:
        for name, graph in graphs.items():
            out = graph.invoke({"messages": [HumanMessage(content=name)]})
            seen.append([m.content for m in out["messages"]])
        return {"log": ["call"]}

    parent = build(
        ns, LogState, {"call": call}, chain_edges(["call"]), checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    runs = [invoke(parent, {"log": []}, cfg, aio=aio)]
    runs += [invoke(parent, ns.Command(resume=f"y{i}"), cfg, aio=aio) for i in range(2)]
    runs.append(invoke(parent, {"log": []}, cfg, aio=aio))
    runs.append(invoke(parent, {"log": []}, cfg, aio=aio))
    runs += [invoke(parent, ns.Command(resume=f"z{i}"), cfg, aio=aio) for i in range(3)]
    return {"runs": runs, "seen": seen}


@case
def case_undeclared_subgraph_namespace(ns: NS) -> Any:
    """A graph run by a node that declares none (found through a subscript, which
    subgraph detection does not follow) is read with the parent's channels; updating
    its namespace raises."""
    agents = {"notes": echo_chat(ns, "notes")}

    def tools(state: Any) -> dict[str, Any]:
        agents["notes"].invoke({"messages": [HumanMessage(content="research", id="r")]})
        return {"messages": [AIMessage(content="tool done")]}

    parent = build(
        ns,
        ns.MessagesState,
        {"tools": tools},
        chain_edges(["tools"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    parts = stream(parent, {"messages": [HumanMessage(content="go", id="go")]}, cfg, subgraphs=True)
    inner = thread(checkpoint_ns=parts["parts"][0][0][0])
    return {
        "parts": parts,
        "state": parent.get_state(inner),
        "history": history(parent, inner),
        "update": _error_of(lambda: parent.update_state(inner, {"messages": ["edit"]})),
        "subgraphs": [name for name, _ in parent.get_subgraphs(recurse=True)],
    }


@case
def case_get_subgraphs_by_namespace(ns: NS) -> Any:
    leaf = echo_chat(ns, "leaf")
    research = build(ns, ns.MessagesState, {"review": leaf}, chain_edges(["review"]))
    parent = build(
        ns,
        ns.MessagesState,
        {"research": research, "research_review": echo_chat(ns, "rr"), "review": leaf},
        chain_edges(["research", "research_review", "review"]),
    )
    graphs = {"research": research, "research|review": leaf, "review": leaf}

    def found(**kw: Any) -> list[list[Any]]:
        return [[name, graphs.get(name) is graph] for name, graph in parent.get_subgraphs(**kw)]

    return {
        "all": found(),
        "recursive": found(recurse=True),
        **{n: found(namespace=n, recurse=True) for n in ("research", "research|review", "review")},
        "nested_without_recurse": found(namespace="research|review"),
        "unknown": found(namespace="nothing", recurse=True),
    }


# ---------------------------------------------------------------- time travel into subgraphs


def two_askers(ns: NS, calls: dict[str, int], **compile_kw: Any) -> Any:
    """A subgraph: pre -> ask_1 (interrupt) -> ask_2 (interrupt)."""
    nodes = {
        "pre": note("pre"),
        "ask_1": asker(ns, calls, "ask_1", "first?"),
        "ask_2": asker(ns, calls, "ask_2", "second?"),
    }
    return build(ns, AskState, nodes, chain_edges(["pre", "ask_1", "ask_2"]), **compile_kw)


def executor(ns: NS, calls: dict[str, int], **compile_kw: Any) -> Any:
    """START -> executor (a `two_askers` subgraph) -> END, saved."""
    inner = two_askers(ns, calls, **compile_kw)
    return build(
        ns,
        AskState,
        {"executor": inner},
        chain_edges(["executor"]),
        checkpointer=ns.InMemorySaver(),
    )


def stateful_timeline(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """`timeline` without where tasks keep their subgraph's state: for a stateful
    subgraph, case_nested_stateful_mid_replayed shows that known difference."""

    def bare(snapshot: Any) -> Any:
        return snapshot._replace(tasks=tuple(t._replace(state=None) for t in snapshot.tasks))

    return {
        "state": bare(graph.get_state(config)),
        "history": [bare(s) for s in history(graph, config)],
    }


def subgraph_version(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The config of the subgraph's version the thread stopped at."""
    return graph.get_state(config, subgraphs=True).tasks[0].state.config


@case(aio=True, sql=True)
def case_subgraph_questions_answered_in_turn(ns: NS, aio: bool) -> Any:
    """Two nodes of a subgraph ask one after the other: each resume answers the question
    open then (the subgraph keeps the answers it took), stateful subgraph or not."""
    out = {}
    for kind, compile_kw in (("plain", {}), ("stateful", {"checkpointer": True})):
        calls: dict[str, int] = {}
        graph, cfg = executor(ns, calls, **compile_kw), thread(kind)
        runs = [invoke(graph, {"log": []}, cfg, aio=aio)]
        runs += [invoke(graph, ns.Command(resume=a), cfg, aio=aio) for a in ("one", "two")]
        seen = stateful_timeline if kind == "stateful" else timeline
        out[kind] = {"runs": runs, "calls": calls, **seen(graph, cfg)}
    return out


@case(sql=True)
def case_subgraph_parallel_questions_answered_by_id(ns: NS) -> Any:
    """A subgraph with two questions open at once, answered one id at a time. (They are
    asked in parallel, in no fixed order: the subgraph's own snapshots list them by task,
    a run's result and the top graph's by when they were asked, so those are sorted.)"""
    calls: dict[str, int] = {}
    inner = build(
        ns,
        AskState,
        {"p": asker(ns, calls, "p", "p?"), "q": asker(ns, calls, "q", "q?")},
        [("S", "p"), ("S", "q"), ("p", "E"), ("q", "E")],
        checkpointer=True,
    )
    graph = build(
        ns, AskState, {"sub": inner}, chain_edges(["sub"]), checkpointer=ns.InMemorySaver()
    )
    cfg = thread()

    def run(inp: Any) -> dict[str, Any]:
        out = invoke(graph, inp, cfg)
        asked = sorted(i.value for i in out.pop("__interrupt__", ()))
        return {"values": out, "asked": asked}

    first = run({"log": []})
    sub = graph.get_state(cfg, subgraphs=True).tasks[0].state
    ids = {i.value: i.id for i in sub.interrupts}
    return {
        "first": first,
        "sub": sub,
        "p": run(ns.Command(resume={ids["p?"]: "yes"})),
        "q": run(ns.Command(resume={ids["q?"]: "no"})),
        "calls": calls,
        "values": [(s.values, s.next) for s in history(graph, cfg)],
        "subgraph": history(graph, thread(checkpoint_ns="sub")),
    }


@case(sql=True)
def case_time_travel_to_subgraph_questions(ns: NS) -> Any:
    """Run the top graph from a stateful subgraph's version at its 1st and at its 2nd
    question: the top graph and the subgraph fork there, the question is asked again
    (nodes before it do not re-run), and the new answers finish the new branch."""
    calls: dict[str, int] = {}
    graph, cfg = executor(ns, calls, checkpointer=True), thread()
    invoke(graph, {"log": []}, cfg)
    at_first = subgraph_version(graph, cfg)
    invoke(graph, ns.Command(resume="one"), cfg)
    at_second = subgraph_version(graph, cfg)
    invoke(graph, ns.Command(resume="two"), cfg)
    second = {
        "replay": invoke(graph, None, at_second),
        "answer": invoke(graph, ns.Command(resume="two again"), cfg),
    }
    first = {
        "replay": invoke(graph, None, at_first),
        "answers": [invoke(graph, ns.Command(resume=a), cfg) for a in ("1", "2")],
    }
    return {
        "at_first": graph.get_state(at_first),
        "at_second": at_second,
        "second": second,
        "first": first,
        "calls": calls,
        "subgraph": history(graph, thread(checkpoint_ns="executor")),
        **stateful_timeline(graph, cfg),
    }


@case(sql=True)
def case_update_subgraph_version_then_run(ns: NS) -> Any:
    """update_state on a subgraph's version writes the subgraph's channels in its
    namespace, next to that version; running the top graph from it asks from there."""
    calls: dict[str, int] = {}
    graph, cfg = executor(ns, calls, checkpointer=True), thread()
    invoke(graph, {"log": []}, cfg)
    at_first = subgraph_version(graph, cfg)
    invoke(graph, ns.Command(resume="one"), cfg)
    written = graph.update_state(at_first, {"log": ["by hand"]})
    return {
        "written": graph.get_state(written),
        "run": invoke(graph, None, written),
        "answer": invoke(graph, ns.Command(resume="again"), cfg),
        "calls": calls,
        "subgraph": history(graph, thread(checkpoint_ns="executor")),
        **stateful_timeline(graph, cfg),
    }


@case(sql=True)
def case_fork_before_stateful_subgraph(ns: NS) -> Any:
    """An update on a version before a stateful subgraph ran in the 2nd turn, without
    as_node (the input node ran last there): the subgraph then starts from its state as
    of the updated version, the end of the 1st turn."""
    calls: dict[str, int] = {}
    inner = build(
        ns,
        AskState,
        {"ask": asker(ns, calls, "ask", "q?")},
        chain_edges(["ask"]),
        checkpointer=True,
    )
    graph = build(
        ns,
        AskState,
        {"a": note("a"), "sub": inner},
        chain_edges(["a", "sub"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    for turn in ("1", "2"):
        invoke(graph, {"log": []}, cfg)
        invoke(graph, ns.Command(resume=turn), cfg)
    before_a = [s.config for s in history(graph, cfg) if s.next == ("a",)][0]
    fork = graph.update_state(before_a, {"log": ["forked"]})
    return {
        "fork": graph.get_state(fork),
        "run": invoke(graph, None, fork),
        "inner": graph.get_state(cfg, subgraphs=True),
        "calls": calls,
        **stateful_timeline(graph, cfg),
    }


@case
def case_channels_declared_in_the_state(ns: NS) -> Any:
    """Keys whose `Annotated` metadata is a channel (made with the value's type first, as
    LangGraph's are) or a channel class: what each node sees, what a checkpoint keeps,
    and what a later run on the thread starts from."""

    class ChannelState(TypedDict):
        log: Annotated[list, operator.add]
        flash: Annotated[str, ns.EphemeralValue(str)]
        feed: Annotated[list, ns.Topic(str, accumulate=True)]
        handle: Annotated[str, ns.UntrackedValue(str)]
        agreed: Annotated[str, ns.AnyValue(str)]
        last: Annotated[int, ns.LastValue(int)]
        total: Annotated[int, ns.BinaryOperatorAggregate(int, operator.add)]

    def start(state: Any) -> dict[str, Any]:
        seen = {k: state.get(k) for k in ("flash", "feed", "handle", "agreed", "last", "total")}
        written = {"flash": "f", "feed": ["a"], "handle": "h", "last": 1, "total": 2}
        return {"log": [("start", seen)], **written}

    def side(name: str) -> Node:
        def node(state: Any) -> dict[str, Any]:
            seen = {k: state.get(k) for k in ("flash", "feed", "handle")}
            return {"log": [(name, seen)], "feed": name, "agreed": "same", "total": 3}

        return node

    def end(state: Any) -> dict[str, Any]:
        seen = {k: state.get(k) for k in ("flash", "feed", "handle", "agreed", "last", "total")}
        return {"log": [("end", seen)]}

    graph = build(
        ns,
        ChannelState,
        {"start": start, "b": side("b"), "c": side("c"), "end": end},
        [("S", "start"), ("start", "b"), ("start", "c"), (["b", "c"], "end"), ("end", "E")],
        checkpointer=ns.InMemorySaver(),
    )
    config = thread()
    return {
        "first": invoke(graph, {"log": []}, config),
        "second": invoke(graph, {"log": []}, config),
        "timeline": timeline(graph, config),
    }


@case
def case_send_carries_untracked_values(ns: NS) -> Any:
    """A `Send` of the whole state hands its task the untracked value (one no serializer
    takes: it holds a lock) in this run, and saves the packet without it; the history
    of the thread reads back."""

    class Resource:
        def __init__(self, name: str) -> None:
            self.name = name
            self.lock = threading.Lock()

    class WithResource(TypedDict):
        log: Annotated[list, operator.add]
        resource: Annotated[Resource, ns.UntrackedValue]

    def setup(state: Any) -> dict[str, Any]:
        return {"log": ["setup"], "resource": Resource("first")}

    def use(state: Any) -> dict[str, Any]:
        held = state.get("resource")
        return {"log": [f"used {held.name if held else None}"], "resource": Resource("next")}

    graph = (
        ns.StateGraph(WithResource)
        .add_node("setup", setup)
        .add_node("use", use)
        .add_edge(ns.START, "setup")
        .add_conditional_edges("setup", lambda state: [ns.Send("use", state)], ["use"])
        .compile(checkpointer=ns.InMemorySaver())
    )
    config = thread()
    result = invoke(graph, {"log": []}, config)
    return {
        "result": {k: v for k, v in result.items() if k != "resource"},
        "kept in memory": type(result.get("resource")).__name__,
        "timeline": timeline(graph, config),
    }


@case
def case_custom_channels_subclass_base_channel(ns: NS) -> Any:
    """Channels a program writes itself on LangGraph's `BaseChannel` contract (made with
    the value's type, read by `get()`, saved by `checkpoint()`, rebuilt by
    `from_checkpoint()`): what nodes and routers see, and what the thread keeps."""

    class Tally(ns.BaseChannel[int, int, int]):
        """Adds up every write (kept in a slot)."""

        __slots__ = ("total",)

        def __init__(self, typ: Any = int, key: str = "") -> None:
            super().__init__(typ, key)
            self.total: int | None = None

        @property
        def ValueType(self) -> Any:
            return int

        @property
        def UpdateType(self) -> Any:
            return int

        def from_checkpoint(self, checkpoint: Any) -> Any:
            # LangGraph hands a channel the checkpoint lacks its own private MISSING.
            restored = type(self)(self.typ, self.key)
            restored.total = checkpoint if isinstance(checkpoint, int) else None
            return restored

        def checkpoint(self) -> Any:
            return self.total

        def update(self, values: Sequence[int]) -> bool:
            if not values:
                return False
            self.total = (self.total or 0) + sum(values)
            return True

        def get(self) -> int:
            if self.total is None:
                raise ns.EmptyChannelError()
            return self.total

    class Flash(ns.BaseChannel[str, str, str]):
        """Shows the last write for one step, then clears."""

        def __init__(self, typ: Any = str, key: str = "") -> None:
            super().__init__(typ, key)
            self.shown: str | None = None

        @property
        def ValueType(self) -> Any:
            return str

        @property
        def UpdateType(self) -> Any:
            return str

        def from_checkpoint(self, checkpoint: Any) -> Any:
            restored = type(self)(self.typ, self.key)
            restored.shown = checkpoint if isinstance(checkpoint, str) else None
            return restored

        def checkpoint(self) -> Any:
            return self.shown

        def update(self, values: Sequence[str]) -> bool:
            had = self.shown is not None
            self.shown = values[-1] if values else None
            return bool(values) or had

        def get(self) -> str:
            if self.shown is None:
                raise ns.EmptyChannelError()
            return self.shown

    class CustomState(TypedDict):
        log: Annotated[list, operator.add]
        tally: Annotated[int, Tally(int)]
        flash: Annotated[str, Flash(str)]

    routed: list[Any] = []

    def looked(name: str, state: Any) -> tuple[str, Any, Any]:
        return (name, state.get("tally"), state.get("flash"))

    def start(state: Any) -> dict[str, Any]:
        return {"log": [looked("start", state)], "tally": 1, "flash": "f"}

    def route(state: Any) -> list[str]:
        routed.append(looked("route", state))
        return ["b", "c"]

    def side(name: str) -> Node:
        def node(state: Any) -> dict[str, Any]:
            return {"log": [looked(name, state)], "tally": 10}

        return node

    def end(state: Any) -> dict[str, Any]:
        return {"log": [looked("end", state)]}

    builder = ns.StateGraph(CustomState)
    builder.add_node("start", start).add_node("b", side("b")).add_node("c", side("c"))
    builder.add_node("end", end).add_edge(ns.START, "start")
    builder.add_conditional_edges("start", route, ["b", "c"])
    builder.add_edge(["b", "c"], "end").add_edge("end", ns.END)
    graph = builder.compile(checkpointer=ns.InMemorySaver())
    config = thread()
    return {
        "first": invoke(graph, {"log": [], "tally": 5}, config),
        "second": invoke(graph, {"log": []}, config),
        "routed": routed,
        "timeline": timeline(graph, config),
    }


@case(sql=True)
def case_update_at_a_breakpoint_keeps_the_join_due(ns: NS) -> Any:
    """At `interrupt_before` a node a join made due, an update as the node that ran last
    (as_node inferred) leaves the join's node due, and the resumed run runs it with the
    updated state."""
    builder = ns.StateGraph(LogState)
    for name in ("a", "a2", "b", "c", "join"):
        builder.add_node(name, note(name))
    builder.add_edge(ns.START, "a").add_edge("a", "a2").add_edge("a2", "b")
    builder.add_edge(ns.START, "c")
    builder.add_edge(["b", "c"], "join").add_edge("join", ns.END)
    graph = builder.compile(checkpointer=ns.InMemorySaver(), interrupt_before=["join"])
    config = thread()
    first = invoke(graph, {"log": []}, config)
    graph.update_state(config, {"log": ["updated"]})
    state = graph.get_state(config)
    return {
        "first": first,
        "after update": [state.next, state.metadata, state.values],
        "resumed": invoke(graph, None, config),
        "timeline": timeline(graph, config),
    }


@case(aio=True, sql=True)
def case_resumes_with_updates_in_one_step(ns: NS, aio: bool) -> Any:
    """A node that asks three questions, answered one resume at a time, each resume
    with an update: every answer reaches its question and every update is applied once,
    under each durability (`exit` saves them all at each stop)."""

    def ask(state: Any) -> dict[str, Any]:
        return {"log": ["a:" + "".join(ns.interrupt(str(q)) for q in range(1, 4))]}

    graph = (
        ns.StateGraph(LogState)
        .add_node("ask", ask)
        .add_edge(ns.START, "ask")
        .compile(checkpointer=ns.InMemorySaver())
    )
    out = {}
    for durability in ("sync", "async", "exit"):
        config = thread(durability)
        steps = [invoke(graph, {"log": []}, config, durability=durability, aio=aio)]
        for i in range(1, 4):
            command = ns.Command(resume=str(i), update={"log": [f"u{i}"]})
            steps.append(invoke(graph, command, config, durability=durability, aio=aio))
        out[durability] = {"steps": steps, "state": graph.get_state(config).values}
    return out


@case
def case_a_failure_cancels_the_tasks_still_running(ns: NS) -> Any:
    """Parallel async nodes: one fails while another still waits. The waiting one is
    cancelled (the run does not wait for it), the one that finished keeps its writes,
    and a resume runs the failed and the cancelled nodes again, not the finished one."""
    import asyncio

    seen = {"cancelled": 0, "fast": 0, "failures": 0}

    async def slow(state: Any) -> dict[str, Any]:
        if seen["failures"] > 1:  # the resume: nothing is failing any more
            return {"log": ["slow"]}
        try:
            await asyncio.wait_for(asyncio.Event().wait(), 5)
        except asyncio.CancelledError:
            seen["cancelled"] += 1
            raise
        return {"log": ["slow waited"]}

    async def fast(state: Any) -> dict[str, Any]:
        seen["fast"] += 1
        return {"log": ["fast"]}

    async def bad(state: Any) -> dict[str, Any]:
        for _ in range(3):  # after `fast` has finished and `slow` has started waiting
            await asyncio.sleep(0)
        seen["failures"] += 1
        if seen["failures"] == 1:
            raise ValueError("bad")
        return {"log": ["bad"]}

    graph = build(
        ns,
        LogState,
        {"slow": slow, "fast": fast, "bad": bad},
        [("S", "slow"), ("S", "fast"), ("S", "bad")],
        checkpointer=ns.InMemorySaver(),
    )
    config = thread()
    failed = invoke(graph, {"log": []}, config, aio=True)
    state = graph.get_state(config)
    after_failure = {**seen, "next": sorted(state.next)}
    seen["failures"] += 1
    return {
        "failed": failed,
        "after failure": after_failure,
        "resumed": invoke(graph, None, config, aio=True),
        "after resume": dict(seen),
    }


@case(sql=True)
def case_a_failure_is_saved_as_its_repr(ns: NS) -> Any:
    """A failed task's saved write is its exception's repr; the snapshot's task shows
    that repr too. (Whether the other task's writes were saved depends on whether it
    finished before the failure stopped the step, on both engines: not observed.)"""

    def bad(state: Any) -> dict[str, Any]:
        raise ValueError("bad input")

    saver = ns.InMemorySaver()
    graph = build(
        ns,
        LogState,
        {"ok": note("ok"), "bad": bad},
        [("S", "ok"), ("S", "bad")],
        checkpointer=saver,
    )
    config = thread()
    failed = invoke(graph, {"log": []}, config)
    saved = saver.get_tuple(config)
    return {
        "failed": failed,
        "pending writes": sorted(
            (chan, repr(value)) for _, chan, value in saved.pending_writes if chan != "log"
        ),
        "task errors": sorted((t.name, t.error) for t in graph.get_state(config).tasks),
    }


# --------------------------------------------------------------------------- empty state


class MaybeName(TypedDict, total=False):
    name: str
    other: int


@case(aio=True, sql=True)
def case_a_state_nothing_wrote(ns: NS, aio: bool) -> Any:
    """A run that writes no key of its output returns None (it showed no values), and a
    run that goes on from a saved state shows that state first, even when it is empty."""

    def empty(state: Any) -> dict[str, Any]:
        return {}

    def ask(state: Any) -> dict[str, Any]:
        return {"name": ns.interrupt("name?")}

    plain = build(ns, MaybeName, {"n": empty}, chain_edges(["n"]))
    out: dict[str, Any] = {
        "invoke": invoke(plain, {}, aio=aio),
        "values": stream(plain, {}, stream_mode="values", aio=aio),
        "other_key": invoke(plain, {"other": 1}, aio=aio),
        "output_keys": invoke(plain, {"other": 1}, output_keys=["name"], aio=aio),
    }
    asking = build(
        ns, MaybeName, {"ask": ask}, chain_edges(["ask"]), checkpointer=ns.InMemorySaver()
    )
    cfg = thread("ask")
    out["interrupted"] = invoke(asking, {}, cfg, aio=aio)
    out["resumed"] = stream(asking, ns.Command(resume="Ann"), cfg, stream_mode="values", aio=aio)
    paused = build(
        ns,
        MaybeName,
        {"a": empty, "b": empty},
        chain_edges(["a", "b"]),
        checkpointer=ns.InMemorySaver(),
        interrupt_before=["b"],
    )
    cfg = thread("bp")
    out["breakpoint"] = invoke(paused, {}, cfg, aio=aio)
    out["after_breakpoint"] = invoke(paused, None, cfg, aio=aio)
    out["finished_thread"] = stream(paused, None, cfg, stream_mode="values", aio=aio)
    return out


# --------------------------------------------------------------------------- stored types


class Pair(NamedTuple):
    left: int
    right: Any


class Kept(TypedDict, total=False):
    past_steps: Annotated[list, operator.add]
    queue: Any
    pair: Pair


def kinds(value: Any) -> Any:
    """`value` with the type of each sequence in it (the harness sees tuples as lists)."""
    if isinstance(value, dict):
        return {k: kinds(v) for k, v in value.items()}
    if hasattr(value, "_fields"):
        return [type(value).__name__, {f: kinds(getattr(value, f)) for f in value._fields}]
    if isinstance(value, list | tuple | deque):
        return [type(value).__name__, [kinds(v) for v in value]]
    return value


@case(aio=True, sql=True)
def case_tuples_come_back_from_a_checkpoint_as_lists(ns: NS, aio: bool) -> Any:
    """A tuple in the state is a list once read from a checkpoint (the state, a resumed
    run, a later turn), though a run that holds it keeps its tuple; a deque comes back
    as a deque, a NamedTuple of the schema as itself."""

    def a(state: Any) -> dict[str, Any]:
        return {
            "past_steps": [("step1", "result1")],
            "queue": deque([1, (2, 3)]),
            "pair": Pair(1, (2, 3)),
        }

    def b(state: Any) -> dict[str, Any]:
        return {"past_steps": [("step2", ns.interrupt("ok?"))]}

    graph = build(
        ns, Kept, {"a": a, "b": b}, chain_edges(["a", "b"]), checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    first = invoke(graph, {"past_steps": []}, cfg, aio=aio)
    state = graph.get_state(cfg).values
    resumed = invoke(graph, ns.Command(resume="yes"), cfg, aio=aio)
    later = invoke(graph, {"past_steps": [("again", (1,))]}, cfg, aio=aio)
    return {
        "first": kinds({k: v for k, v in first.items() if k != "__interrupt__"}),
        "state": kinds(state),
        "resumed": kinds(resumed),
        "later": kinds({k: v for k, v in later.items() if k != "__interrupt__"}),
    }


@case(aio=True, sql=True)
def case_messages_emptied_by_an_update_then_a_new_turn(ns: NS, aio: bool) -> Any:
    """A thread whose messages an update removed, all of them: the next turn starts the
    list afresh (the saver has no element of the old list left to share)."""

    def talk(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"{len(state['messages'])} heard")]}

    graph = build(
        ns, ns.MessagesState, {"talk": talk}, [("S", "talk")], checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    invoke(graph, {"messages": [HumanMessage(content="hi")]}, cfg, aio=aio)
    graph.update_state(cfg, {"messages": [RemoveMessage(id=ns.REMOVE_ALL_MESSAGES)]})
    emptied = graph.get_state(cfg).values
    again = invoke(graph, {"messages": [HumanMessage(content="again")]}, cfg, aio=aio)
    return {"emptied": emptied, "again": again}


# --------------------------------------------------------------------------- error messages


def _message(make: Any) -> str:
    """The text of the error ``make()`` raises, with its class (users match on both)."""
    try:
        make()
    except Exception as exc:  # the message is the observation
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@case
def case_error_messages_match_langgraph(ns: NS) -> Any:
    class S(TypedDict):
        x: int
        xs: Annotated[list, operator.add]

    def one(s: Any) -> dict[str, Any]:
        return {"x": 1}

    def started(nodes: dict[str, Node], **compile_kw: Any) -> Any:
        builder = ns.StateGraph(S)
        for name, fn in nodes.items():
            builder.add_node(name, fn)
        return builder.add_edge(ns.START, next(iter(nodes))).compile(**compile_kw)

    loop = ns.StateGraph(S).add_node("n", one).add_edge(ns.START, "n").add_edge("n", "n").compile()
    pair = ns.StateGraph(S).add_node("a", one).add_node("b", one)
    pair = pair.add_edge(ns.START, "a").add_edge(ns.START, "b").compile()
    kept = started({"n": one}, checkpointer=ns.InMemorySaver())
    kept.invoke({"x": 0}, thread("t"))

    def asks(s: Any) -> dict[str, Any]:
        return {"x": ns.interrupt("q")}

    fan = ns.StateGraph(S).add_node("asks", asks)
    fan = fan.add_conditional_edges(
        ns.START, lambda s: [ns.Send("asks", s), ns.Send("asks", s)], ["asks"]
    ).compile(checkpointer=ns.InMemorySaver())
    fan.invoke({"x": 0}, thread("m"))
    overwrites = started(
        {
            "w": lambda s: [
                ns.Command(update={"xs": ns.Overwrite([1])}),
                ns.Command(update={"xs": ns.Overwrite([2])}),
            ]
        }
    )
    return {
        "recursion": _message(lambda: loop.invoke({"x": 0}, {"recursion_limit": 3})),
        "recursion_limit_0": _message(lambda: loop.invoke({"x": 0}, {"recursion_limit": 0})),
        "concurrent": _message(lambda: pair.invoke({"x": 0})),
        "non_dict": _message(lambda: started({"n": lambda s: 5}).invoke({"x": 0})),
        "non_dict_input": _message(lambda: started({"n": one}).invoke("hello")),
        "two_overwrites": _message(lambda: overwrites.invoke({"x": 0, "xs": []})),
        "no_thread": _message(lambda: kept.invoke({"x": 0})),
        "unknown_as_node": _message(lambda: kept.update_state(thread("t"), {"x": 1}, "nope")),
        "branch_none": _message(
            lambda: (
                ns.StateGraph(S)
                .add_node("n", one)
                .add_edge(ns.START, "n")
                .add_conditional_edges("n", lambda s: None)
                .compile()
                .invoke({"x": 0})
            )
        ),
        "no_checkpointer": _message(lambda: started({"n": one}).get_state(thread("t"))),
        "update_no_checkpointer": _message(
            lambda: started({"n": one}).update_state(thread("t"), {"x": 1})
        ),
        "ambiguous_resume": _message(lambda: fan.invoke(ns.Command(resume=1), thread("m"))),
        "empty_input": _message(lambda: list(kept.stream(None, thread("fresh")))),
        "duplicate_node": _message(lambda: ns.StateGraph(S).add_node("a", one).add_node("a", one)),
        "reserved_node": _message(lambda: ns.StateGraph(S).add_node(ns.END, one)),
        "colon_in_name": _message(lambda: ns.StateGraph(S).add_node("a:b", one)),
        "pipe_in_name": _message(lambda: ns.StateGraph(S).add_node("a|b", one)),
        "end_as_start": _message(lambda: ns.StateGraph(S).add_node("a", one).add_edge(ns.END, "a")),
        "no_entrypoint": _message(lambda: ns.StateGraph(S).add_node("a", one).compile()),
        "unknown_target": _message(
            lambda: (
                ns.StateGraph(S)
                .add_node("a", one)
                .add_edge(ns.START, "a")
                .add_edge("a", "z")
                .compile()
            )
        ),
        "interrupt_before_unknown": _message(
            lambda: (
                ns.StateGraph(S)
                .add_node("a", one)
                .add_edge(ns.START, "a")
                .compile(interrupt_before=["zz"])
            )
        ),
    }


# --------------------------------------------------------------------------- task order


def _started(graph: Any, inp: Any, config: dict[str, Any], aio: bool) -> list[str]:
    """The names of the tasks a call starts, in the order it starts them (a step's task
    start events come out in the step's task order, whatever order the tasks end in)."""
    parts, error = raw_stream(graph, inp, config, aio, stream_mode="tasks")
    assert error is None, error
    return [p["name"] for p in parts if "input" in p]


@case(aio=True, sql=True)
def case_parallel_task_order_follows_langgraph(ns: NS, aio: bool) -> Any:
    """Nodes declared out of alphabetical order. A snapshot (state, history) and a call
    from a version update_state saved list and run them in declared order; a run that
    knows which channels its last step updated takes the nodes they trigger by name."""
    builder = ns.StateGraph(XLogState)
    for name in ("first", "zeta", "alpha", "mid"):
        builder.add_node(name, note(name))
    builder.add_edge(ns.START, "first")
    for name in ("zeta", "alpha", "mid"):
        builder.add_edge("first", name)
    graph = builder.compile(checkpointer=ns.InMemorySaver(), interrupt_after=["first"])

    def shown(config: dict[str, Any]) -> Any:
        state = graph.get_state(config)
        return {
            "next": list(state.next),
            "tasks": [t.name for t in state.tasks],
            "history": [[list(h.next), [t.name for t in h.tasks]] for h in history(graph, config)],
        }

    out: dict[str, Any] = {}
    out["first_call"] = _started(graph, {"x": 0}, thread("a"), aio)
    out["paused"] = shown(thread("a"))
    out["resumed"] = _started(graph, None, thread("a"), aio)
    _started(graph, {"x": 0}, thread("b"), aio)
    graph.update_state(thread("b"), {"x": 1})
    out["updated"] = shown(thread("b"))
    out["after_update"] = _started(graph, None, thread("b"), aio)
    _started(graph, {"x": 0}, thread("c"), aio)
    graph.update_state(thread("c"), {"x": 1})
    out["command_after_update"] = _started(graph, ns.Command(update={"x": 2}), thread("c"), aio)
    _started(graph, {"x": 0}, thread("d"), aio)
    out["command_on_paused"] = _started(graph, ns.Command(update={"x": 2}), thread("d"), aio)
    out["final"] = shown(thread("c"))
    return out


@case(aio=True)
def case_update_state_runs_routers_that_read_managed_values_and_config(ns: NS, aio: bool) -> Any:
    """An update as a node runs its routers as after the node: they read the managed
    values of an update and the call's config (create_react_agent's edit-then-resume)."""
    seen: list[Any] = []

    def route(state: Any, config: RunnableConfig) -> str:
        thread_of = ns.get_config()["configurable"]["thread_id"]
        seen.append([state, config["configurable"]["thread_id"], thread_of])
        return "b" if state["remaining_steps"] > 1 else ns.END

    class StepsState(TypedDict):
        x: int
        remaining_steps: ns.RemainingSteps  # type: ignore[name-defined]
        is_last_step: ns.IsLastStep  # type: ignore[name-defined]

    builder = ns.StateGraph(StepsState)
    builder.add_node("a", lambda s: {"x": s["x"] + 1})
    builder.add_node("b", lambda s: {"x": s["x"] * 10})
    builder.add_edge(ns.START, "a")
    builder.add_conditional_edges("a", route, ["b", ns.END])
    graph, cfg = saved(ns, builder), thread()

    async def update() -> Any:
        return await graph.aupdate_state(cfg, {"x": 5}, as_node="a")

    try:
        asyncio.run(update()) if aio else graph.update_state(cfg, {"x": 5}, as_node="a")
    except Exception as exc:  # the error is the observation
        return {"update": error_obs(exc), "seen": seen}
    return {
        "seen": seen,
        "after": graph.get_state(cfg),
        "result": invoke(graph, None, cfg, aio=aio),
    }


@case(aio=True, sql=True)
def case_update_state_infers_the_node_from_what_nodes_ran(ns: NS, aio: bool) -> Any:
    """An update without `as_node` stands for the node that last ran, by the versions
    nodes saw when they ran: an earlier update's `as_node` did not run, so a chain ending
    in `gate` infers `gate` after an update as `sub` (a subgraph or not), and a node a
    breakpoint stopped, updated as, is still due. Two nodes that ran in one step, or one
    node woken by two channels at once, make it ambiguous; a fresh thread infers input."""

    def update(graph: Any, config: Any, values: Any, as_node: str | None = None) -> Any:
        return update_next(graph, config, values, as_node, aio=aio)

    def chat_sub_gate(subgraph: bool, **compile_kw: Any) -> Any:
        inner = chain(ns, ["inner"]) if subgraph else note("sub")
        return build(
            ns,
            XLogState,
            {"chat": note("chat"), "sub": inner, "gate": note("gate")},
            chain_edges(["chat", "sub", "gate"]),
            checkpointer=ns.InMemorySaver(),
            **compile_kw,
        )

    out: dict[str, Any] = {}
    threads = itertools.count()

    def new_thread() -> dict[str, Any]:
        # A thread per graph: the SQL saver is one database for all of them.
        return thread(f"infer-{next(threads)}")

    for subgraph in (True, False):
        for first in ("chat", "sub", "gate"):
            graph, cfg = chat_sub_gate(subgraph), new_thread()
            invoke(graph, {"log": []}, cfg, aio=aio)
            out[f"{subgraph} as {first}"] = [
                update(graph, cfg, {"x": 1}, first),
                update(graph, cfg, {"x": 2}),
                update(graph, cfg, {"x": 3}),
            ]
        graph, cfg = chat_sub_gate(subgraph, interrupt_before=["sub"]), new_thread()
        invoke(graph, {"log": []}, cfg, aio=aio)
        out[f"{subgraph} at a breakpoint"] = [
            update(graph, cfg, {"x": 1}, "sub"),
            update(graph, cfg, {"x": 2}),
            invoke(graph, None, cfg, aio=aio),
        ]
    parallel = [("S", "a"), ("S", "b"), ("a", "c"), ("b", "c")]
    two_channels = [("S", "a"), ("S", "b"), ("S", "d"), (["a", "b"], "c"), ("d", "c")]
    shapes = {
        "parallel": (notes("a", "b", "c"), parallel),
        "ends": (notes("a", "b"), [("S", "a"), ("S", "b")]),
        "two": (notes("a", "b", "c", "d"), two_channels),
    }
    for shape, (nodes, edges) in shapes.items():
        for first in (None, "a", "b"):
            graph = build(ns, XLogState, nodes, edges, checkpointer=ns.InMemorySaver())
            cfg = new_thread()
            invoke(graph, {"log": []}, cfg, aio=aio)
            steps = [update(graph, cfg, {"x": 1}, first)] if first else []
            out[f"{shape} as {first}"] = [*steps, update(graph, cfg, {"x": 2})]
    graph, cfg = chat_sub_gate(False), new_thread()
    out["fresh"] = [update(graph, cfg, {"x": 1}, "sub"), update(graph, cfg, {"x": 2})]
    graph, cfg = chat_sub_gate(False), new_thread()
    invoke(graph, {"log": []}, cfg, aio=aio)
    steps = [[({"x": 1}, "sub", None)], [({"x": 2}, None, None)]]
    run_sync_or_async(
        lambda: graph.bulk_update_state(cfg, steps),
        lambda: graph.abulk_update_state(cfg, steps),
        aio,
    )
    out["bulk"] = graph.get_state(cfg)
    return out


# --------------------------------------------------------------------------- update order


def _raised(call: Any) -> Any:
    try:
        return call()
    except Exception as exc:  # the error and its words are the observation
        return {"error": type(exc).__name__, "text": str(exc)}


@case(aio=True, sql=True)
def case_bulk_update_keeps_list_order(ns: NS, aio: bool) -> Any:
    """The updates of one superstep reach a reducer in the order of their list, not of
    their nodes' names; a call goes on from there. Empty input is refused in words."""
    graph = chain(ns, ["a", "b"], checkpointer=ns.InMemorySaver())

    def bulk(config: dict[str, Any], steps: Any) -> Any:
        return run_sync_or_async(
            lambda: graph.bulk_update_state(config, steps),
            lambda: graph.abulk_update_state(config, steps),
            aio,
        )

    su = ns.StateUpdate
    fresh, ran = thread("fresh"), thread("ran")
    bulk(fresh, [[su({"log": ["to_b"]}, "b"), su({"log": ["to_a"]}, "a")]])
    invoke(graph, {"log": ["in"]}, ran, aio=aio)
    bulk(
        ran,
        [
            [su({"log": ["a1"]}, "a"), su({"log": ["b1"]}, "b"), su({"log": ["a2"]}, "a")],
            [su({"log": ["b2"]}, "b"), su({"log": ["a3"]}, "a")],
        ],
    )
    return {
        "fresh": timeline(graph, fresh),
        "ran": timeline(graph, ran),
        "ran_on": invoke(graph, None, ran, aio=aio),
        "no supersteps": _raised(lambda: bulk(ran, [])),
        "empty superstep": _raised(lambda: bulk(ran, [[su({"log": ["z"]}, "a")], []])),
    }


@case(sql=True)
def case_unsaved_subgraph_has_no_task_state(ns: NS) -> Any:
    """A subgraph compiled with `checkpointer=False`, paused by an interrupt, keeps no
    checkpoints: its task shows no state (config or snapshot) and it is no subgraph (nor
    drawn as one)."""
    inner = ns.StateGraph(LogState)
    inner.add_node("i0", note("i0")).add_node("ask", lambda s: {"log": [ns.interrupt("q")]})
    inner.add_edge(ns.START, "i0").add_edge("i0", "ask")
    outer = ns.StateGraph(LogState).add_node("sub", inner.compile(checkpointer=False))
    graph = outer.add_edge(ns.START, "sub").compile(checkpointer=ns.InMemorySaver())
    config = thread()
    first = invoke(graph, {"log": []}, config)
    return {
        "first": first,
        "subgraphs": [name for name, _ in graph.get_subgraphs(recurse=True)],
        "xray": sorted(str(node) for node in graph.get_graph(xray=True).nodes),
        "state": graph.get_state(config),
        "with_subgraphs": graph.get_state(config, subgraphs=True),
        "history": history(graph, config),
        "checkpoints": [
            part["tasks"]
            for part in raw_stream(
                graph, {"log": []}, thread("t2"), False, stream_mode="checkpoints"
            )[0]
        ],
    }


@case
def case_interrupt_default_id(ns: NS) -> Any:
    """An Interrupt made without an id gets LangGraph's placeholder."""
    made = ns.Interrupt("v")
    return {"id": made.id, "value": made.value, "equal": made == ns.Interrupt("v")}


@case(aio=True, sql=True)
def case_state_methods_need_a_thread(ns: NS, aio: bool) -> Any:
    """A config without a thread id reads and writes no thread: the state methods raise
    a KeyError (a run, which names what it needs, a ValueError), and `thread_id: None`
    reads as a thread with no checkpoints, never as every thread."""
    graph = chain(ns, ["a"], checkpointer=ns.InMemorySaver())
    graph.invoke({"log": []}, thread("someone"))

    def attempt(method: str, config: Any, *args: Any) -> Any:
        listing = method == "get_state_history"

        def sync() -> Any:
            found = getattr(graph, method)(config, *args)
            return list(found) if listing else found

        async def asynchronous() -> Any:
            found = getattr(graph, f"a{method}")(config, *args)
            return [s async for s in found] if listing else await found

        try:
            return run_sync_or_async(sync, asynchronous, aio)
        except Exception as exc:  # the error is the observation
            return error_obs(exc)

    out: dict[str, Any] = {}
    for label, config in (
        ("no configurable", {}),
        ("empty configurable", {"configurable": {}}),
        ("namespace only", {"configurable": {"checkpoint_ns": ""}}),
    ):
        out[label] = {
            "get_state": attempt("get_state", config),
            "history": attempt("get_state_history", config),
            "update": attempt("update_state", config, {"log": ["u"]}),
            "invoke": invoke(graph, {"log": []}, config, aio=aio),
        }
    none = thread(None)
    out["thread None"] = {
        "invoke": invoke(graph, {"log": []}, none, aio=aio),
        "get_state": attempt("get_state", none).values,
        "history": attempt("get_state_history", none),
    }
    out["others"] = {tid: len(history(graph, thread(tid))) for tid in ("someone", "")}
    return out


@case(aio=True)
def case_empty_breakpoints_of_a_call_keep_the_compiled_ones(ns: NS, aio: bool) -> Any:
    """A call's empty `interrupt_before` or `interrupt_after` names no breakpoints of its
    own: the graph stops where it was compiled to."""
    out = {}
    for option in ("interrupt_before", "interrupt_after"):
        graph = chain(ns, ["a", "b", "c"], checkpointer=ns.InMemorySaver(), **{option: ["b"]})
        cfg = thread(option)
        out[option] = [invoke(graph, {"log": []}, cfg, aio=aio, **{option: []})]
        out[option].append(graph.get_state(cfg).next)
    return out


@case
def case_interrupt_from_namespace_is_the_tasks_question(ns: NS) -> Any:
    """`Interrupt.from_ns` makes the interrupt the task at that namespace raises when it
    first asks: same value and id."""
    calls: dict[str, int] = {}
    graph, cfg = ask_graph(ns, calls, "ok?"), thread()
    graph.invoke({"log": []}, cfg)
    task = graph.get_state(cfg).tasks[0]
    made = ns.Interrupt.from_ns("ok?", f"{task.name}:{task.id}")
    schema = {"type": "string"}
    return {
        "same": made == task.interrupts[0],
        "made": made,
        "schema": ns.Interrupt.from_ns("q", "x:1", response_schema=schema).response_schema,
    }


# --------------------------------------------------------------------------- stopped resumes


class Stopped(RuntimeError):
    """What a sync node raises to stop its run once it has read an answer."""


def stoppable(ns: NS, aio: bool, hold: dict[str, Any], shape: str) -> Any:
    """A saved graph whose questions stop the run right after reading the answer that
    `hold["stop"]` names: an async run waits there to be cancelled (a user's Stop), a sync
    one fails. `shape`: "one" or "two" questions in a node, "subgraph" (the two-question
    graph as a node), "call" (a `@task` call asks, then the node)."""

    def read(answer: Any) -> Any:
        if answer == hold.get("stop") and not aio:
            raise Stopped(answer)
        return answer

    async def aread(answer: Any) -> Any:
        if answer == hold.get("stop"):
            hold["reached"].set()
            await asyncio.Event().wait()
        return answer

    def asks(*questions: str) -> Any:
        if aio:

            async def anode(state: dict[str, Any]) -> dict[str, Any]:
                return {"log": ["".join([await aread(ns.interrupt(q)) for q in questions])]}

            return anode

        def node(state: dict[str, Any]) -> dict[str, Any]:
            return {"log": ["".join(read(ns.interrupt(q)) for q in questions)]}

        return node

    def saved(node: Any) -> Any:
        builder = ns.StateGraph(AskState).add_node("n", node)
        return builder.add_edge(ns.START, "n").add_edge("n", ns.END)

    if shape == "subgraph":
        inner = saved(asks("q1", "q2")).compile()
        return saved(inner).compile(checkpointer=ns.InMemorySaver())
    if shape != "call":
        questions = ("q1", "q2") if shape == "two" else ("q1",)
        return saved(asks(*questions)).compile(checkpointer=ns.InMemorySaver())

    if aio:

        @ns.task
        async def acall(question: str) -> Any:
            return await aread(ns.interrupt(question))

        async def anode(state: dict[str, Any]) -> dict[str, Any]:
            first = await acall("t1")
            return {"log": [first + await aread(ns.interrupt("q2"))]}

        return saved(anode).compile(checkpointer=ns.InMemorySaver())

    @ns.task
    def call(question: str) -> Any:
        return read(ns.interrupt(question))

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [call("t1").result() + read(ns.interrupt("q2"))]}

    return saved(node).compile(checkpointer=ns.InMemorySaver())


def answer_in_turn(ns: NS, aio: bool, shape: str, script: Sequence[str]) -> list[Any]:
    """Start a thread of the `stoppable` graph, then answer its open question with each
    step of `script`: "A" with A, "#A" with A by the question's id, "A!" with A in a run
    stopped once the answer is read."""
    hold: dict[str, Any] = {}
    # A thread of its own: a SQL saver keeps the threads of a case in one database.
    graph, cfg = stoppable(ns, aio, hold, shape), thread(" ".join([shape, *script]))
    seen = [invoke(graph, {"log": []}, cfg, aio=aio)]
    for step in script:
        value = step.strip("#!")
        answer = {i.id: value for i in graph.get_state(cfg).interrupts} if step[0] == "#" else value
        command = ns.Command(resume=answer)
        hold["stop"] = value if step.endswith("!") else None
        if hold["stop"] is None or not aio:
            seen.append(invoke(graph, command, cfg, aio=aio))
        else:
            asyncio.run(cancelled(graph, command, cfg, hold))
            seen.append("cancelled")
        seen.append(graph.get_state(cfg).next)
    return seen


async def cancelled(graph: Any, command: Any, cfg: Any, hold: dict[str, Any]) -> None:
    """Cancel the run once its node has read the answer (or when it ends without it)."""
    hold["reached"] = asyncio.Event()
    run = asyncio.ensure_future(graph.ainvoke(command, cfg))
    reached = asyncio.ensure_future(hold["reached"].wait())
    await asyncio.wait({run, reached}, return_when=asyncio.FIRST_COMPLETED)
    for job in (run, reached):
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job


@case(sql=True)
def case_an_answer_replaces_one_a_stopped_run_read(ns: NS) -> Any:
    """A run cancelled after its node read an answer leaves the question open; the next
    answer to it is the one the node gets."""
    return {
        "plain": answer_in_turn(ns, True, "one", ["A!", "B"]),
        "twice stopped": answer_in_turn(ns, True, "one", ["A!", "B!", "C"]),
    }


@case(sql=True)
def case_two_questions_answered_in_turn_around_stopped_runs(ns: NS) -> Any:
    """A node asking twice gets each question's last answer, whichever run was cancelled."""
    return {
        "in turn": answer_in_turn(ns, True, "two", ["A", "B"]),
        "first stopped": answer_in_turn(ns, True, "two", ["A!", "A", "B"]),
        "second stopped": answer_in_turn(ns, True, "two", ["A", "B!", "C"]),
        "both stopped": answer_in_turn(ns, True, "two", ["A!", "X!", "A", "B!", "C"]),
    }


@case(sql=True)
def case_answers_by_id_after_a_stopped_run(ns: NS) -> Any:
    """An answer by the question's id replaces one a cancelled run read, by id or not."""
    return {
        "id after id": answer_in_turn(ns, True, "two", ["#A!", "#B", "C"]),
        "plain after id": answer_in_turn(ns, True, "two", ["#A!", "B", "C"]),
        "id for the second": answer_in_turn(ns, True, "two", ["A", "B!", "#C"]),
        "id, one question": answer_in_turn(ns, True, "one", ["A!", "#B"]),
    }


@case(sql=True)
def case_stopped_runs_of_a_node_asking_after_a_task_call(ns: NS) -> Any:
    """After a `@task` call's question, the node's own question takes the last answer,
    though a run that read an earlier one was cancelled."""
    return answer_in_turn(ns, True, "call", ["A", "B!", "C"])


@case(sql=True)
def case_stopped_runs_of_a_subgraph_asking_twice(ns: NS) -> Any:
    """A subgraph's questions, like a node's, take the last answer given to them."""
    return {
        "first stopped": answer_in_turn(ns, True, "subgraph", ["A!", "A", "B"]),
        "second stopped": answer_in_turn(ns, True, "subgraph", ["A", "B!", "C"]),
    }


@case(sql=True)
def case_a_failed_run_keeps_the_answers_it_read(ns: NS) -> Any:
    """Unlike a cancelled run, one that failed after reading an answer keeps it for the
    question, and a later answer goes to the next one."""
    return {
        "one": answer_in_turn(ns, False, "one", ["A!", "B"]),
        "two": answer_in_turn(ns, False, "two", ["A!", "B", "C"]),
        "second": answer_in_turn(ns, False, "two", ["A", "B!", "C"]),
        "by id": answer_in_turn(ns, False, "two", ["#A!", "#B"]),
        "subgraph": answer_in_turn(ns, False, "subgraph", ["A!", "B", "C"]),
        "call": answer_in_turn(ns, False, "call", ["A", "B!", "C"]),
    }


# --------------------------------------------------------------------------- stopped runs


def first_part_then_stop(graph: Any, config: Any, aio: bool, **kwargs: Any) -> Any:
    """The first part a stream of the run yields; the reader then stops (closes it)."""
    if not aio:
        parts = graph.stream({"log": []}, config, **kwargs)
        first = next(parts)
        parts.close()
        return first

    async def read() -> Any:
        parts = graph.astream({"log": []}, config, **kwargs)
        first = await parts.__anext__()
        await parts.aclose()
        return first

    return asyncio.run(read())


@case(aio=True, sql=True)
def case_a_stream_read_in_part_keeps_the_step_it_showed(ns: NS, aio: bool) -> Any:
    """A reader that stops after the first node's update: under every durability the
    step that node ran is saved (the thread is not left looking finished), and the
    thread goes on from the next node."""
    out = {}
    for durability in ("sync", "async", "exit"):
        graph, config = chain(ns, ["a", "b"], checkpointer=ns.InMemorySaver()), thread(durability)
        first = first_part_then_stop(
            graph, config, aio, stream_mode="updates", durability=durability
        )
        state = graph.get_state(config)
        out[durability] = {
            "first": first,
            "next": state.next,
            "step": state.metadata["step"],
            "history": len(history(graph, config)),
            "resumed": invoke(graph, None, config, aio=aio),
        }
    return out


@case(sql=True)
def case_a_keyboard_interrupt_in_an_async_node_keeps_what_was_saved(ns: NS) -> Any:
    """An async node raises KeyboardInterrupt or SystemExit at once (default durability)
    while its sibling waits: the run's input and first step are saved before it leaves
    the event loop, and the thread goes on from there. (What the snapshot's tasks record
    for the two is not observed here.)"""
    out = {}
    calls: list[str] = []
    first = {"run": True}
    for stop in (KeyboardInterrupt, SystemExit):
        calls.clear()
        first["run"] = True

        async def waits(state: Any) -> dict[str, Any]:
            calls.append("waits")
            await asyncio.sleep(0.5 if first["run"] else 0)
            return {"log": ["waits"]}

        async def stops(state: Any, stop: type[BaseException] = stop) -> dict[str, Any]:
            calls.append("stops")
            if first["run"]:
                raise stop()
            return {"log": ["stops"]}

        graph = build(
            ns,
            LogState,
            {"waits": waits, "stops": stops},
            [("S", "waits"), ("S", "stops")],
            checkpointer=ns.InMemorySaver(),
        )
        config = thread(stop.__name__)
        try:
            asyncio.run(graph.ainvoke({"log": []}, config))
            raised = None
        except BaseException as exc:  # the class is the observation
            raised = type(exc).__name__
        first["run"] = False
        state = graph.get_state(config)
        out[stop.__name__] = {
            "raised": raised,
            "values": state.values,
            "next": sorted(state.next),
            "history": len(history(graph, config)),
            "resumed": invoke(graph, None, config, aio=True),
            "calls": sorted(calls),
        }
    return out


@case
def case_a_failure_starts_no_more_tasks_held_by_max_concurrency(ns: NS) -> Any:
    """Five parallel nodes, one at a time (`max_concurrency=1`); the second fails. Once
    the failure is seen, the nodes still waiting for their turn do not start; they run
    when the thread resumes. (Whether the third, whose turn came as the second ended,
    started first is a race in LangGraph's thread pool: not observed.)"""
    import time

    out = {}
    calls: list[int] = []
    failing = {"on": True}
    for aio in (False, True):
        calls.clear()
        failing["on"] = True

        def worker(i: int, aio: bool) -> Node:
            def work(state: Any) -> dict[str, Any]:
                calls.append(i)
                time.sleep(0.02)
                if failing["on"] and i == 1:
                    raise ValueError("w1")
                return {"log": [i]}

            async def awork(state: Any) -> dict[str, Any]:
                calls.append(i)
                await asyncio.sleep(0.02)
                if failing["on"] and i == 1:
                    raise ValueError("w1")
                return {"log": [i]}

            return awork if aio else work

        graph = build(
            ns,
            LogState,
            {f"w{i}": worker(i, aio) for i in range(5)},
            [("S", f"w{i}") for i in range(5)],
            checkpointer=ns.InMemorySaver(),
        )
        config = {**thread("async" if aio else "sync"), "max_concurrency": 1}
        failed = invoke(graph, {"log": []}, config, aio=aio)
        state = graph.get_state(config)
        first = {
            "failed": failed,
            "calls": sorted(i for i in calls if i != 2),
            "next": sorted(n for n in state.next if n != "w2"),
        }
        failing["on"] = False
        calls.clear()
        resumed = invoke(graph, None, config, aio=aio)
        out["async" if aio else "sync"] = {
            **first,
            "resumed": resumed,
            "resume calls": sorted(i for i in calls if i != 2),
        }
    return out


@case(aio=True)
def case_the_first_failure_in_time_is_raised(ns: NS, aio: bool) -> Any:
    """Two parallel nodes fail, the second one in the graph first: its error is the one
    the run raises, whatever the order of the nodes."""
    import threading
    import time

    failing = threading.Event()

    def slow(state: Any) -> dict[str, Any]:
        # Fails a while after the other one does (however slow a pool is to start its
        # thread), or on its own if the two ran one after the other.
        failing.wait(timeout=10)
        time.sleep(0.2)
        raise ValueError("slow")

    def fast(state: Any) -> dict[str, Any]:
        failing.set()
        raise KeyError("fast")

    # Named so that the slow one comes first by name too.
    graph = build(ns, LogState, {"a": slow, "b": fast}, [("S", "a"), ("S", "b")])
    return invoke(graph, {"log": []}, aio=aio)


@case
def case_the_errors_a_snapshot_records_for_stopped_tasks(ns: NS) -> Any:
    """What the snapshot's tasks record as their error when the run stopped them: a
    signal for a graph above (a GraphBubbleUp of the user's) records none, an exception
    that stops the program (a BaseException) records itself, a task cut off by a
    cancelled `ainvoke` or an async `step_timeout` records the cancel."""
    from langgraph.errors import GraphBubbleUp as LangGraphBubbleUp

    from engine.errors import GraphBubbleUp as EngineBubbleUp

    bubble_up = LangGraphBubbleUp if ns.label == "langgraph" else EngineBubbleUp

    class Signal(bubble_up):  # type: ignore[misc, valid-type]
        pass

    class Stop(BaseException):
        pass

    def signals(state: Any) -> Any:
        raise Signal("up")

    def stops(state: Any) -> Any:
        raise Stop("stop")

    async def waits(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0.5)
        return {"log": ["waits"]}

    async def quick(state: Any) -> dict[str, Any]:
        return {"log": ["quick"]}

    def graph_of(node: Node, sibling: Node = note("ok")) -> Any:
        return build(
            ns,
            LogState,
            {"x": node, "ok": sibling},
            [("S", "x"), ("S", "ok")],
            checkpointer=ns.InMemorySaver(),
        )

    def recorded(graph: Any, config: Any, raised: Any) -> dict[str, Any]:
        state = graph.get_state(config)
        return {
            "raised": raised,
            "next": sorted(state.next),
            "errors": sorted((t.name, t.error) for t in state.tasks),
        }

    out = {}
    for name, node in (("signal", signals), ("stop", stops)):
        graph, config = graph_of(node), thread(name)
        try:
            graph.invoke({"log": []}, config)
            raised = None
        except BaseException as exc:  # the class is the observation
            raised = type(exc).__name__
        out[name] = recorded(graph, config, raised)

    graph, config = graph_of(waits, quick), thread("cancelled")

    async def cancel_the_call() -> str:
        call = asyncio.ensure_future(graph.ainvoke({"log": []}, config))
        await asyncio.sleep(0.1)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            return "cancelled"
        return "not cancelled"

    out["cancelled"] = recorded(graph, config, asyncio.run(cancel_the_call()))
    graph, config = graph_of(waits, quick), thread("timed out")
    graph.step_timeout = 0.1
    # (The engine's TimeoutError says which step and tasks; LangGraph's says nothing.)
    timed_out = invoke(graph, {"log": []}, config, aio=True)["error"]
    out["timed out"] = recorded(graph, config, timed_out)
    return out
