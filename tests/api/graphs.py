"""Graphs the API tests serve (THREADLINE_GRAPHS points here)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool

from app.chat_models.base import StreamingChatModel
from engine import END, START, MessagesState, StateGraph, interrupt
from engine.func import entrypoint


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


async def redact(state: MessagesState) -> dict[str, Any]:
    """On "redact", blank the earlier turns' messages in place and write them back (same
    ids), as a privacy filter might; else talk."""
    *earlier, last = state["messages"]
    if last.text != "redact":
        return await talk(state)
    for message in earlier:
        message.content = "[redacted]"
    return {"messages": earlier}


redactor = StateGraph(MessagesState).add_node("redact", redact).add_edge(START, "redact")


class AskState(TypedDict, total=False):
    question: str
    answers: Annotated[list[str], operator.add]


def ask(state: AskState) -> dict[str, Any]:
    answer = interrupt({"question": state.get("question", "?")})
    return {"answers": [str(answer)]}


@tool
def count_answers(answers: list[str]) -> int:
    """How many answers were given."""
    return len(answers)


def done(state: AskState) -> dict[str, Any]:
    # A tool called from a sync node: its callbacks fire in the node's worker thread.
    count_answers.invoke({"answers": state.get("answers", [])})
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
    "redactor": "tests.api.graphs:redactor",
}


class ClashState(TypedDict, total=False):
    x: str


def put_x(state: ClashState) -> dict[str, Any]:
    return {"x": "put"}


def ask_x(state: ClashState) -> dict[str, Any]:
    return {"x": interrupt("x?")}


# Two nodes of one step write `x`, which takes one value a step: the answer to the second
# one's question fails the run, and leaves writes that no read of the state can apply.
clash = (
    StateGraph(ClashState)
    .add_node("put", put_x)
    .add_node("ask", ask_x)
    .add_edge(START, "put")
    .add_edge(START, "ask")
)
GRAPHS["clash"] = "tests.api.graphs:clash"
# The same clash one step into a run, which fails there.
clash_later = (
    StateGraph(ClashState)
    .add_node("first", lambda state: {})
    .add_node("put", put_x)
    .add_node("again", put_x)
    .add_edge(START, "first")
    .add_edge("first", "put")
    .add_edge("first", "again")
)
GRAPHS["clash_later"] = "tests.api.graphs:clash_later"

# A graph whose node is a graph: its state lives in a checkpoint namespace of its own.
inner = StateGraph(AskState).add_node("ask", ask).add_edge(START, "ask").compile()
nested = StateGraph(AskState).add_node("inner", inner).add_edge(START, "inner")
GRAPHS["nested"] = "tests.api.graphs:nested"


# A supervisor whose sub-agent is a graph of its own. The researcher drafts (counting
# its drafts in notes of its own, which the supervisor does not see), then asks for a
# review (`interrupt()`): "revise" sends it back to draft again, "ok" hands the draft to
# the supervisor, which reports it; "boom" breaks the reviewer.
class ResearchState(MessagesState):
    notes: Annotated[list[str], operator.add]


def draft(state: ResearchState) -> dict[str, Any]:
    text = f"draft {len(state.get('notes', [])) + 1}"
    return {"messages": [AIMessage(text)], "notes": [text]}


def review(state: ResearchState) -> dict[str, Any]:
    answer = interrupt({"question": "approve?", "draft": state["messages"][-1].text})
    if answer == "boom":
        raise ValueError("the reviewer broke")
    return {"messages": [HumanMessage(f"review: {answer}")]}


def reviewed(state: ResearchState) -> str:
    return END if state["messages"][-1].text == "review: ok" else "draft"


def plan(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage("plan: ask the researcher")]}


def report(state: MessagesState) -> dict[str, Any]:
    [last] = [m.text for m in state["messages"] if m.text.startswith("draft")][-1:]
    return {"messages": [AIMessage(f"report: {last}")]}


def supervised(**researcher_compile: Any) -> StateGraph:
    researcher = (
        StateGraph(ResearchState)
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_conditional_edges("review", reviewed, ["draft", END])
        .compile(**researcher_compile)
    )
    return (
        StateGraph(MessagesState)
        .add_node("plan", plan)
        .add_node("researcher", researcher)
        .add_node("report", report)
        .add_edge(START, "plan")
        .add_edge("plan", "researcher")
        .add_edge("researcher", "report")
    )


supervisor = supervised()
GRAPHS["supervisor"] = "tests.api.graphs:supervisor"
# Its researcher keeps its state from one turn to the next: a sub-agent with a memory.
remembering = supervised(checkpointer=True)
GRAPHS["remembering"] = "tests.api.graphs:remembering"


# LangGraph's essay-review tutorial: a functional-API workflow whose input is a string.
@entrypoint()
def essay(topic: str) -> dict[str, Any]:
    text = f"An essay about {topic}"
    return {"essay": text, "review": interrupt({"essay": text, "action": "review it"})}


GRAPHS["essay"] = "tests.api.graphs:essay"


@entrypoint()
def tally(counts: dict[str, int]) -> dict[str, int]:
    """A workflow whose input is any object (its keys are the caller's)."""
    return {"total": sum(counts.values())}


GRAPHS["tally"] = "tests.api.graphs:tally"


@entrypoint()
def shout(text: str) -> str:
    """A workflow whose output is text, not an object: its thread's values are text."""
    if text == "ask":
        return interrupt("what shall I shout?").upper()
    if text == "half":  # a lone surrogate, which no client may send but code may make
        return "x\ud800y"
    return text.upper()


GRAPHS["shout"] = "tests.api.graphs:shout"


@entrypoint()
def power(exponent: int) -> dict[str, int]:
    """A workflow whose values hold an int no client may send: beyond 64 bits."""
    return {"value": 10**exponent}


GRAPHS["power"] = "tests.api.graphs:power"
