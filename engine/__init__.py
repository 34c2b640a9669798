"""Threadline's graph engine: the Pregel run model, with LangGraph's public names.

A LangGraph program ports by changing `langgraph` to `engine` in its import lines; the
common names are offered here too.
"""

from engine.checkpoint.memory import InMemorySaver, MemorySaver
from engine.config import get_config, get_store, get_stream_writer
from engine.constants import END, START
from engine.errors import (
    EmptyInputError,
    GraphInterrupt,
    GraphRecursionError,
    InvalidUpdateError,
    NodeInterrupt,
)
from engine.graph.message import REMOVE_ALL_MESSAGES, MessagesState, add_messages
from engine.graph.state import CompiledStateGraph, StateGraph
from engine.pregel.graph import CompiledGraph
from engine.runtime import Runtime, get_runtime
from engine.types import (
    CachePolicy,
    Command,
    Interrupt,
    Overwrite,
    PregelTask,
    RetryPolicy,
    Send,
    StateSnapshot,
    interrupt,
)

__all__ = [
    "END",
    "REMOVE_ALL_MESSAGES",
    "START",
    "CachePolicy",
    "Command",
    "CompiledGraph",
    "CompiledStateGraph",
    "EmptyInputError",
    "GraphInterrupt",
    "GraphRecursionError",
    "InMemorySaver",
    "Interrupt",
    "InvalidUpdateError",
    "MemorySaver",
    "MessagesState",
    "NodeInterrupt",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "Runtime",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "add_messages",
    "get_config",
    "get_runtime",
    "get_store",
    "get_stream_writer",
    "interrupt",
]
