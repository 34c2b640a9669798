"""Threadline's echo graph (app.agents.echo) written against LangGraph, for the reference
server in bench/turns.py (`langgraph dev --config langgraph-echo.json` in this folder
serves it as `echo`).

    START -> reply -> END
"""

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph


def reply(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1] if state["messages"] else None
    text = last.text if last is not None else ""
    return {"messages": [AIMessage(f"You said: {text}")]}


graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply").compile()
