"""The reminder agent over an OpenAI-compatible model, for API tests of provider failures.

The provider's URL is read per call from THREADLINE_TEST_PROVIDER_URL (as the forecast tool
reads its URL), so each test can point the served graph at a fake provider of its own.
"""

from __future__ import annotations

import os
from typing import Any

from app.agents.reminders import build_graph
from app.models.openai import OpenAIChatModel
from engine import AIMessage, BaseMessage

PROVIDER_URL_VARIABLE = "THREADLINE_TEST_PROVIDER_URL"


class ProviderFromEnv:
    """An `OpenAIChatModel` at the provider the environment names, with no retries."""

    async def respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        """Ask the provider once; its refusal fails the run."""
        model = OpenAIChatModel(
            "fake-model", base_url=os.environ[PROVIDER_URL_VARIABLE], timeout_s=10, max_attempts=1
        )
        return await model.respond(messages, tools)


graph = build_graph(model=ProviderFromEnv())
