"""A minimal chat graph: replies with what the user said. Handy for trying the API."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from engine import START, MessagesState, StateGraph


def reply(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1] if state["messages"] else None
    text = last.text if last is not None else ""
    return {"messages": [AIMessage(f"You said: {text}")]}


graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")
