"""Small builders shared by the agent tests."""

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI

from app.agents.reminders import build_graph
from app.api import demo
from app.models.base import ChatModel
from app.models.scripted import ScriptedChatModel
from engine import AIMessage, BaseMessage, CompiledGraph, InMemorySaver

Serve = Callable[[FastAPI], Awaitable[str]]
"""Starts an app on a free local port and returns its base URL (the `serve` fixture)."""


def demo_app() -> FastAPI:
    """The forecast endpoint alone, as the server mounts it."""
    app = FastAPI()
    app.include_router(demo.router)
    return app


def compile_agent(model: ChatModel | None = None) -> CompiledGraph:
    return build_graph(model or ScriptedChatModel()).compile(checkpointer=InMemorySaver())


def thread(thread_id: str = "thread-1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


class CannedModel:
    """Replies with the given messages in order and records what it was asked."""

    def __init__(self, *replies: AIMessage) -> None:
        self.replies = list(replies)
        self.calls: list[list[BaseMessage]] = []

    async def respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        self.calls.append(messages)
        return self.replies[len(self.calls) - 1]
