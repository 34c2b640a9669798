"""Small builders shared by the agent tests."""

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from app.agents.reminder_store import REMINDER_STORE, InMemoryReminderStore, ReminderStore
from app.agents.reminders import build_graph
from app.api import demo
from app.chat_models.scripted import ScriptedChatModel
from engine import CompiledGraph, InMemorySaver
from tests.helpers import said

Serve = Callable[[FastAPI], Awaitable[str]]
"""Starts an app on a free local port and returns its base URL (the `serve` fixture)."""


def demo_app() -> FastAPI:
    """The forecast endpoint alone, as the server mounts it."""
    app = FastAPI()
    app.include_router(demo.router)
    return app


def compile_agent(
    model: BaseChatModel | None = None, store: ReminderStore | None = None
) -> CompiledGraph:
    """The agent on an in-memory saver; every call's config hands it `store` (a fresh
    in-memory one by default) as the server hands each run its own."""
    graph = build_graph(model or ScriptedChatModel()).compile(checkpointer=InMemorySaver())
    handed = {REMINDER_STORE: store or InMemoryReminderStore()}
    # A binding merges its config into every call that takes one, state reads included.
    return graph.with_config(configurable=handed)  # type: ignore[return-value]


def thread(thread_id: str = "thread-1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


ask = said
"""The input of a turn: one human message (`tests.helpers.said`)."""


class CannedModel(BaseChatModel):
    """Replies with the given messages in order and records what it was asked."""

    replies: list[AIMessage]
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    def __init__(self, *replies: AIMessage) -> None:
        super().__init__(replies=list(replies))

    @property
    def _llm_type(self) -> str:
        return "canned"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "CannedModel":
        """The replies are canned: the tools offered change nothing."""
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls.append(messages)
        return ChatResult(generations=[ChatGeneration(message=self.replies[len(self.calls) - 1])])
