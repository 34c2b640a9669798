"""The type variables graphs, nodes and runtimes are generic over, for annotating code
that is generic over graphs too (as LangGraph's `langgraph.typing`)."""

from __future__ import annotations

from typing_extensions import TypeVar

__all__ = (
    "ContextT",
    "ContextT_contra",
    "InputT",
    "NodeInputT",
    "NodeInputT_contra",
    "OutputT",
    "StateT",
    "StateT_co",
    "StateT_contra",
)

StateT = TypeVar("StateT")
"""A graph's state."""
StateT_co = TypeVar("StateT_co", covariant=True)
StateT_contra = TypeVar("StateT_contra", contravariant=True)
ContextT = TypeVar("ContextT", default=None)
"""A run's context (`Runtime.context`); None when the graph has no context schema."""
ContextT_contra = TypeVar("ContextT_contra", contravariant=True, default=None)
InputT = TypeVar("InputT", default=StateT)
"""What a graph takes: its state unless it declares an input schema."""
OutputT = TypeVar("OutputT", default=StateT)
"""What a graph returns: its state unless it declares an output schema."""
NodeInputT = TypeVar("NodeInputT")
"""What a node takes."""
NodeInputT_contra = TypeVar("NodeInputT_contra", contravariant=True)
