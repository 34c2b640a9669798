"""The Pregel run model: tasks in supersteps, writes applied at the barrier.

`Pregel` is here for what LangGraph programs do with the name: annotate a compiled graph
(`def build() -> Pregel`) and test for one (`isinstance(graph, Pregel)`). Building a graph
from channels by hand, LangGraph's low-level API (`Pregel(...)`, `NodeBuilder()`), is not
supported: calling either says so.
"""

from typing import Any

from engine.pregel.graph import CompiledGraph

__all__ = ["NodeBuilder", "Pregel"]


class _CompiledGraphName(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, CompiledGraph)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, CompiledGraph)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "Building a graph from channels by hand (LangGraph's low-level Pregel API) is "
            "not supported: build a StateGraph (or an @entrypoint) and compile it."
        )


class Pregel(metaclass=_CompiledGraphName):
    """A compiled graph, as a name: `isinstance(graph, Pregel)` holds for every one."""


class NodeBuilder(metaclass=_CompiledGraphName):
    """LangGraph's builder of a low-level Pregel node, as a name only: making one says
    that graphs are built with a StateGraph here."""
