"""`PregelProtocol`: what LangGraph programs annotate a runnable graph with
(`def build() -> PregelProtocol`) and test for (`isinstance(graph, PregelProtocol)`).

Every compiled graph is one: `CompiledGraph` is registered as its virtual subclass.
"""

from typing import Any, Generic

from langchain_core.runnables import Runnable

from engine.pregel.graph import CompiledGraph
from engine.typing import ContextT, InputT, OutputT, StateT

__all__ = ["PregelProtocol"]


class PregelProtocol(Runnable[InputT, Any], Generic[StateT, ContextT, InputT, OutputT]):
    """A graph that runs, streams and keeps state: a compiled graph (or a class of the
    program's own that subclasses this and implements the Runnable methods)."""


PregelProtocol.register(CompiledGraph)
