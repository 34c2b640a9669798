"""The reminder agent over other chat models than the scripted one, for API tests.

`graph`: an OpenAI-compatible model whose provider's URL is read per call from
THREADLINE_TEST_PROVIDER_URL (as the forecast tool reads its URL), so each test can point
the served graph at a fake provider of its own.

`fake_graph`: LangChain's own fake chat model, which streams its replies word by word.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from app.agents.reminders import build_graph
from app.chat_models.openai import OpenAIChatModel

PROVIDER_URL_VARIABLE = "THREADLINE_TEST_PROVIDER_URL"


class ProviderFromEnv(OpenAIChatModel):
    """An `OpenAIChatModel` at the provider the environment names when it is called."""

    @property
    def url(self) -> str:
        return os.environ[PROVIDER_URL_VARIABLE].rstrip("/") + "/chat/completions"


# One attempt: the provider's refusal fails the run.
graph = build_graph(model=ProviderFromEnv(model="fake-model", timeout_s=10, max_attempts=1))


FAKE_REPLY = "Hello from LangChain's fake chat model, streamed word by word."


class FakeChatModel(GenericFakeChatModel):
    """`GenericFakeChatModel` in an agent: it has no tools to bind, and never calls one."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeChatModel:
        return self


fake_graph = build_graph(model=FakeChatModel(messages=itertools.cycle([AIMessage(FAKE_REPLY)])))
