"""`get_graph()`: a graph's nodes and edges as LangChain's drawable `Graph`.

LangChain's class is what LangGraph returns, so `draw_mermaid()`, `draw_ascii()`,
`draw_png()` and `to_json()` give what LangGraph users know.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable
from langchain_core.runnables.graph import Graph

from engine.constants import END, START
from engine.pregel.node import Node, find_inner_graph
from engine.pregel.runnable import RunnableCallable

if TYPE_CHECKING:
    from engine.graph.state import StateGraph

__all__ = ["draw", "draw_channels", "draw_entrypoint"]


def _pass_through(value: Any) -> Any:
    return value


def _data(name: str, action: Any) -> Runnable[Any, Any]:
    """What a node is drawn from: its Runnable (a subgraph is one), or a named stand-in
    for a function."""
    if isinstance(action, Runnable) and not isinstance(action, RunnableCallable):
        return action
    return RunnableCallable(_pass_through, name=name)


def draw(
    builder: StateGraph,
    xray: int | bool = False,
    interrupt_before: Sequence[str] = (),
    interrupt_after: Sequence[str] = (),
) -> Graph:
    """START, the nodes in the order they were added, END; edges sorted as LangGraph
    sorts them, conditional ones (branches, `Command` destinations, a deferred node's
    place after the others) marked. A node's
    label shows its metadata and, as LangGraph's does, whether it is deferred, where the
    graph stops for it (`__interrupt`) and a tool node's tools. With `xray` (True: every
    level; a number: that many levels), a subgraph's node is replaced by the subgraph's
    own drawing under its name, joined where its ends meet the parent."""
    edges, ends = _edges(builder)
    graph = Graph()
    drawn = {START: graph.add_node(_data(START, None), START)}
    for name, spec in builder.nodes.items():
        metadata = dict(spec.metadata or {})
        if spec.defer:
            metadata["defer"] = True
        stops = [
            w
            for w, names in (("before", interrupt_before), ("after", interrupt_after))
            if name in names
        ]
        if stops:
            metadata["__interrupt"] = ",".join(stops)
        tools = getattr(spec.fn, "tools_by_name", None)
        if isinstance(tools, Mapping) and tools:
            metadata["__tools"] = list(tools)
        drawn[name] = graph.add_node(_data(name, spec.fn), name, metadata=metadata or None)
    ordered = [*edges, *ends]
    if any(target == END for _, target, *_ in ordered):
        drawn[END] = graph.add_node(None, END)
    for source, target, data, conditional in ordered:
        # A `Command` destination outside this graph (its parent's node) is not drawn.
        if target in drawn:
            graph.add_edge(drawn[source], drawn[target], data, conditional)
    if xray:
        for name, spec in builder.nodes.items():
            # A subgraph given as the node, or one the node's code runs; LangGraph draws
            # one compiled with `checkpointer=False` as a plain node (it is no subgraph).
            sub = spec.subgraph or find_inner_graph(spec.runnable)
            if sub is not None and sub.checkpointer is not False and sub.builder is not None:
                depth = xray if xray is True else int(xray) - 1
                inner = draw(sub.builder, depth, sub.interrupt_before, sub.interrupt_after)
                _inline(graph, name, inner)
    return graph


def _inline(graph: Graph, name: str, sub: Graph) -> None:
    """Replace node `name` with `sub`, less its START and END where each has one edge."""
    if len(sub.nodes) <= 1 or not sub.first_node() or not sub.last_node():
        return
    sub.trim_first_node()
    sub.trim_last_node()
    graph.nodes.pop(name)
    first, last = graph.extend(sub, prefix=name)
    assert first is not None and last is not None
    for index, edge in enumerate(graph.edges):
        if edge.source == name:
            edge = edge.copy(source=last.id)
        if edge.target == name:
            edge = edge.copy(target=first.id)
        graph.edges[index] = edge


Edges = list[tuple[str, str, Any, bool]]


def _edges(builder: StateGraph) -> tuple[Edges, Edges]:
    """The builder's edges sorted by source and target, and the edges to END of nodes
    with nowhere to go, sorted by node (LangGraph draws those last)."""
    edges: set[tuple[str, str, Any, bool]] = set()
    for start, end in builder.edges:
        edges.add((start, end, None, False))
    for starts, end in builder.waiting_edges:
        edges.update((start, end, None, False) for start in starts)
    every = [*builder.nodes, END]
    for source, branches in builder.branches.items():
        for branch in branches.values():
            if branch.path_map is None:
                targets = [(t, None) for t in every if t != source]
            else:
                targets = [(t, None if k == t else k) for k, t in branch.path_map.items()]
            edges.update((source, t, data, True) for t, data in targets)
    for name, spec in builder.nodes.items():
        ends = spec.destinations or ()
        labels = ends if isinstance(ends, dict) else dict.fromkeys(ends)  # label by target
        edges.update((name, target, label, True) for target, label in labels.items())
    edges.update(_after_the_others(builder, edges))
    # Only what a run can reach from START is drawn, as LangGraph draws it: a node no
    # edge leads to (an error handler, a node only a Command goes to) stands alone.
    reached = _reached(edges)
    edges = {e for e in edges if e[0] in reached}
    # A plain edge to END is drawn last, with the ends of nodes that have nowhere to go.
    edges = {e for e in edges if e[1] != END or e[3]}
    sources = {source for source, *_ in edges}
    ends = [
        (name, END, None, False)
        for name in sorted(builder.nodes)
        if name in reached and name not in sources
    ]
    return sorted(edges, key=lambda e: (e[0], e[1])), ends


def _after_the_others(builder: StateGraph, edges: set[tuple[str, str, Any, bool]]) -> Edges:
    """Dotted edges to each deferred node from the nodes it runs after, as LangGraph draws
    them: a dry run of the edges (every branch taken, a join once all its sources ran)
    holds a deferred node until nothing else is left, and a deferred node that no node of
    the step before it leads to is drawn as following that step's nodes."""
    deferred = {name for name, spec in builder.nodes.items() if spec.defer}
    if not deferred:
        return []
    joins = [(frozenset(starts), end) for starts, end in sorted(builder.waiting_edges)]
    joined = {(start, end) for starts, end in joins for start in starts}
    drawn = {(source, target) for source, target, *_ in edges}
    targets: dict[str, set[str]] = {}
    for source, target in drawn - (joined - builder.edges):
        targets.setdefault(source, set()).add(target)
    found: set[tuple[str, str]] = set()
    step, held = {START}, set[str]()
    barriers = [frozenset[str]() for _ in joins]
    seen: set[Any] = set()
    while step:
        following = {target for node in step for target in targets.get(node, ())}
        for i, (starts, end) in enumerate(joins):
            barriers[i] |= starts & step
            if barriers[i] == starts:
                following.add(end)
                barriers[i] = frozenset()
        following.discard(END)
        held |= following & deferred
        following -= deferred
        if not following and held:
            for node in held:
                if not any((source, node) in drawn for source in step):
                    found.update((source, node) for source in step if source != START)
            following, held = held, set()
        state = (frozenset(following), frozenset(held), tuple(barriers))
        if state in seen:  # a loop: every state it can reach was drawn
            break
        seen.add(state)
        step = following
    return [(source, target, None, True) for source, target in found]


def _reached(edges: set[tuple[str, str, Any, bool]]) -> set[str]:
    """The nodes some path of `edges` leads to from START (START among them)."""
    targets: dict[str, list[str]] = {}
    for source, target, *_ in edges:
        targets.setdefault(source, []).append(target)
    reached, todo = {START}, [START]
    while todo:
        for target in targets.get(todo.pop(), ()):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    return reached


def draw_entrypoint(name: str) -> Graph:
    """An entrypoint is one node between START and END."""
    graph = Graph()
    nodes = [graph.add_node(_data(n, None), n) for n in (START, name)]
    nodes.append(graph.add_node(None, END))
    graph.add_edge(nodes[0], nodes[1])
    graph.add_edge(nodes[1], nodes[2])
    return graph


def draw_channels(
    nodes: Mapping[str, Node],
    writes: Mapping[str, frozenset[str]],
    input_channels: str | Sequence[str],
    interrupt_before: Sequence[str] = (),
    interrupt_after: Sequence[str] = (),
    limit: int = 250,
) -> Graph:
    """A graph built from channels by hand (a `Pregel`): every node, and the edges a dry
    run finds, as LangGraph draws it: START to the nodes its input wakes (a str input
    channel's only: LangGraph's dry run writes an empty input dict, which a list of
    input channels takes nothing from), a node to each node a channel it writes wakes,
    and the nodes that wake none to END."""
    woken_by: dict[str, list[str]] = {}
    for name, node in nodes.items():
        for trigger in node.triggers:
            woken_by.setdefault(trigger, []).append(name)

    def woken(channels: Iterable[str]) -> list[str]:
        return sorted({name for channel in channels for name in woken_by.get(channel, ())})

    start = woken([input_channels]) if isinstance(input_channels, str) else []
    edges: set[tuple[str, str]] = set()
    step, last = start, start
    # Step by step until no node wakes; a cycle runs to the limit, as LangGraph's does
    # (the node its last step runs is the one drawn as maybe ending the run).
    for _ in range(limit + 1):
        if not step:
            break
        after = woken(channel for name in step for channel in writes[name])
        edges.update(
            (source, target)
            for target in after
            for source in step
            if writes[source].intersection(nodes[target].triggers)
        )
        last, step = step, after
    graph = Graph()
    for name, node in nodes.items():
        metadata = dict(node.metadata or {})
        stops = [
            w
            for w, names in (("before", interrupt_before), ("after", interrupt_after))
            if name in names
        ]
        if stops:
            metadata["__interrupt"] = ",".join(stops)
        graph.add_node(node.runnable, name, metadata=metadata or None)
    graph.add_node(None, START)
    drawn = [(START, target, False) for target in start]
    drawn += [(source, target, False) for source, target in sorted(edges)]
    termini = {target for _, target in edges} - {source for source, _ in edges}
    drawn += [(source, END, False) for source in sorted(termini)]
    if not termini and len(last) == 1:
        # One node whose writes wake none: it may end the run.
        drawn.append((last[0], END, True))
    if any(target == END for _, target, _ in drawn):
        graph.add_node(None, END)
    for source, target, conditional in drawn:
        graph.add_edge(graph.nodes[source], graph.nodes[target], conditional=conditional)
    return graph
