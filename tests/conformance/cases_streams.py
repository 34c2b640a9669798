"""LangGraph 1.2's stream formats: the parts of `stream(..., version="v2")`, what
`invoke(..., version="v2")` returns, and the `tools` stream mode, in graphs, their
subgraphs and graphs run inside nodes (as subgraphs, or on a thread of their own).

No ``from __future__ import annotations`` here (see cases_core).
"""

import contextlib
import operator
import time
import warnings
from typing import Annotated, Any, TypedDict

import pydantic
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from .cases_core import (
    DataState,
    LogState,
    ModelState,
    Node,
    XLogState,
    build,
    chain_edges,
    note,
)
from .cases_langchain import question
from .cases_persistence import _error_of, timeline
from .harness import NS, bump, case, invoke, raw_stream, stream, thread

RUN_MODES = ["values", "updates", "custom"]
TASK_MODES = ["tasks", "checkpoints", "debug"]


class AskState(TypedDict):
    log: Annotated[list, operator.add]
    answer: str


def v2(graph: Any, inp: Any, config: Any = None, *, aio: bool, **kw: Any) -> dict[str, Any]:
    """Every part of a v2 stream, and the error class if the run raised."""
    parts, exc = raw_stream(graph, inp, config, aio, version="v2", **kw)
    return {"parts": parts, "error": type(exc).__name__ if exc else None}


def writer_node(ns: NS, name: str) -> Node:
    def node(state: Any) -> dict[str, Any]:
        ns.get_stream_writer()({"from": name})
        return {"log": [name]}

    return node


def asking_graph(ns: NS) -> Any:
    """START -> a (writes to the custom stream) -> sub (a subgraph) -> ask (interrupts)."""
    sub = build(ns, AskState, {"inner": writer_node(ns, "inner")}, [("S", "inner")])

    def ask(state: Any) -> dict[str, Any]:
        return {"answer": ns.interrupt("ready?"), "log": ["ask"]}

    nodes = {"a": writer_node(ns, "a"), "sub": sub, "ask": ask}
    return build(ns, AskState, nodes, chain_edges(list(nodes)), checkpointer=ns.InMemorySaver())


# --------------------------------------------------------------------------- v2 parts


@case(aio=True)
def case_v2_parts_of_every_mode(ns: NS, aio: bool) -> Any:
    # Task and checkpoint parts apart, and only the top graph's: where they fall among
    # the values and updates parts at an interrupt or a resume, and the checkpoint map in
    # a subgraph's checkpoint parts, are not yet LangGraph's.
    out = {}
    for modes, subgraphs in ((RUN_MODES, False), (RUN_MODES, True), (TASK_MODES, False)):
        graph, cfg = asking_graph(ns), thread()
        kw = {"stream_mode": modes, "subgraphs": subgraphs, "aio": aio}
        out[f"{modes}, subgraphs={subgraphs}"] = {
            "asked": v2(graph, {"log": []}, cfg, **kw),
            "answered": v2(graph, ns.Command(resume="yes"), cfg, **kw),
        }
    return out


@case(aio=True)
def case_v2_parts_of_one_mode(ns: NS, aio: bool) -> Any:
    graph, cfg = asking_graph(ns), thread()
    return {
        "values": v2(graph, {"log": []}, cfg, stream_mode="values", aio=aio),
        "default": v2(graph, ns.Command(resume="yes"), cfg, aio=aio),
    }


@case(aio=True)
def case_v2_values_as_the_schema_class(ns: NS, aio: bool) -> Any:
    out = {}
    for schema in (DataState, ModelState):
        nodes = {"a": note("a", x=1)}
        graph = build(ns, schema, nodes, [("S", "a")], checkpointer=ns.InMemorySaver())
        modes = ["values", "checkpoints", "debug"]
        out[schema.__name__] = {
            "stream": v2(graph, {"x": 5}, thread(), stream_mode=modes, aio=aio),
            "invoke": invoke(graph, {"x": 5}, thread("t2"), aio=aio, version="v2"),
        }
    return out


class Out(pydantic.BaseModel):
    log: list


@case
def case_v2_values_as_the_output_schema(ns: NS) -> Any:
    builder = ns.StateGraph(LogState, output_schema=Out).add_node("a", note("a"))
    graph = builder.add_edge(ns.START, "a").compile()
    return {
        "stream": v2(graph, {"log": []}, stream_mode="values", aio=False),
        "invoke": graph.invoke({"log": []}, version="v2"),
    }


# --------------------------------------------------------------------------- invoke v2


@case(aio=True)
def case_invoke_v2(ns: NS, aio: bool) -> Any:
    graph, cfg = asking_graph(ns), thread()
    return {
        "asked": invoke(graph, {"log": []}, cfg, aio=aio, version="v2"),
        "answered": invoke(graph, ns.Command(resume="yes"), cfg, aio=aio, version="v2"),
        "updates": invoke(
            graph, {"log": []}, thread("t2"), aio=aio, version="v2", stream_mode="updates"
        ),
    }


@case(aio=True)
def case_invoke_v2_of_an_entrypoint(ns: NS, aio: bool) -> Any:
    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def flow(text: str) -> str:
        return text + ns.interrupt("more?")

    cfg = thread()
    return {
        "asked": invoke(flow, "a", cfg, aio=aio, version="v2"),
        "answered": invoke(flow, ns.Command(resume="b"), cfg, aio=aio, version="v2"),
    }


@case
def case_graph_output_read_as_a_dict(ns: NS) -> Any:
    """The v1 result was a dict: a GraphOutput still reads as one, with a deprecation
    warning each time."""
    graph, cfg = asking_graph(ns), thread()
    out = graph.invoke({"log": []}, cfg, version="v2")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = {
            "log": out["log"],
            "interrupts": out["__interrupt__"],
            "has log": "log" in out,
            "has interrupts": "__interrupt__" in out,
            "has other": "other" in out,
        }
    deprecations = [issubclass(w.category, DeprecationWarning) for w in caught]
    return {"read": read, "deprecations": deprecations}


# --------------------------------------------------------------------------- tools mode


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"{q}: sunny"


@tool
def broken(q: str) -> str:
    """Fail."""
    raise ValueError(f"no {q}")


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def tool_caller(state: Any) -> dict[str, Any]:
    """Calls tools as a ToolNode would (with a tool call), plainly, and one that fails."""
    replies = [lookup.invoke(call("lookup", "call_1", q="weather"))]
    lookup.invoke({"q": "plain"})
    lookup.with_config(tags=["nostream"]).invoke({"q": "quiet"})
    with contextlib.suppress(ValueError):
        broken.invoke({"q": "luck"})
    return {"messages": replies}


async def atool_caller(state: Any) -> dict[str, Any]:
    replies = [await lookup.ainvoke(call("lookup", "call_1", q="weather"))]
    await lookup.ainvoke({"q": "plain"})
    with contextlib.suppress(ValueError):
        await broken.ainvoke({"q": "luck"})
    return {"messages": replies}


def tools_graph(ns: NS, aio: bool) -> Any:
    return build(
        ns, ns.MessagesState, {"tools": atool_caller if aio else tool_caller}, [("S", "tools")]
    )


@case(aio=True)
def case_tools_stream_mode(ns: NS, aio: bool) -> Any:
    graph = tools_graph(ns, aio)
    return {
        "alone": stream(graph, question(), stream_mode="tools", aio=aio),
        "with updates": stream(graph, question(), stream_mode=["tools", "updates"], aio=aio),
        "v2": v2(graph, question(), stream_mode=["tools", "messages"], aio=aio),
        "not asked": stream(graph, question(), stream_mode=["updates"], aio=aio),
    }


@case(aio=True)
def case_tools_in_a_subgraph(ns: NS, aio: bool) -> Any:
    parent = build(ns, ns.MessagesState, {"sub": tools_graph(ns, aio)}, [("S", "sub")])
    modes = ["tools", "messages"]
    return {
        f"subgraphs={subgraphs}": v2(
            parent, question(), stream_mode=modes, subgraphs=subgraphs, aio=aio
        )
        for subgraphs in (False, True)
    }


@case(aio=True)
def case_tool_that_interrupts(ns: NS, aio: bool) -> Any:
    @tool
    def confirm(q: str) -> str:
        """Ask first."""
        return f"{q}: {ns.interrupt('sure?')}"

    def node(state: Any) -> dict[str, Any]:
        return {"messages": [confirm.invoke(call("confirm", "call_9", q="go"))]}

    graph = build(
        ns, ns.MessagesState, {"node": node}, [("S", "node")], checkpointer=ns.InMemorySaver()
    )
    cfg = thread()
    return {
        "asked": stream(graph, question(), cfg, stream_mode="tools", aio=aio),
        "answered": stream(graph, ns.Command(resume="yes"), cfg, stream_mode="tools", aio=aio),
    }


# --------------------------------------------------------------------------- graphs run in nodes


def chat_and_lookup(state: Any) -> dict[str, Any]:
    lookup.invoke(call("lookup", "call_2", q="inside"))
    return {"messages": [GenericFakeChatModel(messages=iter(["a reply"])).invoke("hi")]}


def child_graph(ns: NS, **compile_kw: Any) -> Any:
    return build(ns, ns.MessagesState, {"chat": chat_and_lookup}, [("S", "chat")], **compile_kw)


def runs_child(child: Any, config: Any, how: str, seen: list[Any], modes: Any) -> Node:
    """A node that invokes `child`, or streams it in `modes` into `seen`, with `config`."""

    def node(state: Any) -> dict[str, Any]:
        if how == "invoke":
            child.invoke({"messages": []}, config)
        else:
            seen.extend(child.stream({"messages": []}, config, stream_mode=modes))
        return {}

    return node


@case
def case_graph_run_inside_a_node(ns: NS) -> Any:
    """A node runs a child graph: as a subgraph of its task (no config), or on a thread
    of its own (a config of its own), streaming it itself or not."""
    out: dict[str, Any] = {}
    for label, config in (("no config", None), ("own thread", thread("child"))):
        for how in ("invoke", "stream"):
            seen: list[Any] = []
            node = runs_child(child_graph(ns), config, how, seen, ["tools", "messages"])
            graph = build(ns, ns.MessagesState, {"node": node}, [("S", "node")])
            for subgraphs in (False, True):
                modes = ["tools", "messages"]
                parts = v2(graph, question(), stream_mode=modes, subgraphs=subgraphs, aio=False)
                out[f"{label}, {how}, subgraphs={subgraphs}"] = {"parts": parts, "child": seen[:]}
                seen.clear()
    return out


@case
def case_graph_on_its_own_thread_inside_a_node(ns: NS) -> Any:
    """A child graph with its own checkpointer, run in a node on a thread of its own: its
    state and its interrupt stay on that thread; the node gets its output."""

    class Ask(TypedDict):
        log: Annotated[list, operator.add]

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("child?")]}

    child = build(ns, Ask, {"ask": ask}, [("S", "ask")], checkpointer=ns.InMemorySaver())
    got: list[Any] = []

    def node(state: Any) -> dict[str, Any]:
        got.append(child.invoke({"log": []}, thread("child")))
        return {"log": ["node"]}

    graph = build(ns, LogState, {"node": node}, [("S", "node")], checkpointer=ns.InMemorySaver())
    cfg = thread("parent")
    return {
        "run": invoke(graph, {"log": []}, cfg),
        "got": got,
        "parent": timeline(graph, cfg),
        "child": timeline(child, thread("child")),
        "parent with subgraphs": graph.get_state(cfg, subgraphs=True),
    }


@case
def case_node_messages_of_a_graph_run_inside_a_node(ns: NS) -> Any:
    """Messages a graph's node pushes and returns, not made by a chat model, where that
    graph is a subgraph and where a node runs it (on its task's thread or its own, and
    streaming it or not): who is shown them, and where. Their metadata is left out: ours
    has `ls_integration`, LangGraph's not."""

    def push(state: Any) -> dict[str, Any]:
        ns.push_message(AIMessage("pushed", id="p1"), state_key=None)
        return {"messages": [AIMessage("returned", id="r1")]}

    pushing = build(ns, ns.MessagesState, {"push": push}, [("S", "push")])
    sub = build(ns, ns.MessagesState, {"sub": pushing}, [("S", "sub")])
    out: dict[str, Any] = {
        f"subgraph, subgraphs={subgraphs}": shown_messages(sub, subgraphs)
        for subgraphs in (False, True)
    }
    for label, config in (("no config", None), ("own thread", thread("child"))):
        for how in ("invoke", "stream"):
            seen: list[Any] = []
            node = runs_child(pushing, config, how, seen, "messages")
            graph = build(ns, ns.MessagesState, {"node": node}, [("S", "node")])
            for subgraphs in (False, True):
                out[f"{label}, {how}, subgraphs={subgraphs}"] = {
                    "shown": shown_messages(graph, subgraphs),
                    "seen": [message.id for message, _ in seen],
                }
                seen.clear()
    return out


def shown_messages(graph: Any, subgraphs: bool) -> list[Any]:
    """(namespace, message id) of each part of a v2 messages stream."""
    parts = v2(graph, question(), stream_mode="messages", subgraphs=subgraphs, aio=False)
    return [[part["ns"], part["data"][0].id] for part in parts["parts"]]


@case
def case_sync_stream_stops_where_its_reader_stops(ns: NS) -> Any:
    """A caller that stops reading a sync stream stops the run there: the nodes after the
    part it read never run (nor does the run go on to its end before the stream closes)."""
    ran: list[str] = []

    def step(name: str) -> Node:
        def node(state: Any) -> dict[str, Any]:
            ran.append(name)
            return {"log": [name]}

        return node

    names = [f"n{i}" for i in range(6)]
    graph = build(ns, LogState, {n: step(n) for n in names}, chain_edges(names))
    out: dict[str, Any] = {}
    for mode in ("updates", "values"):
        parts = graph.stream({"log": []}, stream_mode=mode)
        out[mode] = {"first": next(parts)}
        parts.close()
        out[mode]["ran"] = list(ran)
        ran.clear()
    return out


@case
def case_generative_ui_messages(ns: NS) -> Any:
    """`push_ui_message` and `delete_ui_message`: what the custom stream shows, and what
    `ui_message_reducer` keeps in the state (a replacement, a merge, a removal, and one
    pushed with `state_key=None`, streamed only)."""

    class UIState(TypedDict):
        ui: Annotated[list, ns.ui_message_reducer]
        messages: Annotated[list, ns.add_messages]

    def show(state: Any) -> dict[str, Any]:
        reply = AIMessage("here", id="m1")
        ns.push_ui_message("card", {"title": "a", "n": 1}, id="c1", message=reply)
        ns.push_ui_message("chart", {"points": [1, 2]}, id="c2", metadata={"kind": "x"})
        ns.push_ui_message("toast", {"text": "hi"}, id="t1", state_key=None)
        return {"messages": [reply]}

    def change(state: Any) -> dict[str, Any]:
        ns.push_ui_message("card", {"n": 2}, id="c1", merge=True)
        ns.delete_ui_message("c2")
        return {}

    graph = build(
        ns, UIState, {"show": show, "change": change}, [("S", "show"), ("show", "change")]
    )
    parts = list(graph.stream({"ui": [], "messages": []}, stream_mode=["custom", "values"]))
    final = parts[-1][1]
    return {
        "custom": [part for mode, part in parts if mode == "custom"],
        "ui": final["ui"],
        "messages": [m.id for m in final["messages"]],
        "missing": _error_of(lambda: ns.ui_message_reducer([], {"type": "remove-ui", "id": "x"})),
    }


@case(aio=True)
def case_task_starts_carry_metadata_and_tags(ns: NS, aio: bool) -> Any:
    """A task's start in the `tasks` and `debug` streams carries the run's and the
    node's own metadata and the run's tags, not the engine's bookkeeping keys."""
    inner = build(ns, LogState, {"deep": note("deep")}, [("S", "deep")])
    graph = (
        ns.StateGraph(LogState)
        .add_node("a", note("a"), metadata={"kind": "first"})
        .add_node("sub", inner)
        .add_edge(ns.START, "a")
        .add_edge("a", "sub")
        .compile()
    )
    config = {"metadata": {"user": "u1"}, "tags": ["mine"]}
    plain = stream(graph, {"log": []}, stream_mode="tasks", aio=aio)
    return {
        "plain": plain,
        "tasks": stream(graph, {"log": []}, config, stream_mode="tasks", subgraphs=True, aio=aio),
        "debug": [
            part["payload"].get("metadata")
            for part in stream(graph, {"log": []}, config, stream_mode="debug", aio=aio)["parts"]
            if part["type"] == "task"
        ],
    }


@case
def case_run_keys_reach_messages_metadata(ns: NS) -> Any:
    """The run's thread, checkpoint, task, run, assistant and graph ids given in its
    `configurable` show in the `messages` metadata (unless its metadata has its own);
    other keys (a model name, a secret) do not."""

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content="hello", id="m1")]}

    graph = (
        ns.StateGraph(ns.MessagesState)
        .add_node("reply", reply)
        .add_edge(ns.START, "reply")
        .compile()
    )
    given = {
        "thread_id": "th-1",
        "checkpoint_id": "ckpt-1",
        "checkpoint_ns": "ns-1",
        "task_id": "task-1",
        "run_id": "run-1",
        "assistant_id": "asst-1",
        "graph_id": "graph-1",
        "model": "m",
        "api_key": "secret",
    }
    out = {}
    for name, config in {
        "configurable": {"configurable": given},
        "own metadata": {"configurable": given, "metadata": {"assistant_id": "mine"}},
    }.items():
        parts = list(graph.stream({"messages": []}, config, stream_mode="messages"))
        out[name] = [
            {k: v for k, v in meta.items() if not k.startswith("langgraph_")} for _, meta in parts
        ]
    return out


@case(aio=True)
def case_only_a_list_of_modes_tags_the_parts(ns: NS, aio: bool) -> Any:
    """`invoke` with several modes returns the parts; as in `stream`, a list asks for
    `(mode, chunk)` parts, and a tuple or set of modes gives bare chunks."""
    graph = build(ns, LogState, {"a": note("a"), "b": note("b")}, chain_edges(["a", "b"]))
    forms: list[Any] = [["updates", "values"], ("values",), ("updates", "values"), {"updates"}]
    return {
        "invoke": [invoke(graph, {"log": []}, aio=aio, stream_mode=m) for m in forms],
        "invoke v2": invoke(graph, {"log": []}, aio=aio, stream_mode=forms[0], version="v2"),
        "stream": [raw_stream(graph, {"log": []}, None, aio, stream_mode=m)[0] for m in forms],
    }


@case(aio=True)
def case_a_resumed_run_shows_its_values_then_its_version(ns: NS, aio: bool) -> Any:
    """Going on from a breakpoint, the state as the call's command left it comes first,
    then the version the run goes on from (its `checkpoints` and `debug` parts show that
    state too)."""

    class State(TypedDict):
        v: int

    nodes = {"a": lambda s: {"v": s["v"] + 1}, "b": lambda s: {"v": s["v"] * 2}}
    graph = build(ns, State, nodes, chain_edges(["a", "b"]), checkpointer=ns.InMemorySaver())
    modes = ["values", "checkpoints", "debug"]
    seen = []
    for resume in (None, ns.Command(update={"v": 10})):
        config = thread()
        for inp in ({"v": 1}, resume):
            parts = stream(graph, inp, config, stream_mode=modes, aio=aio, interrupt_before=["b"])
            seen.append([[m, p["type"] if m == "debug" else p] for m, p in parts["parts"]])
    return seen


@case(aio=True)
def case_a_task_result_shows_its_questions_whole(ns: NS, aio: bool) -> Any:
    """The `tasks` and `debug` results of a task that asked show each question as the
    `values` part does: its value, id and the schema of the answer it expects."""

    class Answer(pydantic.BaseModel):
        approved: bool

    def ask(state: Any) -> dict[str, Any]:
        first = ns.interrupt("plain?")
        return {"log": [first, ns.interrupt("approve?", response_schema=Answer)]}

    graph = build(ns, LogState, {"ask": ask}, [("S", "ask")], checkpointer=ns.InMemorySaver())
    config = thread()
    modes = ["tasks", "debug"]
    first = stream(graph, {"log": []}, config, stream_mode=modes, aio=aio)
    second = stream(graph, ns.Command(resume="yes"), config, stream_mode=modes, aio=aio)
    shown = [
        (p["payload"] if m == "debug" else p)["interrupts"]
        for run in (first, second)
        for m, p in run["parts"]
        if "interrupts" in (p["payload"] if m == "debug" else p)
    ]
    # Each question's fields as they are (the observation's normalising keeps an
    # interrupt's value and id only).
    return [[(sorted(q), q["value"], q.get("response_schema")) for q in part] for part in shown]


@case(aio=True, sql=True)
def case_a_checkpoint_part_shows_its_tasks_questions_whole(ns: NS, aio: bool) -> Any:
    """The `checkpoints` and `debug` checkpoint parts show a task's questions as its
    result does: value, id and the schema of the answer it expects (None without)."""

    class Answer(pydantic.BaseModel):
        approved: bool

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [str(ns.interrupt("approve?", response_schema=Answer))]}

    def ask_more(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("more?")]}

    nodes = {"ask": ask, "more": ask_more}
    graph = build(
        ns, LogState, nodes, [("S", "ask"), ("ask", "more")], checkpointer=ns.InMemorySaver()
    )
    config = thread()
    modes = ["checkpoints", "debug"]
    runs = [
        stream(graph, inp, config, stream_mode=modes, aio=aio)
        for inp in ({"log": []}, ns.Command(resume={"approved": True}), ns.Command(resume="no"))
    ]
    checkpoints = [
        p["payload"] if m == "debug" else p
        for run in runs
        for m, p in run["parts"]
        if m == "checkpoints" or p["type"] == "checkpoint"
    ]
    # Each question's fields as they are (the observation's normalising keeps an
    # interrupt's value and id only, and drops a checkpoint's ids).
    return [
        [
            [(sorted(q), q["value"], q.get("response_schema")) for q in t["interrupts"]]
            for t in c["tasks"]
        ]
        for c in checkpoints
    ]


@case(aio=True, sql=True)
def case_a_resumed_step_shows_its_finished_tasks(ns: NS, aio: bool) -> Any:
    """Going on with a step that a question (or a failure) stopped, the version the run
    goes on from shows what its finished tasks wrote (and the failure, as its text), for
    parallel nodes and `Send`s alike. (Their starts in the `tasks` and `debug` streams
    differ on purpose: docs/langgraph-differences.md.)"""
    failing = [True]

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("b?")]}

    def flaky(state: Any) -> dict[str, Any]:
        if failing[0]:
            raise ValueError("boom")
        return {"log": ["c"]}

    def work(packet: Any) -> dict[str, Any]:
        item = packet["item"]
        return {"log": [ns.interrupt(item) if item == "ask" else item]}

    fan = ns.StateGraph(LogState)
    fan.add_node("w", work)
    fan.add_conditional_edges(
        ns.START, lambda s: [ns.Send("w", {"item": i}) for i in ("a", "ask", "b")], ["w"]
    )
    graphs = {
        "parallel": (
            build(
                ns,
                LogState,
                {"a": note("a"), "b": ask, "n": lambda s: None},
                [("S", "a"), ("S", "b"), ("S", "n")],
                checkpointer=ns.InMemorySaver(),
            ),
            ns.Command(resume="B"),
        ),
        "send": (fan.compile(checkpointer=ns.InMemorySaver()), ns.Command(resume="ANS")),
        "failed": (
            build(
                ns,
                LogState,
                {"a": note("a"), "c": flaky},
                [("S", "a"), ("S", "c")],
                checkpointer=ns.InMemorySaver(),
            ),
            None,
        ),
    }
    out = {}
    for name, (graph, resume) in graphs.items():
        config = thread(name)
        failing[0] = True
        invoke(graph, {"log": []}, config, aio=aio)
        failing[0] = False
        out[name] = stream(graph, resume, config, stream_mode="checkpoints", aio=aio)
    return out


@case(aio=True)
def case_a_question_shows_the_state_before_the_tasks_result(ns: NS, aio: bool) -> Any:
    """When a task asks, the `values` part with its question comes at once, before the
    task's `tasks` result and the results of tasks that finish later, at every level, in
    every format. (With several tasks asking, the engine's parts show the questions
    asked so far: see docs/langgraph-differences.md.)"""

    def ask(name: str) -> Node:
        def node(state: Any) -> dict[str, Any]:
            return {"log": [ns.interrupt(f"{name}?")]}

        return node

    def slow(state: Any) -> dict[str, Any]:
        time.sleep(0.3)
        return {"log": ["slow"]}

    nodes = {"a": ask("a"), "slow": slow}
    parallel = build(
        ns, LogState, nodes, [("S", "a"), ("S", "slow")], checkpointer=ns.InMemorySaver()
    )
    sub = build(ns, LogState, {"inner": ask("inner")}, [("S", "inner")])
    nested = build(ns, LogState, {"sub": sub}, [("S", "sub")], checkpointer=ns.InMemorySaver())
    modes = ["tasks", "values", "updates"]

    def shown(parts: list[Any]) -> list[Any]:
        return [[p.get("name"), "result" in p] if m == "tasks" else [m, p] for m, p in parts]

    return {
        "parallel": shown(
            stream(parallel, {"log": []}, thread("p"), stream_mode=modes, aio=aio)["parts"]
        ),
        "subgraphs": stream(
            nested, {"log": []}, thread("s"), stream_mode=modes, subgraphs=True, aio=aio
        ),
        "v2": v2(nested, {"log": []}, thread("v"), aio=aio, stream_mode=modes, subgraphs=True),
    }


class OneValue(TypedDict):
    x: int


@case(aio=True)
def case_parts_of_a_lone_task_whose_writes_fail_to_apply(ns: NS, aio: bool) -> Any:
    """A step of one task goes out once its writes are applied, as LangGraph streams it
    when nothing streams live: a node writing a plain key twice shows only its start
    before the InvalidUpdateError. Streamed live (subgraphs, custom parts) its end goes
    out as it finishes, and so do the ends of parallel tasks."""

    def twice(state: Any) -> list[Any]:
        return [ns.Command(update={"x": 1}), ns.Command(update={"x": 2})]

    lone = ns.StateGraph(OneValue).add_node("a", twice).add_edge(ns.START, "a").compile()
    pair = (
        ns.StateGraph(OneValue)
        .add_node("a", lambda state: {"x": 1})
        .add_node("b", lambda state: {"x": 2})
        .add_edge(ns.START, "a")
        .add_edge(ns.START, "b")
        .compile()
    )
    shown = {
        f"{modes} subgraphs={subgraphs}": stream(
            lone, {"x": 0}, stream_mode=modes, subgraphs=subgraphs, aio=aio
        )
        for modes in ("updates", ["updates", "tasks"], ["updates", "debug"], ["updates", "custom"])
        for subgraphs in (False, True)
    }
    shown["parallel"] = stream(pair, {"x": 0}, stream_mode="updates", aio=aio, unordered=True)
    # Beside a task the cache serves, the one that runs is alone all the same.
    calls: dict[str, int] = {}

    def first_once(state: Any) -> Any:
        return twice(state) if bump(calls, "a") > 1 else {"log": ["a"]}

    cached = (
        ns.StateGraph(XLogState)
        .add_node("a", first_once)
        .add_node("c", note("c"), cache_policy=ns.CachePolicy())
        .add_edge(ns.START, "a")
        .add_edge(ns.START, "c")
        .compile(cache=ns.InMemoryCache())
    )
    shown["beside a cached task"] = [
        stream(cached, {"x": 0, "log": []}, aio=aio, unordered=True) for _ in range(2)
    ]
    return shown


@case(aio=True, sql=True)
def case_checkpoint_parts_show_the_calls_configurable_keys(ns: NS, aio: bool) -> Any:
    """The config and parent config of `checkpoints` and `debug` checkpoint parts carry
    the call's other configurable keys (a `user_id`, even a `__` one), at every level;
    the parent of the version a call goes on from, read and not saved by it, is shown as
    the saver gave it."""

    def keys(config: Any) -> Any:
        if config is None:
            return None
        conf = config["configurable"]
        return [sorted(config), sorted(conf), conf.get("user_id")]

    def shown(inp: Any, user: str) -> list[Any]:
        config = thread(user_id=user, __note="kept")
        modes = ["checkpoints", "debug"]
        parts = stream(graph, inp, config, stream_mode=modes, subgraphs=True, aio=aio)["parts"]
        return [
            [where, keys(c["config"]), keys(c["parent_config"])]
            for where, m, p in parts
            for c in [p["payload"] if m == "debug" else p]
            if m == "checkpoints" or p["type"] == "checkpoint"
        ]

    graph = asking_graph(ns)
    return {
        "asked": shown({"log": []}, "u1"),
        "answered": shown(ns.Command(resume="yes"), "u2"),
        "nothing to do": shown(None, "u3"),
    }
