"""Core conformance cases: building graphs, running them, streaming (no checkpointer).

No ``from __future__ import annotations`` here: state schemas are built inside cases
(their reducers come from ``ns``) and both implementations read their type hints.
"""

import asyncio
import operator
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple, NotRequired, Required, TypedDict

import httpx
import pydantic
import requests
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig

from .harness import NS, bump, case, graph_shape, invoke, normalize, run_sync_or_async, stream

Node = Callable[..., Any]


class LogState(TypedDict):
    log: Annotated[list, operator.add]


class XLogState(TypedDict):
    x: int
    log: Annotated[list, operator.add]


class ItemsState(TypedDict):
    items: list
    results: Annotated[list, operator.add]


class Packet(TypedDict):
    item: int


class Flaky(Exception):
    """Raised by nodes that fail on purpose (retried by the default retry policy)."""


# --------------------------------------------------------------------------- helpers


def note(name: str, **updates: Any) -> Node:
    """A node that appends its name to ``log`` and writes ``updates``."""

    def node(state: Any) -> dict[str, Any]:
        return {"log": [name], **updates}

    node.__name__ = name
    return node


def build(
    ns: NS, schema: Any, nodes: dict[str, Node], edges: Sequence[tuple[Any, str]], **compile_kw: Any
) -> Any:
    """Compile a graph of ``nodes`` and static ``edges``; "S"/"E" stand for START/END."""
    alias = {"S": ns.START, "E": ns.END}
    builder = ns.StateGraph(schema)
    for name, fn in nodes.items():
        builder.add_node(name, fn)
    for src, dst in edges:
        src = [alias.get(s, s) for s in src] if isinstance(src, list) else alias.get(src, src)
        builder.add_edge(src, alias.get(dst, dst))
    return builder.compile(**compile_kw)


def notes(*names: str) -> dict[str, Node]:
    return {n: note(n) for n in names}


def chain_edges(names: Sequence[str]) -> list[tuple[Any, str]]:
    """Edges START -> names[0] -> ... -> names[-1] -> END."""
    path = ["S", *names, "E"]
    return list(zip(path, path[1:], strict=False))


def chain(ns: NS, names: Sequence[str], schema: Any = LogState, **compile_kw: Any) -> Any:
    """A compiled chain of note nodes."""
    return build(ns, schema, notes(*names), chain_edges(names), **compile_kw)


def run_all(
    graph: Any, inp: Any, aio: bool = False, parallel: bool = False, **kw: Any
) -> dict[str, Any]:
    """The invoke result plus the values and updates streams of the same input.

    ``parallel=True`` for graphs with parallel tasks in a step: their updates may come
    in any order, so the parts of each step are compared in a canonical order.
    """
    return {
        "invoke": invoke(graph, inp, aio=aio, **kw),
        "values": stream(graph, inp, stream_mode="values", aio=aio, **kw),
        "updates": stream(graph, inp, aio=aio, unordered=parallel, **kw),
    }


def build_error(make: Callable[[], Any]) -> dict[str, Any]:
    """Run a build-and-compile step; the error class if it raises, else "ok"."""
    try:
        make()
    except Exception as exc:  # the error class is the observation
        return {"error": type(exc).__name__}
    return {"ok": True}


def routed(
    ns: NS, router: Node, path_map: Any, targets: Sequence[str], schema: Any = XLogState
) -> Any:
    """START -> "r" -> router(path_map) -> targets -> END."""
    builder = ns.StateGraph(schema).add_node("r", note("r")).add_edge(ns.START, "r")
    for t in targets:
        builder.add_node(t, note(t)).add_edge(t, ns.END)
    if path_map is None:
        builder.add_conditional_edges("r", router)
    else:
        builder.add_conditional_edges("r", router, path_map)
    return builder.compile()


def sender(ns: NS, target: str) -> Node:
    """A router that sends one packet per item to ``target``."""
    return lambda state: [ns.Send(target, {"item": i}) for i in state["items"]]


def fan_out(ns: NS, worker: Node, aio: bool = False, **add_kw: Any) -> dict[str, Any]:
    """START -Send per item-> worker; the results are folded by operator.add."""
    graph = (
        ns.StateGraph(ItemsState)
        .add_node("w", worker, **add_kw)
        .add_conditional_edges(ns.START, sender(ns, "w"))
        .compile()
    )
    return run_all(graph, {"items": [3, 1, 2], "results": []}, aio=aio, parallel=True)


def commander(
    ns: NS, goto: Callable[[NS], Any], extra_edges: Sequence[tuple[str, str]] = ()
) -> Any:
    """START -> "a" returning Command(update, goto(ns)); b, c, w are possible targets."""

    def a(state: Any) -> Any:
        return ns.Command(update={"log": ["a"]}, goto=goto(ns))

    def w(state: Any) -> dict[str, Any]:
        return {"log": [f"w{state['x']}"]}

    builder = (
        ns.StateGraph(XLogState)
        .add_node("a", a)
        .add_node("b", note("b"))
        .add_node("c", note("c"))
        .add_node("w", w)
        .add_edge(ns.START, "a")
    )
    for src, dst in extra_edges:
        builder.add_edge(src, dst)
    return builder.compile()


@case
def case_sync_node_runs_without_an_event_loop(ns: NS) -> Any:
    """A sync node's code may run async code with asyncio.run and call a graph's sync
    invoke, in the caller's thread: a sync call gives it no running loop."""
    inner = build(ns, XLogState, {"a": lambda state: {"x": state["x"] + 1}}, [("S", "a")])
    caller = threading.get_ident()
    seen: list[Any] = []

    async def fetch() -> int:
        await asyncio.sleep(0)
        return 40

    def node(state: Any) -> dict[str, Any]:
        seen.append(threading.get_ident() == caller)
        return {"x": asyncio.run(fetch()) + inner.invoke({"x": 1, "log": []})["x"]}

    graph = build(ns, XLogState, {"a": node}, [("S", "a")])
    return {"run": run_all(graph, {"x": 0, "log": []}), "in the caller's thread": seen}


@case
def case_a_compiled_node_copies(ns: NS) -> Any:
    """A compiled graph's node copies with some of its fields changed (LangGraph's
    `PregelNode.copy`); the copy runs the same code, the original keeps its fields."""
    graph = build(ns, XLogState, {"a": lambda state: {"x": state["x"] + 1}}, [("S", "a")])
    node = graph.nodes["a"]
    same, marked = node.copy({}), node.copy({"metadata": {"mark": 1}})
    return {
        "same runs": same.invoke({"x": 1, "log": []}),
        "marked": (marked.metadata, node.metadata),
        "kinds": type(same) is type(node) and same is not node,
        "unknown field": build_error(lambda: node.copy({"no_such_field": 1})),
    }


@case(aio=True)
def case_output_keys(ns: NS, aio: bool) -> Any:
    """A call's `output_keys` (a list, or one key as a str) shape its output, its values
    parts (only when one of the keys changed) and its updates (None for a node that wrote
    none of them); an unknown key is a ValueError."""

    class AB(TypedDict):
        a: int
        b: int

    graph = build(
        ns, AB, {"n": lambda s: {"b": 7}, "m": lambda s: {"a": 3}}, [("S", "n"), ("n", "m")]
    )
    seen: dict[str, Any] = {}
    for keys in (["a"], "a", ["b", "a"], "b"):
        for mode in ("values", "updates"):
            seen[f"{keys}-{mode}"] = stream(
                graph, {"a": 1}, stream_mode=mode, output_keys=keys, aio=aio
            )
        seen[f"{keys}-invoke"] = invoke(graph, {"a": 1}, output_keys=keys, aio=aio)
    seen["unknown"] = invoke(graph, {"a": 1}, output_keys="zz", aio=aio)
    return seen


class QTA(TypedDict):
    q: str
    tmp: str
    ans: str


class Ans(TypedDict):
    ans: str


def answering(ns: NS) -> Any:
    """START -> a -> b on QTA, output schema Ans: b writes no output key."""
    builder = ns.StateGraph(QTA, output_schema=Ans)
    builder.add_node("a", lambda s: {"tmp": "t", "ans": "x"})
    builder.add_node("b", lambda s: {"tmp": "u"})
    return builder.add_edge(ns.START, "a").add_edge("a", "b").compile()


@case(aio=True)
def case_invoke_in_other_modes_shows_the_output_channels(ns: NS, aio: bool) -> Any:
    """`invoke` in another stream mode than values (or several) shows the output
    channels only, in updates and values parts (values only when one changed); `stream`
    shows the whole state; a Pregel's invoke shows its output channels too."""
    graph = answering(ns)
    node = ns.NodeBuilder().subscribe_only("a").do(lambda x: x + "!").write_to("b", "c")
    pregel = ns.Pregel(
        nodes={"n": node},
        channels={"a": ns.EphemeralValue(str), "b": ns.LastValue(str), "c": ns.LastValue(str)},
        input_channels=["a"],
        output_channels=["c"],
    )
    return {
        "updates": invoke(graph, {"q": "1"}, stream_mode="updates", aio=aio),
        "both": invoke(graph, {"q": "1"}, stream_mode=["updates", "values"], aio=aio),
        "values": invoke(graph, {"q": "1"}, stream_mode=["values"], aio=aio),
        "stream": stream(graph, {"q": "1"}, stream_mode=["updates", "values"], aio=aio),
        "pregel": invoke(pregel, {"a": "x"}, stream_mode="updates", aio=aio),
        "pregel_stream": stream(pregel, {"a": "x"}, stream_mode="updates", aio=aio),
    }


@case(aio=True)
def case_subgraph_parts_show_its_output_channels(ns: NS, aio: bool) -> Any:
    """A subgraph's updates and values parts show its output schema's keys, as a graph
    invoked in a node shows them; its input alone makes no values part."""
    sub = answering(ns)
    graph = ns.StateGraph(QTA).add_node("sub", sub).add_edge(ns.START, "sub").compile()
    return stream(graph, {"q": "1"}, stream_mode=["updates", "values"], subgraphs=True, aio=aio)


# --------------------------------------------------------------------------- schemas


@case(aio=True)
def case_typeddict_state(ns: NS, aio: bool) -> Any:
    def inc(state: Any) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": [f"inc{state['x']}"]}

    graph = build(ns, XLogState, {"a": inc, "b": inc}, [("S", "a"), ("a", "b")])
    return run_all(graph, {"x": 1, "log": ["in"]}, aio=aio)


@dataclass
class DataState:
    x: int = 0
    tag: str = "none"
    log: Annotated[list, operator.add] = field(default_factory=list)


class ModelState(pydantic.BaseModel):
    x: int = 0
    tag: str = "none"
    log: Annotated[list, operator.add] = []


def attribute_state_case(ns: NS, schema: type, aio: bool) -> Any:
    seen: list[Any] = []

    def inc(state: Any) -> dict[str, Any]:
        seen.append([type(state).__name__, state.x, state.tag, list(state.log)])
        return {"x": state.x + 1, "log": [state.tag]}

    graph = build(ns, schema, {"a": inc, "b": inc}, [("S", "a"), ("a", "b")])
    out = run_all(graph, {"x": 5}, aio=aio)
    return {"run": out, "seen": seen}


@case(aio=True)
def case_dataclass_state(ns: NS, aio: bool) -> Any:
    return attribute_state_case(ns, DataState, aio)


@case(aio=True)
def case_pydantic_state(ns: NS, aio: bool) -> Any:
    return attribute_state_case(ns, ModelState, aio)


@case
def case_pydantic_input_validation(ns: NS) -> Any:
    graph = build(ns, ModelState, notes("a"), [("S", "a")])
    return {"bad": invoke(graph, {"x": "not a number"}), "coerced": invoke(graph, {"x": "7"})}


@case
def case_default_values_seen_by_nodes(ns: NS) -> Any:
    class S(TypedDict):
        x: int
        y: str
        total: Annotated[int, operator.add]
        log: Annotated[list, operator.add]

    seen: list[Any] = []

    def look(state: Any) -> dict[str, Any]:
        seen.append(sorted(state.items()))
        return {"log": ["a"]}

    graph = build(ns, S, {"a": look}, [("S", "a")])
    return {"result": invoke(graph, {"x": 1}), "seen": seen}


# --------------------------------------------------------------------------- reducers


@case
def case_reducer_operator_add(ns: NS) -> Any:
    class S(TypedDict):
        n: Annotated[int, operator.add]
        words: Annotated[list, operator.add]

    def a(state: Any) -> dict[str, Any]:
        return {"n": 10, "words": ["a"]}

    graph = build(ns, S, {"a": a, "b": a}, [("S", "a"), ("a", "b")])
    return run_all(graph, {"n": 1, "words": ["in"]})


@case
def case_reducer_is_only_the_last_annotated_item(ns: NS) -> Any:
    """A reducer followed by more metadata (a doc string, a pydantic `Field`) is no
    reducer: the key keeps the last value written."""

    class S(TypedDict):
        a: Annotated[list, operator.add, "the a list"]
        b: Annotated[list, operator.add, pydantic.Field(description="b list")]
        c: Annotated[list, "doc", operator.add]
        d: Annotated[NotRequired[Annotated[list, operator.add]], "doc"]

    def write(state: Any) -> dict[str, Any]:
        return {"a": [1], "b": [1], "c": [1], "d": [1]}

    graph = build(ns, S, {"w": write}, [("S", "w")])
    kinds = {key: type(graph.channels[key]).__name__ for key in "abcd"}
    return {"kinds": kinds, **run_all(graph, {"a": [0], "b": [0], "c": [0], "d": [0]})}


def merge_dicts(left: dict, right: dict) -> dict:
    return {**left, **right}


def keep_max(left: int | None, right: int) -> int:
    return right if left is None else max(left, right)


@case
def case_reducer_custom_functions(ns: NS) -> Any:
    class S(TypedDict):
        best: Annotated[int, keep_max]
        tags: Annotated[dict, merge_dicts]

    def writer(value: int, key: str) -> Node:
        return lambda state: {"best": value, "tags": {key: value, "shared": key}}

    graph = build(
        ns,
        S,
        {"a": writer(3, "a"), "b": writer(9, "b"), "c": writer(4, "c")},
        [("S", "a"), ("S", "b"), ("S", "c")],
    )
    return run_all(graph, {"best": 5, "tags": {"in": 1}}, parallel=True)


@case
def case_reducers_under_required_and_not_required(ns: NS) -> Any:
    """A reducer keeps folding when the key is wrapped in `Required` or `NotRequired`
    (outside or inside `Annotated`); a compiled graph's `channels` show it."""

    class S(TypedDict, total=False):
        a: Required[Annotated[list, operator.add]]
        b: NotRequired[Annotated[list, operator.add]]
        c: Annotated[NotRequired[list], operator.add]
        e: NotRequired[Annotated[int, ns.BinaryOperatorAggregate(int, operator.add)]]

    def writer(value: int) -> Node:
        return lambda state: {"a": [value], "b": [value], "c": [value], "e": 1}

    graph = build(ns, S, {"x": writer(1), "y": writer(2)}, [("S", "x"), ("S", "y")])
    kinds = {key: type(graph.channels[key]).__name__ for key in "abce"}
    return {"kinds": kinds, **run_all(graph, {"a": [0], "b": [0], "c": [0], "e": 5}, parallel=True)}


@case
def case_a_declared_channel_starts_empty_in_every_run(ns: NS) -> Any:
    """A channel declared in the state is the template of each run's own: a reducer that
    extends the value in place never reaches the template or another run."""

    class S(TypedDict):
        log: Annotated[list, ns.BinaryOperatorAggregate(list, operator.iadd)]

    graph = build(ns, S, {"a": lambda state: {"log": ["x"]}}, [("S", "a")])
    return [invoke(graph, {"log": []}), invoke(graph, {"log": ["in"]}), invoke(graph, {})]


@case
def case_parallel_writers_reducer_order(ns: NS) -> Any:
    def slow(name: str, delay: float) -> Node:
        def node(state: Any) -> dict[str, Any]:
            time.sleep(delay)
            return {"log": [name]}

        return node

    builder = ns.StateGraph(LogState)
    for name, delay in (("b", 0.0), ("zeta", 0.01), ("a", 0.02), ("c", 0.0)):
        builder.add_node(name, slow(name, delay))
    for name in ("c", "a", "zeta", "b"):
        builder.add_edge(ns.START, name)
    return invoke(builder.compile(), {"log": []})


@case
def case_last_value_two_writes_in_one_step(ns: NS) -> Any:
    graph = build(
        ns, XLogState, {"a": note("a", x=1), "b": note("b", x=2)}, [("S", "a"), ("S", "b")]
    )
    return {"invoke": invoke(graph, {"x": 0}), "stream": stream(graph, {"x": 0}, unordered=True)}


@case
def case_node_returns_non_dict(ns: NS) -> Any:
    graph = build(ns, XLogState, {"a": lambda state: 5}, [("S", "a")])
    return {"invoke": invoke(graph, {"x": 0}), "stream": stream(graph, {"x": 0})}


class XYPair(NamedTuple):
    x: int
    log: list


class HasX:
    """A plain class that declares its keys: an update read by attribute."""

    x: int

    def __init__(self, x: int) -> None:
        self.x = x


@dataclass
class JustX:
    x: int


@case
def case_what_a_node_may_return(ns: NS) -> Any:
    """A node's update is a dict, an object of an annotated class (read by attribute),
    a Command or a list of Commands and dicts, or None; pairs, bare values and empty
    lists are refused, as input and as update_state's values too. A Command's update may
    be pairs, and one of another kind is dropped."""

    def first_line(run: Callable[[], Any]) -> Any:
        try:
            return run()
        except Exception as exc:  # the refusal is the observation
            return [type(exc).__name__, str(exc).splitlines()[0]]

    returns = {
        "pairs": [("x", 1)],
        "tuple_of_pairs": (("x", 1),),
        "empty_list": [],
        "str": "x",
        "dataclass": JustX(3),
        "annotated_class": HasX(7),
        "named_tuple": XYPair(4, ["nt"]),
        "none": None,
        "command_pairs": ns.Command(update=[("x", 9)]),
        "command_value": ns.Command(update=5),
        "commands_and_dict": [ns.Command(update={"x": 2}), {"log": ["d"]}],
        "commands_and_pair": [ns.Command(update={"x": 2}), ("log", ["p"])],
        "commands_and_none": [ns.Command(update={"x": 2}), None],
    }
    seen: dict[str, Any] = {}
    for name, value in returns.items():
        graph = build(ns, XLogState, {"a": lambda state, v=value: v}, [("S", "a")])
        seen[name] = first_line(lambda graph=graph: graph.invoke({"x": 0, "log": []}))
    plain = build(ns, XLogState, {"a": lambda state: {}}, [("S", "a")])
    for name, value in (
        ("pairs", [("x", 1)]),
        ("dataclass", JustX(5)),
        ("command_pairs", ns.Command(update=[("x", 6)])),
    ):
        seen[f"input_{name}"] = first_line(lambda value=value: plain.invoke(value))
    saved = build(
        ns, XLogState, {"a": lambda state: {}}, [("S", "a")], checkpointer=ns.InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": "t"}}
    saved.invoke({"x": 1, "log": []}, cfg)
    for name, value in (("pairs", [("x", 2)]), ("value", 5), ("dataclass", JustX(3))):
        seen[f"update_state_{name}"] = first_line(
            lambda value=value: saved.update_state(cfg, value) and saved.get_state(cfg).values
        )
    seen["resume_with_a_value_update"] = first_line(lambda: saved.invoke(ns.Command(update=5), cfg))
    return seen


@case
def case_node_writes_unknown_key(ns: NS) -> Any:
    graph = build(ns, XLogState, {"a": lambda state: {"nope": 1, "x": 2}}, [("S", "a")])
    return invoke(graph, {"x": 0})


@case
def case_reducer_wrong_arity(ns: NS) -> Any:
    class S(TypedDict):
        x: Annotated[int, lambda only: only]

    return build_error(lambda: build(ns, S, {"a": lambda s: {"x": 1}}, [("S", "a")]))


# --------------------------------------------------------------------------- structure


@case(aio=True)
def case_sequential_chain(ns: NS, aio: bool) -> Any:
    return run_all(chain(ns, ["one", "two", "three"]), {"log": ["start"]}, aio=aio)


@case
def case_builder_methods_chain(ns: NS) -> Any:
    builder = ns.StateGraph(LogState)
    returned = [
        builder.add_node("a", note("a")) is builder,
        builder.add_node("b", note("b")) is builder,
        builder.add_edge(ns.START, "a") is builder,
        builder.add_conditional_edges("a", lambda s: "b", ["b"]) is builder,
        builder.add_edge("b", ns.END) is builder,
    ]
    return {"returned_builder": returned, "result": invoke(builder.compile(), {"log": []})}


@case
def case_entry_and_finish_point(ns: NS) -> Any:
    builder = ns.StateGraph(LogState).add_node("a", note("a")).add_node("b", note("b"))
    builder.set_entry_point("a")
    builder.add_edge("a", "b")
    builder.set_finish_point("b")
    return invoke(builder.compile(), {"log": []})


@case
def case_node_name_inferred_from_function(ns: NS) -> Any:
    def first_step(state: Any) -> dict[str, Any]:
        return {"log": ["ran"]}

    graph = ns.StateGraph(LogState).add_node(first_step).add_edge(ns.START, "first_step")
    return stream(graph.compile(), {"log": []})


@case
def case_node_name_inferred_from_lambdas_and_objects(ns: NS) -> Any:
    class Named:
        """A callable whose `name` attribute is not the node's name (its class's is)."""

        name = "own name"

        def __call__(self, state: Any) -> dict[str, Any]:
            return {"log": ["object"]}

    graph = (
        ns.StateGraph(LogState)
        .add_node(lambda state: {"log": ["lambda"]})
        .add_node(Named())
        .add_edge(ns.START, "<lambda>")
        .add_edge("<lambda>", "Named")
    )
    return {"nodes": list(graph.nodes), "run": stream(graph.compile(), {"log": []})}


@case
def case_join_waits_for_slowest_branch(ns: NS) -> Any:
    graph = build(
        ns,
        LogState,
        notes("a", "b1", "b2", "c"),
        [("S", "a"), ("S", "b1"), ("b1", "b2"), (["a", "b2"], "c"), ("c", "E")],
    )
    return run_all(graph, {"log": []}, parallel=True)


@case
def case_fan_in_without_join(ns: NS) -> Any:
    graph = build(
        ns,
        LogState,
        notes("a", "b1", "b2", "c"),
        [("S", "a"), ("S", "b1"), ("b1", "b2"), ("a", "c"), ("b2", "c")],
    )
    return run_all(graph, {"log": []}, parallel=True)


@case
def case_fan_out_same_step_fan_in(ns: NS) -> Any:
    graph = build(
        ns,
        LogState,
        notes("a", "b", "c", "d"),
        [("S", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    )
    return run_all(graph, {"log": []}, parallel=True)


@case
def case_dead_end_node_finishes(ns: NS) -> Any:
    graph = build(ns, LogState, notes("a", "b"), [("S", "a"), ("S", "b"), ("b", "E")])
    return run_all(graph, {"log": []}, parallel=True)


# --------------------------------------------------------------------------- conditional edges


def by_x(mapping: dict[int, Any]) -> Node:
    return lambda state: mapping[state["x"]]


@case
def case_conditional_list_path_map(ns: NS) -> Any:
    graph = routed(ns, by_x({1: "b", 2: "c"}), ["b", "c"], ["b", "c"])
    return [run_all(graph, {"x": x, "log": []}) for x in (1, 2)]


@case
def case_conditional_dict_path_map(ns: NS) -> Any:
    graph = routed(
        ns,
        by_x({1: "left", 2: "right", 3: "stop"}),
        {"left": "b", "right": "c", "stop": ns.END},
        ["b", "c"],
    )
    return [run_all(graph, {"x": x, "log": []}) for x in (1, 2, 3)]


@case
def case_conditional_no_path_map(ns: NS) -> Any:
    graph = routed(ns, by_x({1: "b", 2: "c"}), None, ["b", "c"])
    return [run_all(graph, {"x": x, "log": []}) for x in (1, 2)]


@case
def case_conditional_returns_end(ns: NS) -> Any:
    graph = routed(ns, lambda state: ns.END, None, ["b"])
    return run_all(graph, {"x": 0, "log": []})


@case
def case_conditional_returns_list_of_nodes(ns: NS) -> Any:
    graph = routed(ns, lambda state: ["c", "b"], None, ["b", "c", "d"])
    return run_all(graph, {"x": 0, "log": []}, parallel=True)


@case
def case_conditional_unknown_destination(ns: NS) -> Any:
    graph = routed(ns, lambda state: "nowhere", None, ["b"])
    return invoke(graph, {"x": 0, "log": []})


def raised(call: Callable[[], Any]) -> Any:
    """What `call` returns, or the class and text of what it raises."""
    try:
        return call()
    except Exception as exc:  # the error and its words are the observation
        return {"error": type(exc).__name__, "text": str(exc)}


@case
def case_conditional_key_missing_from_path_map(ns: NS) -> Any:
    graph = routed(ns, lambda state: "k", {"j": ns.END}, [])
    return raised(lambda: graph.invoke({"x": 0, "log": []}))


async def route_to_b(state: Any) -> str:
    return "b"


@case
def case_async_router_in_sync_calls(ns: NS) -> Any:
    """An async router is refused by every sync call that would run it (and so is an
    async node); the async calls run it."""

    def graph(source: Any) -> Any:
        builder = ns.StateGraph(XLogState).add_node("a", note("a")).add_node("b", note("b"))
        if source == ns.START:
            builder.add_conditional_edges(ns.START, route_to_b, ["b"])
        else:
            builder.add_edge(ns.START, "a").add_conditional_edges("a", route_to_b, ["b"])
        return builder.compile(checkpointer=ns.InMemorySaver())

    async def anode(state: Any) -> dict[str, Any]:
        return {"log": ["async"]}

    only_async = ns.StateGraph(XLogState).add_node("n", anode).add_edge(ns.START, "n").compile()
    inp = {"x": 0, "log": []}
    cfg = {"configurable": {"thread_id": "t"}}
    after_a, at_start = graph("a"), graph(ns.START)
    return {
        "invoke": raised(lambda: after_a.invoke(inp, cfg)),
        "stream": raised(lambda: list(after_a.stream(inp, cfg))),
        "from start": raised(lambda: at_start.invoke(inp, cfg)),
        "update_state": raised(lambda: graph("a").update_state(cfg, {"x": 1}, as_node="a")),
        "async node": raised(lambda: only_async.invoke(inp)),
        "ainvoke": asyncio.run(graph("a").ainvoke(inp, cfg)),
    }


@case
def case_conditional_from_start(ns: NS) -> Any:
    graph = (
        ns.StateGraph(XLogState)
        .add_node("b", note("b"))
        .add_node("c", note("c"))
        .add_conditional_edges(ns.START, by_x({1: "b", 2: "c"}))
        .compile()
    )
    return [invoke(graph, {"x": x, "log": []}) for x in (1, 2)]


@case
def case_conditional_returns_send_list(ns: NS) -> Any:
    def worker(state: Any) -> dict[str, Any]:
        return {"log": [f"w{state['x']}"]}

    builder = ns.StateGraph(XLogState).add_node("r", note("r")).add_node("w", worker)
    builder.add_edge(ns.START, "r")
    builder.add_conditional_edges(
        "r", lambda s: [ns.Send("w", {"x": i, "log": []}) for i in (2, 1)]
    )
    return run_all(builder.compile(), {"x": 0, "log": []}, parallel=True)


@case
def case_conditional_loop_until_done(ns: NS) -> Any:
    def step(state: Any) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": [state["x"]]}

    builder = ns.StateGraph(XLogState).add_node("step", step).add_edge(ns.START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["x"] < 4 else ns.END)
    return run_all(builder.compile(), {"x": 0, "log": []})


@case(aio=True)
def case_routers_see_what_the_node_returned_beyond_the_state(ns: NS, aio: bool) -> Any:
    """A node's extra keys reach its routers, not the state; a router that reads the
    state as a schema class of its own sees only the state."""
    seen: list[Any] = []

    def node(state: Any) -> dict[str, Any]:
        return {"log": ["a"], "extra": "hint"}

    def as_dict(state: dict) -> str:  # type: ignore[type-arg]
        seen.append(["dict", sorted(state)])
        return ns.END

    def plain(state):  # type: ignore[no-untyped-def]
        seen.append(["plain", sorted(state)])
        return ns.END

    def typed(state: LogState) -> str:
        seen.append(["typed", sorted(state)])
        return ns.END

    graph = ns.StateGraph(LogState).add_node("a", node).add_edge(ns.START, "a")
    for router in (as_dict, plain, typed):
        graph.add_conditional_edges("a", router)
    result = invoke(graph.compile(), {"log": []}, aio=aio)
    return {"result": result, "seen": sorted(seen)}


# --------------------------------------------------------------------------- Send


@case(aio=True)
def case_send_fan_out(ns: NS, aio: bool) -> Any:
    seen: list[Any] = []
    lock = threading.Lock()

    def worker(state: Any) -> dict[str, Any]:
        with lock:
            seen.append(sorted(state.items()))
        return {"results": [state["item"] * 10]}

    out = fan_out(ns, worker, aio=aio)
    return {"run": out, "seen": sorted(seen)}


@case
def case_send_to_node_with_input_schema(ns: NS) -> Any:
    seen: list[Any] = []

    def worker(state: Any) -> dict[str, Any]:
        seen.append(sorted(state))
        return {"results": [state["item"] + 100]}

    out = fan_out(ns, worker, input_schema=Packet)
    return {"run": out, "seen": sorted(seen)}


@case
def case_node_input_schema_from_annotation(ns: NS) -> Any:
    seen: list[Any] = []

    def worker(state: Packet) -> dict[str, Any]:
        seen.append(sorted(state))
        return {"results": [-state["item"]]}

    return {"run": fan_out(ns, worker), "seen": sorted(seen)}


@case
def case_send_then_static_edge_after_worker(ns: NS) -> Any:
    graph = (
        ns.StateGraph(ItemsState)
        .add_node("w", lambda s: {"results": [s["item"]]})
        .add_node("done", lambda s: {"results": [sorted(s["results"])]})
        .add_conditional_edges(ns.START, sender(ns, "w"))
        .add_edge("w", "done")
        .compile()
    )
    return run_all(graph, {"items": [1, 2], "results": []}, parallel=True)


# --------------------------------------------------------------------------- Command


def case_command(
    name: str, goto: Callable[[NS], Any], extra_edges: Sequence[tuple[str, str]] = ()
) -> None:
    """Register a case whose node "a" returns ``Command(goto=goto(ns))``."""

    def run(ns: NS) -> Any:
        return run_all(commander(ns, goto, extra_edges), {"x": 7, "log": []}, parallel=True)

    run.__name__ = name
    case(run)


case_command("command_goto_node", lambda ns: "b")
case_command("command_goto_list", lambda ns: ["c", "b"])
case_command("command_goto_send", lambda ns: ns.Send("w", {"x": 1, "log": []}))
case_command(
    "command_goto_send_list", lambda ns: [ns.Send("w", {"x": i, "log": []}) for i in (3, 2)]
)
case_command("command_goto_end", lambda ns: ns.END)
case_command("command_goto_plus_static_edge", lambda ns: "c", [("a", "b")])
case_command("command_update_only_follows_edges", lambda ns: (), [("a", "b")])


@case
def case_command_from_send_target(ns: NS) -> Any:
    def worker(state: Any) -> Any:
        return ns.Command(
            update={"results": [state["item"]]}, goto="tail" if state["item"] == 2 else ns.END
        )

    graph = (
        ns.StateGraph(ItemsState)
        .add_node("w", worker)
        .add_node("tail", lambda s: {"results": ["tail"]})
        .add_conditional_edges(ns.START, sender(ns, "w"))
        .compile()
    )
    return run_all(graph, {"items": [1, 2, 3], "results": []}, parallel=True)


# --------------------------------------------------------------------------- recursion limit


@case
def case_recursion_limit_boundary(ns: NS) -> Any:
    graph = chain(ns, ["a", "b", "c"])
    return {
        str(limit): invoke(graph, {"log": []}, {"recursion_limit": limit}) for limit in (1, 2, 3, 4)
    }


@case(aio=True)
def case_recursion_limit_loop_stream(ns: NS, aio: bool) -> Any:
    builder = ns.StateGraph(LogState).add_node("spin", note("spin"))
    builder.add_edge(ns.START, "spin").add_conditional_edges("spin", lambda s: "spin")
    return stream(builder.compile(), {"log": []}, {"recursion_limit": 4}, aio=aio)


@case
def case_recursion_limit_default(ns: NS) -> Any:
    def step(state: Any) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    builder = ns.StateGraph(XLogState).add_node("step", step).add_edge(ns.START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["x"] < s["log"][0] else ns.END)
    graph = builder.compile()
    return {str(n): invoke(graph, {"x": 0, "log": [n]}) for n in (24, 25, 26, 60)}


@case(aio=True)
def case_recursion_limit_in_a_node_config(ns: NS, aio: bool) -> Any:
    """A node's config has `recursion_limit` only when the caller set one (a call's or
    `with_config`'s); a graph the node invokes inherits it."""
    seen: list[Any] = []

    def look(tag: str) -> Node:
        def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            seen.append([tag, config.get("recursion_limit", "absent")])
            seen.append([tag, ns.get_config().get("recursion_limit", "absent")])
            return {"log": [tag]}

        return node

    inner = build(ns, LogState, {"inner": look("inner")}, [("S", "inner")])

    def calls_inner(state: Any) -> dict[str, Any]:
        return {"log": inner.invoke({"log": []})["log"]}

    graph = build(ns, LogState, {"a": look("a"), "b": calls_inner}, [("S", "a"), ("a", "b")])
    results = {
        "unset": invoke(graph, {"log": []}, aio=aio),
        "given": invoke(graph, {"log": []}, {"recursion_limit": 5}, aio=aio),
        "with_config": invoke(graph.with_config(recursion_limit=9), {"log": []}, aio=aio),
    }
    return {"results": results, "seen": seen}


# --------------------------------------------------------------------------- subgraphs


def sub_chain(ns: NS, prefix: str, schema: Any = XLogState) -> Any:
    return chain(ns, [f"{prefix}1", f"{prefix}2"], schema)


@case(aio=True)
def case_subgraph_as_node(ns: NS, aio: bool) -> Any:
    parent = build(
        ns,
        XLogState,
        {"before": note("before"), "sub": sub_chain(ns, "s"), "after": note("after")},
        [("S", "before"), ("before", "sub"), ("sub", "after")],
    )
    return run_all(parent, {"x": 1, "log": []}, aio=aio)


@case(aio=True)
def case_subgraph_stream_namespaces(ns: NS, aio: bool) -> Any:
    parent = build(
        ns,
        XLogState,
        {"sub": sub_chain(ns, "s"), "after": note("after")},
        [("S", "sub"), ("sub", "after")],
    )
    return {
        mode: stream(parent, {"x": 1, "log": []}, stream_mode=mode, subgraphs=True, aio=aio)
        for mode in ("updates", "values")
    }


@case
def case_subgraph_partial_shared_keys(ns: NS) -> Any:
    class Inner(TypedDict):
        x: int
        private: str

    def inner(state: Any) -> dict[str, Any]:
        return {"x": state["x"] * 2, "private": "hidden"}

    sub = build(ns, Inner, {"inner": inner}, [("S", "inner")])
    parent = build(
        ns, XLogState, {"sub": sub, "after": note("after")}, [("S", "sub"), ("sub", "after")]
    )
    return {
        "invoke": invoke(parent, {"x": 3, "log": []}),
        "stream": stream(parent, {"x": 3, "log": []}, subgraphs=True),
    }


@case
def case_subgraph_nested_two_levels(ns: NS) -> Any:
    inner = sub_chain(ns, "i")
    middle = build(ns, XLogState, {"m": note("m"), "inner": inner}, [("S", "m"), ("m", "inner")])
    outer = build(
        ns, XLogState, {"middle": middle, "o": note("o")}, [("S", "middle"), ("middle", "o")]
    )
    return {
        "invoke": invoke(outer, {"x": 0, "log": []}),
        "stream": stream(
            outer, {"x": 0, "log": []}, stream_mode=["updates", "values"], subgraphs=True
        ),
        "no_subgraphs": stream(outer, {"x": 0, "log": []}, stream_mode="updates"),
    }


@case
def case_subgraph_called_inside_node(ns: NS) -> Any:
    sub = sub_chain(ns, "s")

    def call_sub(state: Any) -> dict[str, Any]:
        out = sub.invoke({"x": state["x"], "log": []})
        return {"log": [len(out["log"])]}

    parent = build(ns, XLogState, {"call": call_sub}, [("S", "call")])
    return stream(parent, {"x": 0, "log": []}, subgraphs=True)


@case
def case_subgraph_custom_stream_writer(ns: NS) -> Any:
    def emit(state: Any) -> dict[str, Any]:
        ns.get_stream_writer()({"node": "emit", "x": state["x"]})
        return {"log": ["emit"]}

    sub = build(ns, XLogState, {"emit": emit}, [("S", "emit")])
    parent = build(ns, XLogState, {"sub": sub}, [("S", "sub")])
    return {
        "subgraphs": stream(parent, {"x": 4, "log": []}, stream_mode="custom", subgraphs=True),
        "flat": stream(parent, {"x": 4, "log": []}, stream_mode="custom"),
    }


# --------------------------------------------------------------------------- retry


def retry_graph(
    ns: NS, calls: dict[str, int], fail: Callable[[int], Exception | None], **policy: Any
) -> Any:
    """START -> flaky (with a retry policy) and steady in one step -> END."""

    def flaky(state: Any) -> dict[str, Any]:
        exc = fail(bump(calls, "flaky"))
        if exc is not None:
            raise exc
        return {"log": ["flaky"]}

    def steady(state: Any) -> dict[str, Any]:
        bump(calls, "steady")
        return {"log": ["steady"]}

    policy = {"initial_interval": 0.0, "jitter": False, **policy}
    return (
        ns.StateGraph(LogState)
        .add_node("flaky", flaky, retry_policy=ns.RetryPolicy(**policy))
        .add_node("steady", steady)
        .add_edge(ns.START, "flaky")
        .add_edge(ns.START, "steady")
        .compile()
    )


def retry_case(
    ns: NS, fail: Callable[[int], Exception | None], aio: bool = False, **policy: Any
) -> Any:
    calls: dict[str, int] = {}
    result = invoke(retry_graph(ns, calls, fail, **policy), {"log": []}, aio=aio)
    return {"result": result, "calls": calls}


@case(aio=True)
def case_retry_fails_twice_then_succeeds(ns: NS, aio: bool) -> Any:
    return retry_case(
        ns, lambda n: Flaky(f"attempt {n}") if n <= 2 else None, aio=aio, max_attempts=3
    )


@case
def case_retry_on_filter(ns: NS) -> Any:
    return {
        "not_matching": retry_case(ns, lambda n: KeyError("k"), retry_on=Flaky),
        "matching": retry_case(ns, lambda n: Flaky() if n < 2 else None, retry_on=Flaky),
        "tuple": retry_case(
            ns, lambda n: KeyError() if n < 3 else None, retry_on=(Flaky, KeyError), max_attempts=3
        ),
        "callable": retry_case(
            ns, lambda n: Flaky(str(n)) if n < 3 else None, retry_on=lambda e: str(e) == "1"
        ),
    }


@case
def case_retry_max_attempts_exhausted(ns: NS) -> Any:
    return retry_case(ns, lambda n: Flaky("always"), max_attempts=2)


@case
def case_retry_default_retry_on(ns: NS) -> Any:
    return {
        "value_error": retry_case(ns, lambda n: ValueError("v") if n < 2 else None),
        "custom_error": retry_case(ns, lambda n: Flaky("c") if n < 2 else None),
        "connection_error": retry_case(ns, lambda n: ConnectionError() if n < 2 else None),
    }


class Answered:
    """What an error's `response` may be: anything with a status code."""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class AnsweredValueError(ValueError):
    def __init__(self, status_code: int) -> None:
        super().__init__(status_code)
        self.response = Answered(status_code)


def httpx_error(status: int) -> Exception:
    request = httpx.Request("GET", "http://example.invalid")
    response = httpx.Response(status, request=request)
    return httpx.HTTPStatusError(str(status), request=request, response=response)


def requests_error(status: int | None) -> Exception:
    if status is None:
        return requests.HTTPError("no response")
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError(str(status), response=response)


@case
def case_retry_default_retry_on_http_errors(ns: NS) -> Any:
    """Which HTTP errors `RetryPolicy()` retries: httpx's for a 5xx only; requests' for
    a 5xx or when its response is falsy (none, or an error status); nothing else that
    merely carries a response."""
    kinds: dict[str, Callable[[], Exception]] = {
        "httpx 404": lambda: httpx_error(404),
        "httpx 503": lambda: httpx_error(503),
        "httpx 600": lambda: httpx_error(600),
        "requests none": lambda: requests_error(None),
        "requests 200": lambda: requests_error(200),
        "requests 404": lambda: requests_error(404),
        "requests 502": lambda: requests_error(502),
        "value error with a 503": lambda: AnsweredValueError(503),
    }
    return {
        label: retry_case(ns, lambda n, make=make: make() if n < 2 else None)
        for label, make in kinds.items()
    }


@case
def case_node_error_propagates_with_class(ns: NS) -> Any:
    def boom(state: Any) -> dict[str, Any]:
        raise ZeroDivisionError("boom")

    graph = build(ns, LogState, {"a": note("a"), "boom": boom}, [("S", "a"), ("a", "boom")])
    return {"invoke": invoke(graph, {"log": []}), "stream": stream(graph, {"log": []})}


# --------------------------------------------------------------------------- stream modes


def two_step_graph(ns: NS) -> Any:
    """START -> a -> (b, c) -> END with a custom stream write in each node."""

    def emit(name: str) -> Node:
        def node(state: Any) -> dict[str, Any]:
            write = ns.get_stream_writer()
            write({"node": name, "seen": len(state["log"])})
            write({"node": name, "done": True})
            return {"log": [name]}

        return node

    return build(ns, LogState, {n: emit(n) for n in "abc"}, [("S", "a"), ("a", "b"), ("a", "c")])


def project(parts: list[Any], keep: Callable[[Any], Any]) -> list[Any]:
    return [keep(p) for p in parts]


@case(aio=True)
def case_stream_values(ns: NS, aio: bool) -> Any:
    return stream(two_step_graph(ns), {"log": ["in"]}, stream_mode="values", aio=aio)


@case(aio=True)
def case_stream_updates_default(ns: NS, aio: bool) -> Any:
    return stream(two_step_graph(ns), {"log": []}, aio=aio, unordered=True)


@case(aio=True)
def case_stream_custom(ns: NS, aio: bool) -> Any:
    return stream(two_step_graph(ns), {"log": []}, stream_mode="custom", aio=aio, unordered=True)


def without_triggers(chunk: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in chunk.items() if k != "triggers"}


@case(aio=True)
def case_stream_tasks(ns: NS, aio: bool) -> Any:
    out = stream(two_step_graph(ns), {"log": []}, stream_mode="tasks", aio=aio, unordered=True)
    return {**out, "parts": project(out["parts"], without_triggers)}


@case
def case_stream_tasks_triggers(ns: NS) -> Any:
    out = stream(two_step_graph(ns), {"log": []}, stream_mode="tasks", unordered=True)
    return [[p["name"], p.get("triggers")] for p in out["parts"] if "input" in p]


def debug_summary(part: dict[str, Any]) -> list[Any]:
    payload = part["payload"]
    names = payload.get("name", payload.get("next"))
    return [part["type"], part["step"], names]


@case(aio=True)
def case_stream_debug(ns: NS, aio: bool) -> Any:
    out = stream(two_step_graph(ns), {"log": []}, stream_mode="debug", aio=aio, unordered=True)
    return {**out, "parts": project(out["parts"], debug_summary)}


@case(aio=True)
def case_stream_list_of_modes(ns: NS, aio: bool) -> Any:
    return stream(
        two_step_graph(ns),
        {"log": []},
        stream_mode=["updates", "custom", "values"],
        aio=aio,
        unordered=True,
    )


@case
def case_stream_messages_from_node_update(ns: NS) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"echo {len(state['messages'])}")]}

    def note_tool(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content="second", name="bot")]}

    graph = build(
        ns,
        ns.MessagesState,
        {"reply": reply, "tool": note_tool},
        [("S", "reply"), ("reply", "tool")],
    )
    out = stream(graph, {"messages": [{"role": "user", "content": "hi"}]}, stream_mode="messages")

    def keep(part: Any) -> Any:
        msg, meta = part
        return [msg, {k: meta.get(k) for k in ("langgraph_node", "langgraph_step")}]

    return {**out, "parts": project(out["parts"], keep)}


# --------------------------------------------------------------------------- input/output


@case
def case_input_with_extra_keys(ns: NS) -> Any:
    graph = chain(ns, ["a"], XLogState)
    return run_all(graph, {"x": 1, "log": [], "extra": "ignored?"})


@case
def case_input_with_missing_keys(ns: NS) -> Any:
    seen: list[Any] = []

    def look(state: Any) -> dict[str, Any]:
        seen.append(sorted(state))
        return {"log": ["a"]}

    graph = build(ns, XLogState, {"a": look}, [("S", "a")])
    return {"run": run_all(graph, {"log": ["only log"]}), "seen": seen}


@case
def case_input_empty_dict(ns: NS) -> Any:
    return run_all(chain(ns, ["a"], XLogState), {})


@case
def case_nodes_returning_none(ns: NS) -> Any:
    graph = build(ns, XLogState, {"a": lambda s: None, "b": note("b")}, [("S", "a"), ("a", "b")])
    return run_all(graph, {"x": 1, "log": []})


@case
def case_input_and_output_schemas(ns: NS) -> Any:
    class In(TypedDict):
        question: str

    class Out(TypedDict):
        answer: str

    class Full(TypedDict):
        question: str
        answer: str
        scratch: str

    def think(state: Any) -> dict[str, Any]:
        return {"scratch": state["question"].upper()}

    def answer(state: Any) -> dict[str, Any]:
        return {"answer": state["scratch"] + "!"}

    builder = ns.StateGraph(Full, input_schema=In, output_schema=Out)
    builder.add_node("think", think).add_node("answer", answer)
    builder.add_edge(ns.START, "think").add_edge("think", "answer")
    return run_all(builder.compile(), {"question": "why"})


@case
def case_node_receives_config(ns: NS) -> Any:
    # `config` stays unannotated: LangGraph injects it only when untyped or RunnableConfig.
    def look(state: Any, config) -> dict[str, Any]:
        return {"log": [config["configurable"].get("user"), config.get("recursion_limit")]}

    graph = build(ns, LogState, {"a": look}, [("S", "a")])
    return invoke(graph, {"log": []}, {"configurable": {"user": "u1"}, "recursion_limit": 9})


# --------------------------------------------------------------------------- async


async def async_note_impl(name: str, state: Any) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"log": [name]}


def async_note(name: str) -> Node:
    async def node(state: Any) -> dict[str, Any]:
        return await async_note_impl(name, state)

    return node


@case
def case_async_nodes(ns: NS) -> Any:
    graph = build(
        ns,
        LogState,
        {n: async_note(n) for n in ("a", "b", "c")},
        [("S", "a"), ("a", "b"), ("a", "c")],
    )
    return run_all(graph, {"log": []}, aio=True, parallel=True)


@case
def case_mixed_sync_and_async_nodes(ns: NS) -> Any:
    graph = build(
        ns,
        LogState,
        {"a": async_note("a"), "b": note("b"), "c": async_note("c")},
        [("S", "a"), ("a", "b"), ("b", "c")],
    )
    return run_all(graph, {"log": []}, aio=True)


@case
def case_async_node_stream_writer(ns: NS) -> Any:
    async def emit(state: Any) -> dict[str, Any]:
        ns.get_stream_writer()({"node": "emit", "step": 1})
        await asyncio.sleep(0)
        return {"log": ["emit"]}

    graph = build(ns, LogState, {"emit": emit}, [("S", "emit")])
    return stream(graph, {"log": []}, stream_mode=["custom", "updates"], aio=True)


@case
def case_async_node_in_sync_invoke(ns: NS) -> Any:
    graph = build(ns, LogState, {"a": async_note("a")}, [("S", "a")])
    return invoke(graph, {"log": []})


# --------------------------------------------------------------------------- messages


@case(aio=True)
def case_messages_state_with_dicts(ns: NS, aio: bool) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"messages": [{"role": "assistant", "content": f"re: {last.content}"}]}

    graph = build(ns, ns.MessagesState, {"reply": reply}, [("S", "reply")])
    inp = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
        ]
    }
    return run_all(graph, inp, aio=aio)


@case
def case_add_messages_assigns_ids_and_replaces(ns: NS) -> Any:
    def edit(state: Any) -> dict[str, Any]:
        first = state["messages"][0]
        return {
            "messages": [
                HumanMessage(content="edited", id=first.id),
                AIMessage(content="new"),
            ]
        }

    graph = build(ns, ns.MessagesState, {"edit": edit}, [("S", "edit")])
    out = graph.invoke(
        {"messages": [HumanMessage(content="orig"), HumanMessage(content="keep", id="fixed")]}
    )
    msgs = out["messages"]
    return {"messages": msgs, "ids_set": [bool(m.id) for m in msgs], "kept_id": msgs[1].id}


@case
def case_remove_message(ns: NS) -> Any:
    def prune(state: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id="m1"), AIMessage(content="after", id="m3")]}

    graph = build(ns, ns.MessagesState, {"prune": prune}, [("S", "prune")])
    return invoke(
        graph,
        {
            "messages": [
                HumanMessage(content="a", id="m1"),
                HumanMessage(content="b", id="m2"),
            ]
        },
    )


@case
def case_tool_call_messages(ns: NS) -> Any:
    call = {"name": "lookup", "args": {"q": "x"}, "id": "call_1"}

    def agent(state: Any) -> dict[str, Any]:
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage(content="done")]}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def tools(state: Any) -> dict[str, Any]:
        tc = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(content="42", tool_call_id=tc["id"], name=tc["name"])]}

    builder = build_agent_loop(ns, agent, tools)
    return run_all(builder, {"messages": [SystemMessage(content="sys"), HumanMessage(content="q")]})


def build_agent_loop(ns: NS, agent: Node, tools: Node) -> Any:
    def route(state: Any) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else ns.END

    builder = ns.StateGraph(ns.MessagesState).add_node("agent", agent).add_node("tools", tools)
    builder.add_edge(ns.START, "agent").add_edge("tools", "agent")
    builder.add_conditional_edges("agent", route, ["tools", ns.END])
    return builder.compile()


@case
def case_add_messages_function_directly(ns: NS) -> Any:
    left = [HumanMessage(content="a", id="1"), AIMessage(content="b", id="2")]
    merged = ns.add_messages(
        left, [AIMessage(content="b2", id="2"), {"role": "user", "content": "c", "id": "3"}]
    )
    single = ns.add_messages(left, HumanMessage(content="solo", id="4"))
    return {
        "merged": merged,
        "merged_ids": [m.id for m in merged],
        "single": [m.id for m in single],
    }


@case
def case_message_graph(ns: NS) -> Any:
    """LangGraph's deprecated MessageGraph: the whole state is a list of messages merged
    with add_messages, so the graph takes a message or a list of them, nodes and routers
    get the list, a node returns a message or a list, and the output is the list."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        builder = ns.MessageGraph()
    seen: list[Any] = []

    def greet(state: Any) -> Any:
        seen.append(("greet", type(state).__name__, [m.content for m in state]))
        return AIMessage(content="hi", id="a1")

    def more(state: Any) -> Any:
        seen.append(("more", len(state)))
        return [AIMessage(content="x", id="a2"), ("user", "y")]

    def route(state: Any) -> str:
        seen.append(("route", [m.content for m in state]))
        return ns.END

    builder.add_node("greet", greet).add_node("more", more)
    builder.set_entry_point("greet")
    builder.add_edge("greet", "more").add_conditional_edges("more", route)
    graph = builder.compile()
    return {
        "warnings": [(w.category.__name__, str(w.message)) for w in caught],
        "list_input": invoke(graph, [("user", "hello")]),
        "one_message": invoke(graph, HumanMessage(content="solo", id="h1")),
        "stream": stream(
            graph, [HumanMessage(content="s", id="h2")], stream_mode=["updates", "values"]
        ),
        "seen": seen,
    }


@case(aio=True)
def case_root_state(ns: NS, aio: bool) -> Any:
    """A state that is one value, not a class of keys (LangGraph's root channel): `dict`
    as a plain value, a list with a reducer, an int; with a saver, its snapshots and
    updates, a Command's update and a router's view."""
    out = {}
    for name, schema, first, node in (
        ("dict", dict, {"a": 1}, lambda s: {"b": len(s)}),
        ("list", Annotated[list, operator.add], [1], lambda s: [len(s)]),
        ("int", int, 1, lambda s: s + 1),
    ):
        graph = (
            ns.StateGraph(schema)
            .add_node("n", node)
            # A dict update in a Command is keyed updates in LangGraph, dropped by a
            # root state (docs/langgraph-differences.md): the dict state sends none.
            .add_node(
                "again",
                lambda s, name=name: ns.Command(update=None if name == "dict" else s, goto=ns.END),
            )
            .add_edge(ns.START, "n")
            .add_conditional_edges("n", lambda s: "again" if s else ns.END)
            .compile(checkpointer=ns.InMemorySaver())
        )
        config = {"configurable": {"thread_id": name}}
        result = invoke(graph, first, config, aio=aio)
        parts = stream(graph, first, {"configurable": {"thread_id": name + "2"}}, aio=aio)
        updated = graph.update_state(config, first, as_node="n")
        state = graph.get_state(updated)
        out[name] = {
            "result": result,
            "parts": parts,
            "state": [state.values, state.next],
            "history": [snap.values for snap in graph.get_state_history(config)],
        }
    return out


@case(aio=True)
def case_node_returns_several_updates(ns: NS, aio: bool) -> Any:
    """A node may return a list mixing Commands and plain updates, applied in order
    (a Command in it may route), or a Command whose update writes a key twice; the
    updates stream shows each write of a key written more than once, the tasks stream
    gathers them under `$writes`. The same with a one-value state."""

    class State(TypedDict):
        foo: Annotated[str, operator.add]

    def mixed(state: Any) -> Any:
        return [
            ns.Command(update={"foo": "a1"}),
            {"foo": "a2"},
            ns.Command(update={"foo": "a3"}, goto="twice"),
        ]

    def twice(state: Any) -> Any:
        return ns.Command(update=[("foo", "c1"), ("foo", "c2")])

    def root(state: Any) -> Any:
        return [ns.Command(update=["a"]), ["b"]]

    graph = (
        ns.StateGraph(State)
        .add_node("mixed", mixed)
        .add_node("plain", lambda s: {"foo": "b"})
        .add_node("twice", twice)
        .add_edge(ns.START, "mixed")
        .add_edge("mixed", "plain")
        .compile()
    )
    rooted = (
        ns.StateGraph(Annotated[list, operator.add])
        .add_node("root", root)
        .add_edge(ns.START, "root")
        .compile()
    )
    return {
        "result": invoke(graph, {"foo": ""}, aio=aio),
        "stream": stream(graph, {"foo": ""}, stream_mode=["updates", "tasks"], aio=aio),
        "root": invoke(rooted, [], aio=aio),
        "root stream": stream(rooted, [], stream_mode="updates", aio=aio),
    }


@case
def case_pydantic_update_writes_what_was_set(ns: NS) -> Any:
    """A pydantic instance returned (or in a Command) writes its values, but a None left
    at its None default was not set and does not overwrite; one set explicitly does."""

    class State(pydantic.BaseModel):
        foo: str | None = None
        bar: str | None = None
        count: int | None = 0

    def first(state: State) -> Any:
        return State(foo="foo", count=None)

    def second(state: State) -> Any:
        return ns.Command(update=State(bar="bar"))

    def third(state: State) -> Any:
        return State(foo=None)

    graph = (
        ns.StateGraph(State)
        .add_node("first", first)
        .add_node("second", second)
        .add_node("third", third)
        .add_edge(ns.START, "first")
        .add_edge("first", "second")
        .add_edge("second", "third")
        .compile()
    )
    return {
        "result": invoke(graph, State(count=5)),
        "updates": stream(graph, State(count=5), stream_mode="updates"),
    }


# --------------------------------------------------------------------------- get_graph


@case
def case_get_graph_shape(ns: NS) -> Any:
    builder = (
        ns.StateGraph(XLogState)
        .add_node("a", note("a"))
        .add_node("b", note("b"))
        .add_node("c", note("c"))
        .add_edge(ns.START, "a")
        .add_conditional_edges("a", by_x({1: "go_b", 2: "go_c"}), {"go_b": "b", "go_c": "c"})
        .add_edge("b", ns.END)
        .add_edge(["b", "c"], ns.END)
    )
    return graph_shape(builder.compile())


@case
def case_get_graph_with_join(ns: NS) -> Any:
    graph = build(
        ns, LogState, notes("a", "b", "c"), [("S", "a"), ("S", "b"), (["a", "b"], "c"), ("c", "E")]
    )
    return graph_shape(graph)


@case
def case_get_graph_draws_node_destinations(ns: NS) -> Any:
    """`add_node(destinations=...)` draws a node's Command targets as conditional edges:
    a sequence of names unlabeled, a dict with each target's label."""
    out = {}
    for name, destinations in {
        "names": ("b", "c"),
        "labels": {"b": "to b", "c": "to c"},
    }.items():
        builder = (
            ns.StateGraph(XLogState)
            .add_node("a", lambda s: ns.Command(goto="c"), destinations=destinations)
            .add_node("b", note("b"))
            .add_node("c", note("c"))
            .add_edge(ns.START, "a")
        )
        graph = builder.compile()
        drawn = sorted((e.source, e.target, e.data, e.conditional) for e in graph.get_graph().edges)
        out[name] = {"edges": drawn, "run": invoke(graph, {"x": 0, "log": []})}
    return out


@case
def case_what_untyped_nodes_and_typed_routers_read(ns: NS) -> Any:
    """An untyped node reads the state schema's keys, not channels that an output or a
    private schema adds; a router typed with the state schema reads its keys only, an
    untyped one the whole state and what the node returned beyond it. A callable object
    as a node is named after its class."""

    class Question(TypedDict):
        question: str

    class Answer(TypedDict):
        answer: str
        seen: Any

    class Private(TypedDict):
        secret: str

    class Echo:
        def __call__(self, state: Any) -> dict[str, Any]:
            return {"answer": "ok", "seen": sorted(state)}

    seen: list[Any] = []

    def hide(state: Question) -> dict[str, Any]:
        return {"secret": "s", "question": state["question"] + "?"}

    def peek(state: Private) -> dict[str, Any]:
        return {"answer": state["secret"], "extra": 1}

    def typed(state: Question) -> str:
        seen.append(("typed", sorted(state)))
        return "Echo"

    def untyped(state: Any) -> str:
        seen.append(("untyped", sorted(state)))
        return "Echo"

    builder = ns.StateGraph(Question, output_schema=Answer)
    builder.add_node(hide).add_node(peek).add_node(Echo())
    builder.add_edge(ns.START, "hide").add_edge("hide", "peek")
    builder.add_conditional_edges("peek", typed).add_conditional_edges("peek", untyped)
    graph = builder.compile()
    return {"result": invoke(graph, {"question": "q"}), "seen": seen}


# --------------------------------------------------------------------------- build errors


@case
def case_refused_sequences_and_bulk_updates(ns: NS) -> Any:
    """`add_sequence` of no nodes or of one name twice is refused; so are several
    updates of one superstep without `as_node`, and a bulk update of nothing."""
    graph = chain(ns, ["a", "b"], checkpointer=ns.InMemorySaver())
    config = {"configurable": {"thread_id": "bulk"}}
    invoke(graph, {"log": []}, config)

    def bulk(supersteps: Any) -> Any:
        return lambda: graph.bulk_update_state(config, supersteps)

    unnamed = [ns.StateUpdate({"log": ["x"]}), ns.StateUpdate({"log": ["y"]})]
    return {
        "empty sequence": build_error(lambda: ns.StateGraph(LogState).add_sequence([])),
        "twice": build_error(lambda: ns.StateGraph(LogState).add_sequence([("n", note("n"))] * 2)),
        "unnamed updates": build_error(bulk([unnamed])),
        "no supersteps": build_error(bulk([])),
        "empty supersteps": build_error(bulk([[], []])),
    }


@case
def case_node_named_as_state_key(ns: NS) -> Any:
    try:
        graph = build(ns, XLogState, {"x": note("x")}, [("S", "x")])
    except Exception as exc:  # the error class is the observation
        return {"build_error": type(exc).__name__}
    return {"run": run_all(graph, {"x": 1, "log": []})}


@case
def case_reserved_characters_in_node_names(ns: NS) -> Any:
    return {
        name: build_error(lambda name=name: ns.StateGraph(LogState).add_node(name, note("r")))
        for name in ("a:b", "a|b")
    }


@case
def case_edge_to_unknown_node(ns: NS) -> Any:
    return build_error(lambda: build(ns, LogState, notes("a"), [("S", "a"), ("a", "ghost")]))


@case
def case_edge_from_unknown_node(ns: NS) -> Any:
    return build_error(lambda: build(ns, LogState, notes("a"), [("S", "a"), ("ghost", "a")]))


@case
def case_no_entry_point(ns: NS) -> Any:
    return build_error(lambda: build(ns, LogState, notes("a", "b"), [("a", "b")]))


@case
def case_duplicate_node_name(ns: NS) -> Any:
    def make() -> Any:
        return ns.StateGraph(LogState).add_node("a", note("a")).add_node("a", note("b"))

    return build_error(make)


@case
def case_reserved_node_names(ns: NS) -> Any:
    return {
        name: build_error(lambda name=name: ns.StateGraph(LogState).add_node(name, note("r")))
        for name in (ns.START, ns.END)
    }


@case
def case_edge_from_end_or_to_start(ns: NS) -> Any:
    return {
        "from_end": build_error(lambda: ns.StateGraph(LogState).add_edge(ns.END, "a")),
        "to_start": build_error(lambda: ns.StateGraph(LogState).add_edge("a", ns.START)),
    }


# --------------------------------------------------------------------------- more routing


@case
def case_command_to_parent_graph(ns: NS) -> Any:
    def hand_off(state: Any) -> Any:
        return ns.Command(graph=ns.Command.PARENT, goto="z", update={"log": ["from sub"]})

    sub = build(ns, LogState, {"hand_off": hand_off}, [("S", "hand_off")])
    parent = build(
        ns, LogState, {"sub": sub, "y": note("y"), "z": note("z")}, [("S", "sub"), ("sub", "y")]
    )
    return {
        "invoke": invoke(parent, {"log": []}),
        "stream": stream(parent, {"log": []}, subgraphs=True, unordered=True),
    }


@case(aio=True)
def case_command_to_parent_from_the_top_graph(ns: NS, aio: bool) -> Any:
    """It escapes the run as a `ParentCommand` holding the command; the task stays due."""
    graph = build(
        ns,
        LogState,
        {"a": lambda s: ns.Command(graph=ns.Command.PARENT, goto="z", update={"log": ["up"]})},
        [("S", "a")],
        checkpointer=ns.InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    try:
        if aio:
            asyncio.run(graph.ainvoke({"log": []}, config))
        else:
            graph.invoke({"log": []}, config)
    except ns.ParentCommand as exc:
        caught = {"goto": exc.args[0].goto, "update": exc.args[0].update}
    return {"caught": caught, "state": graph.get_state(config)}


@case(aio=True)
def case_a_command_starts_a_thread_with_nothing_saved(ns: NS, aio: bool) -> Any:
    """It is the input node's input: its update is written (once, here: a key without a
    reducer, as LangGraph writes it twice), the input's edges are followed and `goto`
    too; an answer finds no question. Without a saver an answer is refused."""

    class State(TypedDict):
        v: str
        log: Annotated[list, operator.add]

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("q?")]}

    builder = ns.StateGraph(State)
    builder.add_node("n1", note("n1"))
    builder.add_node("n2", note("n2"))
    builder.add_node("ask", ask)
    builder.add_edge(ns.START, "n1")
    saved = builder.compile(checkpointer=ns.InMemorySaver())
    commands = {
        "update": ns.Command(update={"v": "x"}),
        "goto": ns.Command(update={"v": "x"}, goto="n2"),
        "send": ns.Command(goto=ns.Send("n2", {"log": []})),
        "ask": ns.Command(goto="ask"),
        "resume": ns.Command(resume="r"),
    }
    seen: dict[str, Any] = {}
    for name, command in commands.items():
        config = {"configurable": {"thread_id": name}}
        out = invoke(saved, command, config, aio=aio)
        state = saved.get_state(config)
        seen[name] = {"out": out, "values": state.values, "next": state.next}
    plain = builder.compile()
    seen["plain goto"] = invoke(plain, commands["goto"], aio=aio)
    seen["plain resume"] = invoke(plain, commands["resume"], aio=aio)
    return seen


@case
def case_send_to_unknown_node(ns: NS) -> Any:
    graph = (
        ns.StateGraph(LogState)
        .add_node("a", note("a"))
        .add_conditional_edges(ns.START, lambda s: [ns.Send("ghost", {})])
        .compile()
    )
    return invoke(graph, {"log": []})


@case
def case_command_goto_unknown_node(ns: NS) -> Any:
    graph = build(ns, LogState, {"a": lambda s: ns.Command(goto="ghost")}, [("S", "a")])
    return invoke(graph, {"log": []})


@case
def case_private_channel_via_node_schemas(ns: NS) -> Any:
    class Private(TypedDict):
        secret: str

    def produce(state: Any) -> Private:
        return {"secret": "s1"}

    def consume(state: Private) -> dict[str, Any]:
        return {"log": [state["secret"], sorted(state)]}

    graph = build(
        ns, LogState, {"produce": produce, "consume": consume}, chain_edges(["produce", "consume"])
    )
    return run_all(graph, {"log": []})


# --------------------------------------------------------------------------- API objects


@case
def case_stream_writer_outside_streaming(ns: NS) -> Any:
    def emit(state: Any) -> dict[str, Any]:
        ns.get_stream_writer()({"node": "emit"})
        return {"log": ["emit"]}

    graph = build(ns, LogState, {"emit": emit}, [("S", "emit")])
    outside = build_error(lambda: ns.get_stream_writer()("x"))
    return {"invoke": invoke(graph, {"log": []}), "outside_run": outside}


@case
def case_interrupt_without_checkpointer(ns: NS) -> Any:
    graph = build(ns, LogState, {"a": lambda s: {"log": [ns.interrupt("q")]}}, [("S", "a")])
    # Without a checkpointer each run's ids are fresh: normalise the two runs apart.
    return {
        "invoke": normalize(invoke(graph, {"log": []})),
        "stream": normalize(stream(graph, {"log": []})),
    }


@case
def case_interrupt_raises_graph_interrupt(ns: NS) -> Any:
    caught: list[Any] = []

    def ask(state: Any) -> dict[str, Any]:
        try:
            answer = ns.interrupt("q")
        except ns.GraphInterrupt as exc:
            caught.append(type(exc).__name__)
            raise
        return {"log": [answer]}

    graph = build(ns, LogState, {"ask": ask}, [("S", "ask")])
    return {"invoke": invoke(graph, {"log": []}), "caught": caught}


@case
def case_error_class_hierarchy(ns: NS) -> Any:
    builtins = (RecursionError, RuntimeError, ValueError, Exception)
    return {
        name: [b.__name__ for b in builtins if issubclass(getattr(ns, name), b)]
        for name in ("GraphRecursionError", "InvalidUpdateError", "GraphInterrupt")
    }


@case
def case_api_constants_and_objects(ns: NS) -> Any:
    policy = ns.RetryPolicy()
    blank = ns.Command()
    return {
        "start_end": [ns.START, ns.END],
        "retry_defaults": [
            policy.initial_interval,
            policy.backoff_factor,
            policy.max_interval,
            policy.max_attempts,
            policy.jitter,
        ],
        "command_defaults": [blank.update, list(blank.goto), blank.resume, blank.graph],
        "parent": ns.Command.PARENT,
        "send_eq": ns.Send("a", {"k": 1}) == ns.Send("a", {"k": 1}),
        "send_fields": [ns.Send("a", 2).node, ns.Send("a", 2).arg],
    }


@case
def case_remove_unknown_message_id(ns: NS) -> Any:
    return build_error(
        lambda: ns.add_messages([HumanMessage(content="a", id="1")], [RemoveMessage(id="missing")])
    )


@case(aio=True)
def case_invoke_returns_the_last_values_part(ns: NS, aio: bool) -> Any:
    """A node writes an ephemeral value (or a Topic), a later node writes nothing: invoke
    returns what the last values part showed, with the value the end state lost; so do
    a graph with an output schema and a subgraph invoked from a node."""

    class Flash(TypedDict):
        x: int
        e: Annotated[str, ns.EphemeralValue(str)]
        t: Annotated[list, ns.Topic(str)]

    class Out(TypedDict):
        e: str
        t: list

    def graph(**kw: Any) -> Any:
        builder = ns.StateGraph(Flash, **kw)
        builder.add_node("a", lambda s: {"e": "eph", "t": "top", "x": 1})
        builder.add_node("b", lambda s: {})
        builder.add_edge(ns.START, "a")
        builder.add_edge("a", "b")
        return builder.compile()

    inner = graph()

    def call_inner(state: Any) -> dict[str, Any]:
        return {"x": 0, "e": str(inner.invoke({"x": 0}))}

    outer = build(ns, Flash, {"call": call_inner}, [("S", "call")])
    return {
        "plain": invoke(graph(), {"x": 0}, aio=aio),
        "output_schema": invoke(graph(output_schema=Out), {"x": 0}, aio=aio),
        "subgraph": invoke(outer, {"x": 0}, aio=aio),
    }


@case(aio=True)
def case_router_send_to_end_is_refused(ns: NS, aio: bool) -> Any:
    """A router's `Send(END, ...)` fails the run (alone or beside a real target), while
    a node's `Command(goto=Send(END, ...))` is only dropped."""

    def graph(router: Node | None, node: Node) -> Any:
        builder = ns.StateGraph(XLogState).add_node("a", node).add_edge("a", ns.END)
        if router is None:
            builder.add_edge(ns.START, "a")
        else:
            builder.add_conditional_edges(ns.START, router)
        return builder.compile()

    def run(compiled: Any) -> Any:
        return raised(
            lambda: run_sync_or_async(
                lambda: compiled.invoke({"x": 0, "log": []}),
                lambda: compiled.ainvoke({"x": 0, "log": []}),
                aio,
            )
        )

    def command(state: Any) -> Any:
        return ns.Command(update={"log": ["a"]}, goto=ns.Send(ns.END, {"x": 2}))

    return {
        "alone": run(graph(lambda s: [ns.Send(ns.END, {"x": 2})], note("a"))),
        "beside": run(graph(lambda s: [ns.Send("a", {"x": 1}), ns.Send(ns.END, {})], note("a"))),
        "command": run(graph(None, command)),
    }


@case
def case_add_messages_missing_side(ns: NS) -> Any:
    """`add_messages` with one side None names, in its error, the side it received
    only when that side is non-empty."""
    msg = [HumanMessage(content="m", id="1")]
    return {
        str(i): raised(lambda args=args: ns.add_messages(*args))
        for i, args in enumerate([(msg, None), (None, msg), ([], None), (None, []), (None, None)])
    } | {"in_graph": raised(lambda: _messages_none_graph(ns).invoke({"messages": msg}))}


def _messages_none_graph(ns: NS) -> Any:
    builder = ns.StateGraph(ns.MessagesState).add_node("n", lambda s: {"messages": None})
    return builder.add_edge(ns.START, "n").compile()


@case
def case_reducer_signature_is_checked(ns: NS) -> Any:
    """A reducer is refused when building the graph unless it has exactly two
    positional parameters, defaulted ones included."""

    def three(a: Any, b: Any, c: Any = None) -> Any:
        return a + b

    def one(a: Any) -> Any:
        return a

    def star(*args: Any) -> Any:
        return args[0] + args[1]

    def keyword_only(a: Any, b: Any, *, c: Any = 1) -> Any:
        return a + b

    def attempt(reducer: Any) -> Any:
        class S(TypedDict):
            s: Annotated[int, reducer]

        def make() -> Any:
            builder = ns.StateGraph(S).add_node("n", lambda st: {"s": 1})
            return builder.add_edge(ns.START, "n").compile().invoke({"s": 1})

        return raised(make)

    return {
        "three": attempt(three),
        "one": attempt(one),
        "star": attempt(star),
        "keyword_only": attempt(keyword_only),
        "two_defaulted": attempt(lambda a=0, b=0: a + b),
    }


@case
def case_builder_node_keeps_its_retry_policy_as_given(ns: NS) -> Any:
    """A builder's node spec holds the retry policy as `add_node` was given it: a policy,
    a list of them, or None."""
    one, two = ns.RetryPolicy(max_attempts=2), ns.RetryPolicy(max_attempts=5)
    builder = ns.StateGraph(LogState)
    builder.add_node("single", note("single"), retry_policy=one)
    builder.add_node("listed", note("listed"), retry_policy=[one, two])
    builder.add_node("none", note("none"))
    return {
        name: [type(spec.retry_policy).__name__, spec.retry_policy]
        for name, spec in builder.nodes.items()
    }
