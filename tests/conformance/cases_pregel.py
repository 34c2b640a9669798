"""LangGraph's low-level API: graphs built from channels by hand with `NodeBuilder` and
`Pregel(...)`. What a run returns and streams, what a thread saves, and how it resumes
after a breakpoint and an update. No ``from __future__ import annotations`` here (see
cases_core).
"""

import operator
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from .harness import NS, case, graph_shape, history, invoke, stream, thread


def two_processes(ns: NS, **options: Any) -> Any:
    """input -> one (+1) -> inbox -> two (+1) -> output, one value per channel."""
    one = ns.NodeBuilder().subscribe_only("input").do(lambda x: x + 1).write_to("inbox")
    two = ns.NodeBuilder().subscribe_only("inbox").do(lambda x: x + 1).write_to("output")
    return ns.Pregel(
        nodes={"one": one, "two": two},
        channels={
            "input": ns.LastValue(int),
            "inbox": ns.LastValue(int),
            "output": ns.LastValue(int),
        },
        input_channels="input",
        output_channels="output",
        **options,
    )


@case(aio=True)
def case_pregel_two_processes(ns: NS, aio: bool) -> Any:
    """A chain of two nodes: the output, every stream mode's parts (the default is
    `values`, of every channel), the JSON schemas from the channels' types, and the
    recursion limit."""
    graph = two_processes(ns)
    return {
        "output": invoke(graph, 2, aio=aio),
        "default stream": stream(graph, 2, aio=aio),
        "updates": stream(graph, 2, stream_mode="updates", aio=aio),
        "tasks": stream(graph, 2, stream_mode=["tasks", "values"], aio=aio),
        "limited": invoke(graph, 2, {"recursion_limit": 1}, aio=aio),
        "input schema": graph.get_input_jsonschema(),
        "output schema": graph.get_output_jsonschema(),
        "is a Pregel": isinstance(
            ns.StateGraph(dict).add_node("n", len).add_edge(ns.START, "n").compile(), ns.Pregel
        ),
    }


@case(aio=True)
def case_pregel_reads_and_writes(ns: NS, aio: bool) -> Any:
    """Nodes that wake on several channels and read one more, write a mapped value and a
    constant beside their output, chain two steps with `do`, and fold writes in a Topic
    and a BinaryOperatorAggregate; input and output as dicts of channels."""
    fan = (
        ns.NodeBuilder()
        .subscribe_to("a", "b")
        .read_from("c")
        .do(lambda d: sorted(d.items()))
        .do(len)
        .write_to("count", doubled=lambda n: n * 2, note="fanned")
    )
    collect = ns.NodeBuilder().subscribe_only("count").do(lambda n: [n, n + 1]).write_to("seen")
    add = ns.NodeBuilder().subscribe_only("doubled").do(lambda n: n).write_to("total")
    graph = ns.Pregel(
        nodes={"fan": fan, "collect": collect, "add": add},
        channels={
            "a": ns.LastValue(int),
            "b": ns.LastValue(int),
            "c": ns.LastValue(int),
            "count": ns.LastValue(int),
            "doubled": ns.LastValue(int),
            "note": ns.LastValue(str),
            "seen": ns.Topic(int, accumulate=True),
            "total": ns.BinaryOperatorAggregate(int, operator.add),
        },
        input_channels=["a", "b", "c"],
        output_channels=["count", "note", "seen", "total"],
        stream_channels=["count", "total"],
    )
    return {
        "only a": invoke(graph, {"a": 1}, aio=aio),
        "all": invoke(graph, {"a": 1, "b": 2, "c": 3}, aio=aio),
        "values": stream(graph, {"a": 1, "c": 3}, stream_mode="values", aio=aio),
        "input schema": graph.get_input_jsonschema(),
    }


@case(aio=True, sql=True)
def case_pregel_breakpoint_update_and_resume(ns: NS, aio: bool) -> Any:
    """With a checkpointer and a breakpoint after the first node: the call stopped there
    returns None, the snapshot and history show the channels, a resume finishes, new
    input starts over, and an update as the first node is what the second one reads."""
    graph = two_processes(ns, checkpointer=ns.InMemorySaver(), interrupt_after_nodes=["one"])
    config = thread()
    out = {"stopped": invoke(graph, 2, config, aio=aio)}
    out["at the breakpoint"] = graph.get_state(config)
    out["resumed"] = invoke(graph, None, config, aio=aio)
    out["again"] = invoke(graph, 20, config, aio=aio)
    graph.update_state(config, 25, as_node="one")
    out["after the update"] = graph.get_state(config)
    out["finished"] = invoke(graph, None, config, aio=aio)
    out["history"] = history(graph, config)
    return out


def after_finish_channel(ns: NS) -> Any:
    """A channel of the user's own that shows its last value only once the run would
    end (LangGraph's `finish` hook): what a deferred step is made of."""

    class AfterFinish(ns.BaseChannel):
        __slots__ = ("held", "done")

        def __init__(self, typ: Any, key: str = "") -> None:
            super().__init__(typ, key)
            self.held: Any = None
            self.done = False

        @property
        def ValueType(self) -> Any:  # noqa: N802 (LangGraph's name)
            return self.typ

        @property
        def UpdateType(self) -> Any:  # noqa: N802 (LangGraph's name)
            return self.typ

        def get(self) -> Any:
            if not self.done or self.held is None:
                raise ns.EmptyChannelError()
            return self.held

        def is_available(self) -> bool:
            return self.done and self.held is not None

        def update(self, values: Any) -> bool:
            if not values:
                return False
            self.held, self.done = values[-1], False
            return True

        def finish(self) -> bool:
            if self.done or self.held is None:
                return False
            self.done = True
            return True

        def consume(self) -> bool:
            if self.done:
                self.held, self.done = None, False
                return True
            return False

        def checkpoint(self) -> Any:
            return (self.held, self.done)

        def from_checkpoint(self, checkpoint: Any) -> Any:
            new = type(self)(self.typ, self.key)
            if isinstance(checkpoint, list | tuple):
                new.held, new.done = checkpoint
            return new

    return AfterFinish


def runs_last(ns: NS, late: Any) -> Any:
    """start -> short -> `late` -> last, beside start -> long1 -> long2: `last` wakes only
    once `late` shows its value, when the run would otherwise end."""
    start = ns.NodeBuilder().subscribe_only("input").write_to("short", "long")
    short = ns.NodeBuilder().subscribe_only("short").do(lambda x: f"short {x}").write_to("late")
    long1 = ns.NodeBuilder().subscribe_only("long").do(lambda x: f"long {x}").write_to("long2")
    long2 = ns.NodeBuilder().subscribe_only("long2").do(lambda x: f"{x}!").write_to("log")
    last = ns.NodeBuilder().subscribe_only("late").do(lambda x: f"last after {x}")
    return ns.Pregel(
        nodes={
            "start": start,
            "short": short,
            "long1": long1,
            "long2": long2,
            "last": last.write_to("log"),
        },
        channels={
            "input": ns.LastValue(int),
            "short": ns.LastValue(int),
            "long": ns.LastValue(int),
            "long2": ns.LastValue(str),
            "late": late,
            "log": ns.Topic(str, accumulate=True),
        },
        input_channels="input",
        output_channels="log",
        checkpointer=ns.InMemorySaver(),
    )


def ran_last(graph: Any, aio: bool, name: str) -> dict[str, Any]:
    """Two runs on thread `name` (the second one after the first one's end) and one on
    another, streamed."""
    config = thread(name)
    return {
        "log": invoke(graph, 1, config, aio=aio),
        "updates": stream(
            graph, 2, thread(name + "-other"), stream_mode="updates", aio=aio, unordered=True
        ),
        "history": [sorted(snapshot.next) for snapshot in history(graph, config)],
        "again": invoke(graph, 3, config, aio=aio),
    }


@case(aio=True, sql=True)
def case_pregel_a_channel_told_the_run_would_end(ns: NS, aio: bool) -> Any:
    """`finish()` of a channel of the user's own is called when a step wakes no node: the
    channel that changes wakes its reader, which runs last, after the longer branch."""
    return ran_last(runs_last(ns, after_finish_channel(ns)(str)), aio, "custom")


@case(aio=True, sql=True)
def case_pregel_after_finish_channels(ns: NS, aio: bool) -> Any:
    """LangGraph's own channels that wait for the run's end: a last value, and a join of
    two sources that opens once both wrote and nothing else is left."""
    joined = ns.NodeBuilder().subscribe_only("join").do(lambda _: "joined").write_to("log")
    a = ns.NodeBuilder().subscribe_only("input").do(lambda x: "a").write_to("join", "log")
    b = ns.NodeBuilder().subscribe_only("input").do(lambda x: "b").write_to("mid")
    b2 = ns.NodeBuilder().subscribe_only("mid").do(lambda x: "b2").write_to("join", "log")
    join = ns.Pregel(
        nodes={"a": a, "b": b, "b2": b2, "joined": joined},
        channels={
            "input": ns.LastValue(int),
            "mid": ns.LastValue(str),
            "join": ns.NamedBarrierValueAfterFinish(str, {"a", "b2"}),
            "log": ns.Topic(str, accumulate=True),
        },
        input_channels="input",
        output_channels="log",
        checkpointer=ns.InMemorySaver(),
    )
    return {
        "last value": ran_last(runs_last(ns, ns.LastValueAfterFinish(str)), aio, "last"),
        "join": ran_last(join, aio, "join"),
    }


@case(aio=True)
def case_pregel_stream_channels_as_one_name(ns: NS, aio: bool) -> Any:
    """Stream channels given as one name: values parts, updates and snapshots show that
    channel's bare value; a call's `output_keys` may name any channel, beyond them."""
    graph = two_processes(ns, stream_channels="inbox", checkpointer=ns.InMemorySaver())
    listed = two_processes(ns, stream_channels=["inbox"])
    config = thread()
    return {
        "values": stream(graph, 2, config, aio=aio),
        "updates": stream(graph, 2, config, stream_mode=["updates", "values"], aio=aio),
        "state": graph.get_state(config).values,
        "output keys": invoke(listed, 2, output_keys=["input", "output"], aio=aio),
        "updates of other keys": stream(
            listed, 2, stream_mode="updates", output_keys="output", aio=aio
        ),
    }


@case(aio=True)
def case_pregel_input_dict_without_input_channels(ns: NS, aio: bool) -> Any:
    """Input channels given as a list, an input dict naming none of them: the run has no
    input (EmptyInputError), as in LangGraph."""
    node = ns.NodeBuilder().subscribe_only("in").do(lambda x: x).write_to("out")
    graph = ns.Pregel(
        nodes={"node": node},
        channels={"in": ns.LastValue(int), "out": ns.LastValue(int)},
        input_channels=["in"],
        output_channels="out",
    )
    return [invoke(graph, given, aio=aio) for given in ({}, {"other": 1}, {"in": 1})]


@case(aio=True, sql=True)
def case_pregel_resume_shows_the_output_first(ns: NS, aio: bool) -> Any:
    """Resumed after a breakpoint, a run's values parts start with its output channel as
    it goes on from (None before any node wrote it), as LangGraph's do."""
    graph = two_processes(ns, checkpointer=ns.InMemorySaver(), interrupt_after_nodes=["one"])
    config = thread()
    modes = ["values", "updates"]
    return [
        invoke(graph, 1, config, aio=aio),
        invoke(graph, None, config, stream_mode=modes, aio=aio),
        invoke(graph, 5, config, aio=aio),
        invoke(graph, None, config, stream_mode=modes, aio=aio),
    ]


@case(aio=True)
def case_pregel_node_tags_and_drawing(ns: NS, aio: bool) -> Any:
    """A node's `meta` tags: on its run (what callbacks see) and on the built node; the
    drawing of a hand-built graph: every node, joined where a channel one writes wakes
    another, a cycle, breakpoints; a Pregel run by a node streams its updates."""
    seen: list[Any] = []

    class Runs(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            if kwargs.get("name") in ("one", "two"):
                seen.append([kwargs["name"], sorted(kwargs.get("tags") or [])])

    inner = two_processes(ns)
    tagged = ns.NodeBuilder().subscribe_only("a").do(inner).write_to("b").meta("tagA", k="v")
    last = ns.NodeBuilder().subscribe_only("b").do(lambda v: v * 10).write_to("c")
    outer = ns.Pregel(
        nodes={"one": tagged, "two": last},
        channels={key: ns.LastValue(int) for key in "abc"},
        input_channels="a",
        output_channels="c",
        interrupt_before_nodes=["two"],
    )
    loop = {
        "p": ns.NodeBuilder().subscribe_only("a").do(lambda v: v).write_to("b"),
        "q": ns.NodeBuilder().subscribe_only("b").do(lambda v: v).write_to("a"),
    }
    cyclic = ns.Pregel(
        nodes=loop,
        channels={key: ns.LastValue(int) for key in "ab"},
        input_channels="a",
        output_channels="b",
    )
    run = invoke(outer, 2, {"callbacks": [Runs()]}, aio=aio)
    return {
        "run": run,
        "tags": sorted(seen),
        "node": [outer.nodes["one"].tags, outer.nodes["one"].metadata],
        "drawn": [graph_shape(outer), graph_shape(cyclic)],
        "mermaid": outer.get_graph().draw_mermaid(),
        "updates": stream(outer, 2, stream_mode="updates", subgraphs=True, aio=aio),
    }


@case
def case_nodebuilder_misuse(ns: NS) -> Any:
    """Reading or subscribing to more channels after subscribing to one: LangGraph's
    error classes and messages."""
    attempts = {
        "read_from": lambda: ns.NodeBuilder().subscribe_only("a").read_from("k"),
        "subscribe_to": lambda: ns.NodeBuilder().subscribe_only("a").subscribe_to("k"),
        "subscribe_only": lambda: ns.NodeBuilder().subscribe_to("a").subscribe_only("k"),
    }
    out = {}
    for name, attempt in attempts.items():
        try:
            attempt()
        except Exception as exc:  # the error is the observation
            out[name] = [type(exc).__name__, str(exc)]
    return out
