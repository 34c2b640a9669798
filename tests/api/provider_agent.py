"""The reminder agent over an OpenAI-compatible model, for API tests of provider failures.

The provider's URL is read per call from THREADLINE_TEST_PROVIDER_URL (as the forecast tool
reads its URL), so each test can point the served graph at a fake provider of its own.
"""

from __future__ import annotations

import os

from app.agents.reminders import build_graph
from app.models.openai import OpenAIChatModel

PROVIDER_URL_VARIABLE = "THREADLINE_TEST_PROVIDER_URL"


class ProviderFromEnv(OpenAIChatModel):
    """An `OpenAIChatModel` at the provider the environment names when it is called."""

    @property
    def url(self) -> str:
        return os.environ[PROVIDER_URL_VARIABLE].rstrip("/") + "/chat/completions"


# One attempt: the provider's refusal fails the run.
graph = build_graph(model=ProviderFromEnv(model="fake-model", timeout_s=10, max_attempts=1))
