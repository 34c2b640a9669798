"""What the server's chat models share, and how the server picks one.

They are LangChain chat models: a node calls one as any LangGraph node would
(`model.bind_tools(tools).ainvoke(messages)`), and LangChain hands every chunk it streams
to the engine's callback handler, which turns them into `messages` stream events. A
provider implements `_chunks` and `_achunks` only: LangChain's entry points are here once,
and a reply nobody streams is the same chunks added up, so both paths give the same message.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from app.config import Settings, get_settings

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
# Seconds between two streamed pieces of the scripted model's reply: a person typing fast
# (THREADLINE_SCRIPTED_PACE_S's default).
HUMAN_PACE_S: float = Settings.model_fields["scripted_pace_s"].default


class ModelProviderError(RuntimeError):
    """The provider failed in a way retrying will not fix (or retries ran out): a run error."""


class StreamingChatModel(BaseChatModel):
    """A chat model whose every reply is a stream; tools are bound as OpenAI schemas."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with `tools` (any form LangChain converts) passed on every call."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    @abstractmethod
    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        """The reply to `messages`, chunk by chunk; `options` are the call's keyword
        arguments (`tools`, `tool_choice` from `bind_tools`)."""

    @abstractmethod
    def _achunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> AsyncIterator[ChatGenerationChunk]:
        """`_chunks` for async callers."""

    # LangChain reports each streamed chunk to the run's callbacks itself: providers need
    # no run manager.

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        return self._chunks(messages, stop, kwargs)

    def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        return self._achunks(messages, stop, kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return generate_from_stream(self._chunks(messages, stop, kwargs))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Added up in place: LangChain's `agenerate_from_stream` hops to a thread for it.
        chunks = [chunk async for chunk in self._achunks(messages, stop, kwargs)]
        return generate_from_stream(iter(chunks))


class ModelConfigError(ValueError):
    """THREADLINE_MODEL names a model the server cannot build (the server refuses to start)."""


def load_model(spec: str | None = None, settings: Settings | None = None) -> BaseChatModel:
    """The model named by `spec` or THREADLINE_MODEL (`settings`: the environment's).

    - `scripted` (the default): offline and deterministic; THREADLINE_SCRIPTED_PACE_S is the
      pause between two streamed pieces (default a human pace; 0 in tests).
    - `openai:<model>` with THREADLINE_OPENAI_BASE_URL set: the built-in client of any
      OpenAI-compatible server (vLLM, llama.cpp, LM Studio, Ollama's /v1), keyed by
      THREADLINE_OPENAI_API_KEY; it needs no other package.
    - any other `<provider>:<model>`: LangChain's `init_chat_model`, which needs the
      `langchain` package and the provider's own (`langchain-anthropic`, ...), and reads
      the provider's usual variables (`ANTHROPIC_API_KEY`, ...).
    """
    settings = settings or get_settings()
    spec = (spec or settings.model).strip()
    if spec == "scripted":
        from app.chat_models.scripted import ScriptedChatModel

        return ScriptedChatModel(pace_s=settings.scripted_pace_s)
    provider, _, name = spec.partition(":")
    if provider == "openai" and name and settings.openai_base_url:
        from app.chat_models.openai import OpenAIChatModel

        return OpenAIChatModel(
            model=name,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key or None,
        )
    return _init_chat_model(spec)


def _init_chat_model(spec: str) -> BaseChatModel:
    """LangChain's `init_chat_model(spec)`; what it lacks or refuses, said in one sentence."""
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise ModelConfigError(
            f"THREADLINE_MODEL={spec!r} needs LangChain's init_chat_model: install the "
            "`langchain` package (threadline's `models` extra) and the provider's package "
            "(langchain-openai, langchain-anthropic, langchain-ollama, ...); or use 'scripted'."
        ) from None
    try:
        return init_chat_model(spec)
    except ImportError as exc:  # the provider's package: LangChain's message names it
        raise ModelConfigError(f"THREADLINE_MODEL={spec!r}: {exc}") from None
    except Exception as exc:  # an unknown provider, missing credentials: the provider's words
        raise ModelConfigError(f"THREADLINE_MODEL={spec!r} cannot be built: {exc}") from exc
