"""A drawable view of a graph: nodes, edges (conditional ones marked) and Mermaid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.types import END, START

if TYPE_CHECKING:
    from engine.graph.state import StateGraph


@dataclass(frozen=True, slots=True)
class DrawNode:
    id: str
    name: str
    data: Any = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    data: Any = None
    conditional: bool = False


@dataclass
class Graph:
    nodes: dict[str, DrawNode] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [
                {"id": n.id, "type": "runnable", "data": {"id": n.id, "name": n.name}}
                for n in self.nodes.values()
            ],
            "edges": [
                {"source": e.source, "target": e.target, "conditional": e.conditional}
                for e in self.edges
            ],
        }

    def draw_mermaid(self) -> str:
        lines = ["graph TD;"]
        for node in self.nodes.values():
            if node.id in (START, END):
                lines.append(f"\t{_mid(node.id)}([{node.id}]):::{_mid(node.id)}")
            else:
                lines.append(f"\t{_mid(node.id)}({node.name})")
        for edge in self.edges:
            arrow = "-.->" if edge.conditional else "-->"
            label = f"|{edge.data}|" if edge.data is not None and edge.conditional else ""
            lines.append(f"\t{_mid(edge.source)} {arrow}{label} {_mid(edge.target)};")
        return "\n".join(lines) + "\n"


def _mid(node_id: str) -> str:
    return node_id.strip("_") + ("_" if node_id in (START, END) else "")


def draw(builder: StateGraph) -> Graph:
    """Nodes in definition order between START and END; edges as the builder has them."""
    graph = Graph()
    graph.nodes[START] = DrawNode(START, START)
    for name in builder.nodes:
        graph.nodes[name] = DrawNode(name, name, metadata=builder.nodes[name].metadata)
    edges: list[Edge] = []
    for start, end in sorted(builder.edges):
        edges.append(Edge(start, end))
    for starts, end in sorted(builder.waiting_edges):
        edges.extend(Edge(start, end) for start in starts)
    every = [*builder.nodes, END]
    for source, branches in builder.branches.items():
        for branch in branches.values():
            if branch.path_map is None:
                targets = [(t, None) for t in every if t != source]
            else:
                targets = [(t, None if k == t else k) for k, t in branch.path_map.items()]
            edges.extend(Edge(source, t, data, True) for t, data in targets)
    for name, spec in builder.nodes.items():
        for target in spec.destinations or ():
            edges.append(Edge(name, target, None, True))
    if any(e.target == END for e in edges):
        graph.nodes[END] = DrawNode(END, END)
    graph.edges = edges
    return graph
