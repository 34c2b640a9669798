"""Any OpenAI-compatible chat completions endpoint, streamed over httpx.

Provider trouble never hangs a run: every request has a timeout; rate limits, 5xx answers,
timeouts and unreachable servers are retried with backoff a few times; bad credentials and
other refusals fail the run at once with a `ModelProviderError` saying what went wrong.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import ToolCallChunk, tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from pydantic import SecretStr

from app.chat_models.base import DEFAULT_OPENAI_BASE_URL, ModelProviderError, StreamingChatModel


class _Transient(Exception):
    """A failure worth another attempt (it is not shown to anyone unless retries run out)."""


class OpenAIChatModel(StreamingChatModel):
    """Chat completions with `stream: true`, one chunk per streamed delta."""

    model: str
    base_url: str = DEFAULT_OPENAI_BASE_URL
    api_key: SecretStr | None = None
    timeout_s: float = 60.0
    max_attempts: int = 3
    backoff_s: float = 1.0

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def headers(self) -> dict[str, str]:
        key = self.api_key.get_secret_value() if self.api_key else ""
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        payload = self._payload(messages, stop, options)
        attempt = 1
        while True:
            try:
                yield from self._attempt(payload)
                return
            except _Transient as exc:
                time.sleep(self._backoff(attempt, exc))
            attempt += 1

    async def _achunks(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> AsyncIterator[ChatGenerationChunk]:
        payload = self._payload(messages, stop, options)
        attempt = 1
        while True:
            try:
                async for chunk in self._aattempt(payload):
                    yield chunk
                return
            except _Transient as exc:
                await asyncio.sleep(self._backoff(attempt, exc))
            attempt += 1

    def _payload(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> dict[str, Any]:
        """The request body; `tools` and `tool_choice` come from `bind_tools`."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "stream": True,
        }
        if stop:
            payload["stop"] = stop
        for key in ("tools", "tool_choice"):
            if options.get(key):
                payload[key] = options[key]
        return payload

    def _backoff(self, attempt: int, exc: _Transient) -> float:
        """Seconds to wait before the next attempt; a `ModelProviderError` when none is left."""
        if attempt >= self.max_attempts:
            raise ModelProviderError(
                f"The model provider at {self.url} failed {attempt} times; last: {exc}"
            ) from exc
        return self.backoff_s * 2 ** (attempt - 1)

    def _attempt(self, payload: dict[str, Any]) -> Iterator[ChatGenerationChunk]:
        reader = _Reader()
        try:
            with (
                httpx.Client(timeout=self.timeout_s) as client,
                client.stream("POST", self.url, json=payload, headers=self.headers) as response,
            ):
                if response.status_code >= 400:
                    response.read()
                    raise _status_error(response)
                for line in response.iter_lines():
                    if (chunk := reader.read(line)) is not None:
                        yield chunk
                    if reader.done:
                        break
        except httpx.HTTPError as exc:
            raise reader.broken(exc, self.timeout_s) from exc
        reader.check_complete()

    async def _aattempt(self, payload: dict[str, Any]) -> AsyncIterator[ChatGenerationChunk]:
        reader = _Reader()
        try:
            async with (
                httpx.AsyncClient(timeout=self.timeout_s) as client,
                client.stream("POST", self.url, json=payload, headers=self.headers) as response,
            ):
                if response.status_code >= 400:
                    await response.aread()
                    raise _status_error(response)
                async for line in response.aiter_lines():
                    if (chunk := reader.read(line)) is not None:
                        yield chunk
                    if reader.done:
                        break
        except httpx.HTTPError as exc:
            raise reader.broken(exc, self.timeout_s) from exc
        reader.check_complete()


class _Reader:
    """One attempt's server-sent events of `chat.completion.chunk` objects, as chunks."""

    def __init__(self) -> None:
        self.started = False
        self.done = False
        # Some compatible servers omit tool call ids; a tool result needs one to answer to.
        self.call_ids: dict[int, str] = {}

    def read(self, line: str) -> ChatGenerationChunk | None:
        """The chunk a line carries: the first choice's delta, if it has one."""
        if not line.startswith("data:"):
            return None
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return None
        try:
            event = json.loads(data)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            raise ModelProviderError(f"The model provider sent malformed JSON: {data[:200]}")
        if event.get("error"):
            raise ModelProviderError(f"The model provider reported an error: {event['error']}")
        for choice in event.get("choices") or []:
            if choice.get("index", 0) == 0:
                self.started = True
                return ChatGenerationChunk(message=self._chunk(choice, event.get("model")))
        return None

    def _chunk(self, choice: dict[str, Any], model: str | None) -> AIMessageChunk:
        delta = choice.get("delta") or {}
        # Once per message, on the last chunk: merging chunks concatenates strings.
        finish = choice.get("finish_reason")
        return AIMessageChunk(
            content=delta.get("content") or "",
            response_metadata={"finish_reason": finish, "model_name": model} if finish else {},
            tool_call_chunks=[self._call_chunk(tc) for tc in delta.get("tool_calls") or []],
            chunk_position="last" if finish else None,
        )

    def _call_chunk(self, delta: dict[str, Any]) -> ToolCallChunk:
        function = delta.get("function") or {}
        index = delta.get("index") or 0
        call_id = delta.get("id")
        if index not in self.call_ids:
            self.call_ids[index] = call_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
        return tool_call_chunk(
            name=function.get("name"), args=function.get("arguments"), id=call_id, index=index
        )

    def broken(self, exc: httpx.HTTPError, timeout_s: float) -> Exception:
        """What a transport failure means: retry it, unless chunks already went out (a
        retry would garble the message they started)."""
        problem = (
            f"no answer within {timeout_s:g}s"
            if isinstance(exc, httpx.TimeoutException)
            else f"{type(exc).__name__}: {exc}"
        )
        if self.started:
            return ModelProviderError(f"The model's reply broke off: {problem}")
        return _Transient(problem)

    def check_complete(self) -> None:
        if not self.started:
            raise ModelProviderError("The model provider sent an empty reply.")


def _status_error(response: httpx.Response) -> Exception:
    """401/403 and other 4xx are not retried: waiting does not fix a key or a request."""
    code = response.status_code
    detail = _error_detail(response)
    if code in (401, 403):
        return ModelProviderError(
            f"The model provider refused the credentials (HTTP {code}): {detail}. "
            "Check THREADLINE_OPENAI_API_KEY."
        )
    if code in (408, 429) or code >= 500:
        return _Transient(f"HTTP {code}: {detail}")
    return ModelProviderError(f"The model provider rejected the request (HTTP {code}): {detail}")


def _error_detail(response: httpx.Response) -> str:
    """OpenAI's `{"error": {"message": ...}}`, else the start of the body."""
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return response.text[:200] or response.reason_phrase
    return str(message)


def to_openai_messages(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """Messages in chat completions form; content blocks are flattened to their text."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.text})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": m.text})
        elif isinstance(m, AIMessage):
            item: dict[str, Any] = {"role": "assistant", "content": m.text}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": tc["id"],
                        "type": "function",
                        "function": {"name": tc["name"], "arguments": json.dumps(tc["args"])},
                    }
                    for tc in m.tool_calls
                ]
            out.append(item)
        elif isinstance(m, ToolMessage):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
        else:
            raise ValueError(f"Cannot send a {m.type!r} message to a chat completions endpoint.")
    return out
