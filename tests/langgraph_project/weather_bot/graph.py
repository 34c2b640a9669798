"""The bot: one node that answers with the forecast of the city in the run's context,
greets as the project's `.env` says, and remembers the cities asked about in the store."""

import os
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from weather_bot.forecast import forecast_for


@dataclass
class Context:
    city: str = "Paris"


def build(shout: bool = False) -> StateGraph:
    async def answer(state: MessagesState, runtime: Runtime[Context]) -> dict[str, Any]:
        city = runtime.context.city
        if runtime.store is not None:
            await runtime.store.aput(("cities",), city, {"asked": True})
        text = f"{os.environ['GREETING']} {forecast_for(city)}"
        return {"messages": [AIMessage(text.upper() if shout else text)]}

    return (
        StateGraph(MessagesState, context_schema=Context)
        .add_node("answer", answer)
        .add_edge(START, "answer")
    )


graph = build().compile()


def make_graph(config: RunnableConfig) -> Any:
    """A graph factory: the server calls it for each run, with the run's config."""
    return build(shout=bool(config.get("configurable", {}).get("shout"))).compile()
