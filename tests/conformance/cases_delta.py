"""DeltaChannel conformance cases: state keys declared
``Annotated[T, DeltaChannel(reducer)]`` (LangGraph 1.2) run, stream, persist, resume,
fork and nest as in LangGraph. LangGraph stores such a key as the writes that made it
and replays them on every read; we store its value. What a caller sees must not tell
the two apart, so every case runs on the SQL saver too (``sql=True``).

No ``from __future__ import annotations`` here (see cases_core).
"""

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage

from .cases_core import build, chain_edges
from .harness import NS, case, history, invoke, stream, thread


def chat_state(ns: NS, **delta_kw: Any) -> Any:
    """A state whose `messages` is a DeltaChannel of LangGraph's batch messages reducer."""

    class ChatState(TypedDict):
        messages: Annotated[
            list[AnyMessage], ns.DeltaChannel(ns._messages_delta_reducer, **delta_kw)
        ]
        note: str

    return ChatState


def merge_dicts(state: dict, writes: list) -> dict:
    """A batch reducer of plain data: later keys win."""
    out = dict(state)
    for write in writes:
        out.update(write)
    return out


def extend(state: list, writes: list) -> list:
    """A batch reducer that extends its state in place (it must not change saved ones)."""
    for write in writes:
        state.extend(write if isinstance(write, list) else [write])
    return state


def data_state(ns: NS) -> Any:
    class DataState(TypedDict):
        seen: Annotated[dict, ns.DeltaChannel(merge_dicts, snapshot_frequency=1)]
        log: Annotated[list, ns.DeltaChannel(extend)]

    return DataState


def reply(state: Any) -> dict[str, Any]:
    """Answers with the number of messages it was given (no id: the loop gives one)."""
    return {"messages": [AIMessage(content=f"reply to {len(state['messages'])}")]}


def chat(ns: NS, **delta_kw: Any) -> Any:
    """START -> reply -> END on the delta chat state, saved."""
    return build(
        ns,
        chat_state(ns, **delta_kw),
        {"reply": reply},
        chain_edges(["reply"]),
        checkpointer=ns.InMemorySaver(),
    )


def timeline(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    return {"state": graph.get_state(config), "history": history(graph, config)}


@case(sql=True)
def case_delta_messages_over_turns(ns: NS) -> Any:
    graph, cfg = chat(ns, snapshot_frequency=2), thread()
    outs = [invoke(graph, {"messages": [HumanMessage(content=f"turn {i}")]}, cfg) for i in range(4)]
    return {"outs": outs, **timeline(graph, cfg)}


@case(aio=True, sql=True)
def case_delta_messages_streamed(ns: NS, aio: bool) -> Any:
    graph, cfg = chat(ns), thread()
    first = stream(
        graph,
        {"messages": [HumanMessage(content="hi", id="h1")]},
        cfg,
        stream_mode=["values", "updates"],
        aio=aio,
    )
    second = stream(graph, {"messages": "again"}, cfg, stream_mode="values", aio=aio)
    return {"first": first, "second": second}


@case(sql=True)
def case_delta_message_likes_become_messages(ns: NS) -> Any:
    """Dicts, strings and (role, content) tuples written to the key become messages with
    ids, in the input, in a Command's update and in update_state."""
    graph, cfg = chat(ns), thread()
    out = invoke(
        graph,
        {"messages": [{"role": "user", "content": "a dict"}, "a string", ("ai", "a tuple")]},
        cfg,
    )
    updated = graph.update_state(cfg, {"messages": {"role": "user", "content": "edit"}})
    commanded = invoke(graph, ns.Command(update={"messages": ["by command"]}), cfg)
    return {"out": out, "updated": graph.get_state(updated), "commanded": commanded}


@case(sql=True)
def case_delta_remove_and_overwrite(ns: NS) -> Any:
    def edit(state: Any) -> dict[str, Any]:
        first, *_ = state["messages"]
        return {"messages": [RemoveMessage(id=first.id), RemoveMessage(id="unknown")]}

    def reset(state: Any) -> dict[str, Any]:
        return {"messages": ns.Overwrite([HumanMessage(content="fresh", id="f")])}

    def clear(state: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=ns.REMOVE_ALL_MESSAGES), AIMessage(content="last")]}

    graph = build(
        ns,
        chat_state(ns),
        {"reply": reply, "edit": edit, "reset": reset, "reply2": reply, "clear": clear},
        chain_edges(["reply", "edit", "reset", "reply2", "clear"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    out = invoke(graph, {"messages": [HumanMessage(content="q", id="q")]}, cfg)
    return {"out": out, **timeline(graph, cfg)}


@case(sql=True)
def case_delta_parallel_writers_one_batch(ns: NS) -> Any:
    def left(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content="left", id="l")], "seen": {"left": 1}}

    def right(state: Any) -> dict[str, Any]:
        return {"messages": AIMessage(content="right", id="r"), "seen": {"right": 2}}

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], ns.DeltaChannel(ns._messages_delta_reducer)]
        seen: Annotated[dict, ns.DeltaChannel(merge_dicts)]

    graph = build(
        ns,
        State,
        {"left": left, "right": right},
        [("S", "left"), ("S", "right"), ("left", "E"), ("right", "E")],
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    out = invoke(graph, {"messages": [HumanMessage(content="go", id="go")]}, cfg)
    return {"out": out, **timeline(graph, cfg)}


@case(sql=True)
def case_delta_reducer_of_plain_data(ns: NS) -> Any:
    def a(state: Any) -> dict[str, Any]:
        return {"seen": {"a": len(state["log"])}, "log": ["a"]}

    def b(state: Any) -> dict[str, Any]:
        return {"seen": {"a": 0, "b": 1}, "log": ["b", "b2"]}

    graph = build(
        ns,
        data_state(ns),
        {"a": a, "b": b},
        chain_edges(["a", "b"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    outs = [invoke(graph, {"log": ["in"]}, cfg), invoke(graph, {"seen": {"x": 1}}, cfg)]
    return {"outs": outs, **timeline(graph, cfg)}


@case(sql=True)
def case_delta_two_overwrites_in_one_step(ns: NS) -> Any:
    def one(state: Any) -> dict[str, Any]:
        return {"messages": ns.Overwrite([])}

    graph = build(
        ns,
        chat_state(ns),
        {"one": one, "two": one},
        [("S", "one"), ("S", "two")],
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    # The live state would fold the two saved writes again, and fail again: the history
    # shows where the run stopped.
    return {"out": invoke(graph, {"messages": ["x"]}, cfg), "history": history(graph, cfg)}


@case
def case_delta_snapshot_frequency_must_be_positive(ns: NS) -> Any:
    out = {}
    for value in (0, -1):
        try:
            ns.DeltaChannel(ns._messages_delta_reducer, snapshot_frequency=value)
        except ValueError:
            out[value] = "ValueError"
    return out


@case(sql=True)
def case_delta_interrupt_resume_and_fork(ns: NS) -> Any:
    def ask(state: Any) -> dict[str, Any]:
        answer = ns.interrupt("name?")
        return {"messages": [AIMessage(content=f"hello {answer}")]}

    graph = build(
        ns,
        chat_state(ns),
        {"reply": reply, "ask": ask},
        chain_edges(["reply", "ask"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    asked = invoke(graph, {"messages": [HumanMessage(content="hi", id="hi")]}, cfg)
    answered = invoke(graph, ns.Command(resume="ada"), cfg)
    invoke(graph, {"messages": [HumanMessage(content="more", id="more")]}, cfg)
    older = [s.config for s in history(graph, cfg) if s.next == ("ask",)][0]
    replayed = invoke(graph, None, older)
    forked = graph.update_state(older, {"messages": [HumanMessage(content="edit", id="e")]})
    return {
        "asked": asked,
        "answered": answered,
        "replayed": replayed,
        "forked": graph.get_state(forked),
        "fork_run": invoke(graph, ns.Command(resume="bob"), forked),
        **timeline(graph, cfg),
    }


@case(sql=True)
def case_delta_state_of_stateful_subgraph(ns: NS) -> Any:
    """A delta chat compiled with checkpointer=True, run by a node on each turn: its
    messages carry over from one turn to the next, in its own namespace."""
    agent = build(ns, chat_state(ns), {"reply": reply}, chain_edges(["reply"]))
    wrapper = build(ns, chat_state(ns), {"agent": agent}, chain_edges(["agent"]), checkpointer=True)

    class Outer(TypedDict):
        result: str

    def call(state: Any) -> dict[str, Any]:
        out = wrapper.invoke({"messages": [HumanMessage(content="q")]})
        return {"result": " / ".join(m.content for m in out["messages"])}

    graph = build(ns, Outer, {"call": call}, chain_edges(["call"]), checkpointer=ns.InMemorySaver())
    cfg = thread()
    outs = [invoke(graph, {"result": ""}, cfg) for _ in range(2)]
    inner = graph.get_state(thread(checkpoint_ns="call"))
    inner_history = history(graph, thread(checkpoint_ns="call"))
    return {"outs": outs, "inner": inner, "inner_history": inner_history}
