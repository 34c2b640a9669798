"""What the agent needs from a chat model, and how the server picks one.

A model streams each piece of its reply to `get_message_writer()` as it goes (the engine
turns those into `messages` stream events tagged with the node and step) and returns the
finished `AIMessage`, carrying the same id as its chunks.
"""

import os
from typing import Any, Protocol

from engine import AIMessage, AIMessageChunk, BaseMessage, get_message_writer

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"


class ChatModel(Protocol):
    """A chat model the agent can call with its conversation and tool schemas."""

    async def respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        """Reply to `messages`, possibly with calls to `tools` (OpenAI function schemas)."""
        ...


class ModelProviderError(RuntimeError):
    """The provider failed in a way retrying will not fix (or retries ran out): a run error."""


def emit(chunk: AIMessageChunk) -> None:
    """Stream one chunk of the reply being written (a no-op outside a graph run)."""
    get_message_writer()(chunk)


def load_model(spec: str | None = None) -> ChatModel:
    """The model named by `spec` or THREADLINE_MODEL: `scripted` (default) or
    `openai:<model>` (THREADLINE_OPENAI_BASE_URL, THREADLINE_OPENAI_API_KEY)."""
    spec = (spec or os.environ.get("THREADLINE_MODEL") or "scripted").strip()
    provider, _, name = spec.partition(":")
    if provider == "scripted" and not name:
        from app.models.scripted import ScriptedChatModel

        return ScriptedChatModel()
    if provider == "openai" and name:
        from app.models.openai import OpenAIChatModel

        return OpenAIChatModel(
            model=name,
            base_url=os.environ.get("THREADLINE_OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL,
            api_key=os.environ.get("THREADLINE_OPENAI_API_KEY") or None,
        )
    raise ValueError(f"Unknown model {spec!r}: use 'scripted' or 'openai:<model name>'.")
