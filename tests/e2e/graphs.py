"""A graph with a subgraph, for the run view's versions: a planner whose writer is a graph
of its own (outline, then draft)."""

from langchain_core.messages import AIMessage

from engine.graph import START, MessagesState, StateGraph


def plan(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage("plan: ask the writer")]}


def outline(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage("outline")]}


def draft(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage("draft")]}


writer = (
    StateGraph(MessagesState)
    .add_node("outline", outline)
    .add_node("draft", draft)
    .add_edge(START, "outline")
    .add_edge("outline", "draft")
    .compile()
)
planner = (
    StateGraph(MessagesState)
    .add_node("plan", plan)
    .add_node("writer", writer)
    .add_edge(START, "plan")
    .add_edge("plan", "writer")
)
GRAPHS = {"agent": "app.agents.reminders:graph", "planner": "tests.e2e.graphs:planner"}
