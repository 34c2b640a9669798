"""Threadline's graph engine: the Pregel run model, with LangGraph's public names."""

from engine.checkpoint.memory import InMemorySaver
from engine.errors import (
    EmptyInputError,
    GraphInterrupt,
    GraphRecursionError,
    InvalidUpdateError,
    NodeInterrupt,
)
from engine.graph.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    MessagesState,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    add_messages,
)
from engine.graph.state import StateGraph
from engine.pregel.context import get_config, get_message_writer, get_stream_writer, interrupt
from engine.pregel.graph import CompiledGraph
from engine.types import (
    END,
    START,
    Command,
    Interrupt,
    PregelTask,
    RetryPolicy,
    Send,
    StateSnapshot,
)

__all__ = [
    "END",
    "START",
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "BaseMessage",
    "Command",
    "CompiledGraph",
    "EmptyInputError",
    "GraphInterrupt",
    "GraphRecursionError",
    "HumanMessage",
    "InMemorySaver",
    "Interrupt",
    "InvalidUpdateError",
    "MessagesState",
    "NodeInterrupt",
    "PregelTask",
    "RemoveMessage",
    "RetryPolicy",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "SystemMessage",
    "ToolMessage",
    "add_messages",
    "get_config",
    "get_message_writer",
    "get_stream_writer",
    "interrupt",
]
