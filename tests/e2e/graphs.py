"""The graphs of the end-to-end tests: a planner whose writer is a graph of its own
(outline, then draft), for the run view's versions; and a scripted assistant for what the
default one cannot do on demand (below)."""

import asyncio
import re
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk

from app.chat_models.base import StreamingChatModel
from engine import END, interrupt
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


# ---- a scripted assistant, for what the default one cannot do on demand -----------------
# A test module that needs it registers it as "agent" (the page's assistant) by overriding
# the `graphs` fixture: `long...` streams a long reply slowly (time to scroll, select or
# stop), `slow...` a short one (40 pieces in about a second), `boom...` streams some of a
# reply and then fails (the first time), `ask...` asks a free question, `table...` answers
# a wide table, `tool...` makes a call with long arguments; anything else is echoed.

LONG = " ".join(f"word{i}" + ("\n\n" if i % 30 == 29 else "") for i in range(1500))
_FAILED: set[str | None] = set()  # the messages a `boom` already failed on
LONG_ARGS = {"query": "a very long query " * 12 + "THE END", "limit": 3}


class Words(StreamingChatModel):
    """Streams `text` word by word, `pace` seconds apart; fails at word `fail_at`."""

    text: str = ""
    pace: float = 0.0
    fail_at: int = -1

    @property
    def _llm_type(self) -> str:
        return "e2e-words"

    def _chunks(self, messages: Any, stop: Any, options: Any) -> Any:
        raise NotImplementedError

    async def _achunks(self, messages: Any, stop: Any, options: Any) -> Any:
        for i, word in enumerate(re.findall(r"\s*\S+", self.text)):
            if i == self.fail_at:
                raise RuntimeError("the model broke mid-reply")
            if self.pace:
                await asyncio.sleep(self.pace)
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))


def _asked(state: MessagesState) -> str:
    last = next(m for m in reversed(state["messages"]) if isinstance(m, HumanMessage))
    return last.text.strip()


async def answer(state: MessagesState) -> dict[str, list[Any]]:
    asked = _asked(state)
    if asked.startswith("long"):
        return {"messages": [await Words(text=LONG, pace=0.02).ainvoke(state["messages"])]}
    if asked.startswith("slow"):
        words = Words(text=" ".join(LONG.split()[:40]), pace=0.02)
        return {"messages": [await words.ainvoke(state["messages"])]}
    if asked.startswith("boom"):
        # Fails the first time it is asked, mid-reply; a retry gets the whole reply.
        first = state["messages"][-1].id not in _FAILED
        _FAILED.add(state["messages"][-1].id)
        words = Words(text=" ".join(LONG.split()[:60]), pace=0.01, fail_at=40 if first else -1)
        return {"messages": [await words.ainvoke(state["messages"])]}
    if asked.startswith("ask"):
        said = interrupt({"question": "What is your favourite colour?"})
        return {"messages": [AIMessage(f"Your answer: {said}")]}
    if asked.startswith("table"):
        head = " | ".join(f"Headerword{i}longer" for i in range(8))
        row = " | ".join(f"cell{i}" for i in range(8))
        table = f"| {head} |\n|{'---|' * 8}\n| {row} |"
        return {"messages": [AIMessage(table)]}
    if asked.startswith("tool"):
        call = {"name": "lookup", "args": LONG_ARGS, "id": f"call_{len(state['messages'])}"}
        return {
            "messages": [
                AIMessage("", tool_calls=[call]),
                ToolMessage('{"found": 3}', tool_call_id=call["id"], name="lookup"),
                AIMessage("Looked it up."),
            ]
        }
    return {"messages": [await Words(text=f"Echo: {asked}").ainvoke(state["messages"])]}


scripted = StateGraph(MessagesState).add_node("answer", answer).add_edge(START, "answer")
scripted = scripted.add_edge("answer", END)
SCRIPTED_GRAPHS = {"agent": "tests.e2e.graphs:scripted"}
