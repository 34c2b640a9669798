"""Any OpenAI-compatible chat completions endpoint, streamed over httpx.

Provider trouble never hangs a run: every request has a timeout; rate limits, 5xx answers,
timeouts and unreachable servers are retried with backoff a few times; bad credentials and
other refusals fail the run at once with a `ModelProviderError` saying what went wrong.
"""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx

from app.models.base import DEFAULT_OPENAI_BASE_URL, ModelProviderError, emit
from engine import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)


class _Transient(Exception):
    """A failure worth another attempt (it is not shown to anyone unless retries run out)."""


class OpenAIChatModel:
    """Chat completions with `stream: true`; tool calls are assembled from their deltas."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_attempts: int = 3,
        backoff_s: float = 1.0,
    ) -> None:
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s

    async def respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        """Stream one reply, retrying transient failures that happen before the first chunk."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "stream": True,
        }
        if tools:
            payload["tools"] = tools
        message_id = str(uuid.uuid4())
        attempt = 1
        while True:
            try:
                return await self._attempt(payload, message_id)
            except _Transient as exc:
                if attempt >= self.max_attempts:
                    raise ModelProviderError(
                        f"The model provider at {self.url} failed {attempt} times; last: {exc}"
                    ) from exc
            await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            attempt += 1

    async def _attempt(self, payload: dict[str, Any], message_id: str) -> AIMessage:
        reply: AIMessageChunk | None = None
        try:
            async with (
                httpx.AsyncClient(timeout=self.timeout_s) as client,
                client.stream("POST", self.url, json=payload, headers=self.headers) as response,
            ):
                if response.status_code >= 400:
                    await response.aread()
                    raise _status_error(response)
                async for chunk in _chunks(response, message_id):
                    emit(chunk)
                    reply = chunk if reply is None else reply + chunk
        except httpx.HTTPError as exc:
            problem = (
                f"no answer within {self.timeout_s:g}s"
                if isinstance(exc, httpx.TimeoutException)
                else f"{type(exc).__name__}: {exc}"
            )
            if reply is not None:
                # Chunks already went out under this id; a retry would garble the message.
                raise ModelProviderError(f"The model's reply broke off: {problem}") from exc
            raise _Transient(problem) from exc
        if reply is None:
            raise ModelProviderError("The model provider sent an empty reply.")
        return _finished(reply)


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


async def _chunks(response: httpx.Response, message_id: str) -> AsyncIterator[AIMessageChunk]:
    """Server-sent events of `chat.completion.chunk` objects, as message chunks."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError as exc:
            raise ModelProviderError(
                f"The model provider sent malformed JSON: {data[:200]}"
            ) from exc
        if isinstance(event, dict) and event.get("error"):
            raise ModelProviderError(f"The model provider reported an error: {event['error']}")
        for choice in event.get("choices") or []:
            if choice.get("index", 0) == 0:
                yield _chunk(choice, event.get("model"), message_id)


def _chunk(choice: dict[str, Any], model: str | None, message_id: str) -> AIMessageChunk:
    delta = choice.get("delta") or {}
    # Once per message, on the last chunk: merging chunks concatenates strings.
    finish = choice.get("finish_reason")
    metadata = {"finish_reason": finish, "model_name": model} if finish else {}
    return AIMessageChunk(
        content=delta.get("content") or "",
        id=message_id,
        response_metadata=metadata,
        tool_call_chunks=[
            {
                "name": (tc.get("function") or {}).get("name"),
                "args": (tc.get("function") or {}).get("arguments"),
                "id": tc.get("id"),
                "index": tc.get("index"),
            }
            for tc in delta.get("tool_calls") or []
        ],
    )


def _finished(reply: AIMessageChunk) -> AIMessage:
    """Some compatible servers omit tool call ids; tool results need one to answer to."""
    message = reply.to_message()
    message.tool_calls = [
        tc if tc["id"] else {**tc, "id": f"call_{uuid.uuid4().hex[:24]}"}
        for tc in message.tool_calls
    ]
    return message


def to_openai_messages(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """Our messages in chat completions form; content blocks are flattened to their text."""
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
