"""Ready-made agent parts, as in `langgraph.prebuilt`: the tools node and its router,
the ReAct agent, and the tool-call validation node."""

from engine.prebuilt.chat_agent_executor import create_react_agent
from engine.prebuilt.tool_node import (
    InjectedState,
    InjectedStore,
    ToolNode,
    ToolRuntime,
    tools_condition,
)
from engine.prebuilt.tool_validator import ValidationNode

__all__ = [
    "InjectedState",
    "InjectedStore",
    "ToolNode",
    "ToolRuntime",
    "ValidationNode",
    "create_react_agent",
    "tools_condition",
]
