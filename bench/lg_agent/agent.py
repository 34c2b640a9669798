"""The reminder agent's shape written against LangGraph, for the reference server in
bench/compare.py (`langgraph dev` in this folder serves it as `agent`).

    START -> model -> END

The model is ours (app.chat_models.scripted), a LangChain chat model, so LangGraph streams its
reply word by word through its own callbacks, as our engine does. `ask_user` and `tools`
are left out and no tools are offered: the benchmark's message ("hello there") never
makes the scripted model call a tool, so our agent takes the same single model step.
"""

from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph

from app.agents.reminders import SYSTEM_PROMPT
from app.chat_models.scripted import ScriptedChatModel

model = ScriptedChatModel()


async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """Like our agent's model node: the system prompt is added per call, never stored."""
    return {"messages": [await model.ainvoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])]}


graph = StateGraph(MessagesState).add_node("model", call_model).add_edge(START, "model").compile()
