"""The Pregel run model: tasks in supersteps, writes applied at the barrier.

`Pregel` builds a graph from channels by hand (LangGraph's low-level API, with
`NodeBuilder`), and is also what LangGraph programs test a compiled graph against:
`isinstance(graph, Pregel)` holds for every compiled graph, as every LangGraph one is a
Pregel.
"""

from engine.pregel.main import NodeBuilder, Pregel

__all__ = ["NodeBuilder", "Pregel"]
