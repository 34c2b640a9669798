"""Graphs the API tests serve (THREADLINE_GRAPHS points here)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from app.models.base import StreamingChatModel
from engine import END, START, MessagesState, StateGraph, interrupt


class EchoModel(StreamingChatModel):
    """Says back the last message word by word, as reply-<number of messages>."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        words = f"You said: {messages[-1].text if messages else ''}".split(" ")
        for i, word in enumerate(words):
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=word if i == 0 else " " + word,
                    id=f"reply-{len(messages)}",
                    chunk_position="last" if i == len(words) - 1 else None,
                )
            )

    async def _achunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, stop, options):
            yield chunk


echo_model = EchoModel()


async def talk(state: MessagesState) -> dict[str, Any]:
    """A node calling a chat model: its reply streams in `messages` mode."""
    return {"messages": [await echo_model.ainvoke(state["messages"])]}


echo = StateGraph(MessagesState).add_node("talk", talk).add_edge(START, "talk")


class AskState(TypedDict, total=False):
    question: str
    answers: Annotated[list[str], operator.add]


def ask(state: AskState) -> dict[str, Any]:
    answer = interrupt({"question": state.get("question", "?")})
    return {"answers": [str(answer)]}


def done(state: AskState) -> dict[str, Any]:
    return {"answers": ["done"]}


asker = (
    StateGraph(AskState)
    .add_node("ask", ask)
    .add_node("done", done)
    .add_edge(START, "ask")
    .add_edge("ask", "done")
    .add_edge("done", END)
)


class SlowState(TypedDict, total=False):
    delay: float
    log: Annotated[list[str], operator.add]


async def step(state: SlowState) -> dict[str, Any]:
    await asyncio.sleep(state.get("delay", 0.0))
    return {"log": ["step"]}


async def step2(state: SlowState) -> dict[str, Any]:
    await asyncio.sleep(state.get("delay", 0.0))
    return {"log": ["step2"]}


slow = (
    StateGraph(SlowState)
    .add_node("step", step)
    .add_node("step2", step2)
    .add_edge(START, "step")
    .add_edge("step", "step2")
)


def spin(state: SlowState) -> dict[str, Any]:
    return {"log": ["spin"]}


looping = (
    StateGraph(SlowState).add_node("spin", spin).add_edge(START, "spin").add_edge("spin", "spin")
)

GRAPHS = {
    "echo": "tests.api.graphs:echo",
    "asker": "tests.api.graphs:asker",
    "slow": "tests.api.graphs:slow",
    "looping": "tests.api.graphs:looping",
}

# A graph whose node is a graph: its state lives in a checkpoint namespace of its own.
inner = StateGraph(AskState).add_node("ask", ask).add_edge(START, "ask").compile()
nested = StateGraph(AskState).add_node("inner", inner).add_edge(START, "inner")
GRAPHS["nested"] = "tests.api.graphs:nested"
