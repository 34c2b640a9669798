"""Building graphs: the StateGraph builder, its entry and exit, and message state."""

from engine.constants import END, START
from engine.graph.message import MessagesState, add_messages
from engine.graph.message_graph import MessageGraph
from engine.graph.state import CompiledStateGraph, StateGraph

__all__ = [
    "END",
    "START",
    "CompiledStateGraph",
    "MessageGraph",
    "MessagesState",
    "StateGraph",
    "add_messages",
]
