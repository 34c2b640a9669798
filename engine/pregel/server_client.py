"""A small client of the Agent Server API (a Threadline or LangGraph server), for
`RemoteGraph`: the calls it makes, under the names and arguments of `langgraph_sdk`'s
clients, so that a `RemoteGraph` takes either this client or the SDK's.

Each call is built once as a `Request` (method, path, body, query) and sent by the sync
client (`httpx.Client`) or the async one (`httpx.AsyncClient`). A run's stream is read as
server-sent events, one `StreamPart(event, data)` each.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, NamedTuple

import httpx
import orjson

from engine._json import plain_json

__all__ = ["AsyncServerClient", "StreamPart", "SyncServerClient"]

# Where a key is looked for when none is given, as langgraph_sdk looks.
_KEY_VARIABLES = ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
# A run's stream may stay quiet while a node works: no read timeout.
_TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=300.0, pool=5.0)


class StreamPart(NamedTuple):
    """One event of a run's stream: its name (`values`, `updates|ns`, ...) and data."""

    event: str
    data: Any


class Request(NamedTuple):
    method: str
    path: str
    body: Any = None
    query: Mapping[str, Any] | None = None


def _headers(api_key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    key = api_key or next((os.environ[n] for n in _KEY_VARIABLES if os.environ.get(n)), None)
    return {**({"x-api-key": key} if key else {}), **(headers or {})}


def _content(body: Any) -> bytes | None:
    return None if body is None else orjson.dumps(body, default=plain_json)


def _without_none(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def _checked(response: httpx.Response) -> None:
    """An error status raises httpx's error, as the SDK's clients raise it, with what the
    server said in its message."""
    if response.is_error:
        raise httpx.HTTPStatusError(
            f"{response.status_code} from {response.url}: {response.text[:2000]}",
            request=response.request,
            response=response,
        )


def _sent(request: Request, headers: Any, params: Any) -> dict[str, Any]:
    """httpx's arguments for a request, with a call's own headers and query."""
    return {
        "method": request.method,
        "url": request.path,
        "content": _content(request.body),
        "params": {**(request.query or {}), **(params or {})},
        "headers": {"content-type": "application/json", **(headers or {})},
    }


class _Events:
    """Server-sent events from lines: an event ends at a blank line."""

    def __init__(self) -> None:
        self.event = ""
        self.data: list[str] = []

    def feed(self, line: str) -> StreamPart | None:
        if not line:
            part = None
            if self.data:
                text = "\n".join(self.data)
                part = StreamPart(self.event or "message", orjson.loads(text) if text else None)
            self.event, self.data = "", []
            return part
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        return None


# The calls, built once for both clients.


def get_graph(assistant_id: str, xray: int | bool) -> Request:
    return Request("GET", f"/assistants/{assistant_id}/graph", query={"xray": xray})


def get_state(thread_id: str, checkpoint: Mapping[str, Any] | None, subgraphs: bool) -> Request:
    if checkpoint:
        body = {"checkpoint": checkpoint, "subgraphs": subgraphs}
        return Request("POST", f"/threads/{thread_id}/state/checkpoint", body)
    return Request("GET", f"/threads/{thread_id}/state", query={"subgraphs": subgraphs})


def get_history(
    thread_id: str,
    limit: int,
    before: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
    checkpoint: Mapping[str, Any] | None,
) -> Request:
    body = _without_none(limit=limit, before=before, metadata=metadata, checkpoint=checkpoint)
    return Request("POST", f"/threads/{thread_id}/history", body)


def update_state(
    thread_id: str, values: Any, as_node: str | None, checkpoint: Mapping[str, Any] | None
) -> Request:
    body = _without_none(values=values, as_node=as_node, checkpoint=checkpoint)
    return Request("POST", f"/threads/{thread_id}/state", body)


def run_stream(thread_id: str | None, assistant_id: str, **fields: Any) -> Request:
    path = f"/threads/{thread_id}/runs/stream" if thread_id else "/runs/stream"
    body = _without_none(assistant_id=assistant_id, **fields)
    return Request("POST", path, body)


class _Section:
    """A group of calls (`client.threads`, ...). Each call returns what its client's
    `call` or `events` does: the answer for the sync client, an awaitable or an async
    iterator for the async one."""

    def __init__(self, client: Any) -> None:
        self._client = client


class _Assistants(_Section):
    def get_graph(
        self,
        assistant_id: str,
        *,
        xray: int | bool = False,
        headers: Any = None,
        params: Any = None,
    ) -> Any:
        return self._client.call(get_graph(assistant_id, xray), headers, params)


class _Threads(_Section):
    def get_state(
        self,
        thread_id: str,
        checkpoint: Mapping[str, Any] | None = None,
        *,
        subgraphs: bool = False,
        headers: Any = None,
        params: Any = None,
    ) -> Any:
        return self._client.call(get_state(thread_id, checkpoint, subgraphs), headers, params)

    def get_history(
        self,
        thread_id: str,
        *,
        limit: int = 10,
        before: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        checkpoint: Mapping[str, Any] | None = None,
        headers: Any = None,
        params: Any = None,
    ) -> Any:
        request = get_history(thread_id, limit, before, metadata, checkpoint)
        return self._client.call(request, headers, params)

    def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None = None,
        checkpoint: Mapping[str, Any] | None = None,
        headers: Any = None,
        params: Any = None,
    ) -> Any:
        request = update_state(thread_id, values, as_node, checkpoint)
        return self._client.call(request, headers, params)


class _Runs(_Section):
    def stream(
        self,
        thread_id: str | None,
        assistant_id: str,
        *,
        headers: Any = None,
        params: Any = None,
        **fields: Any,
    ) -> Any:
        return self._client.events(run_stream(thread_id, assistant_id, **fields), headers, params)


class SyncServerClient:
    """The calls `RemoteGraph`'s sync methods make, over one `httpx.Client`."""

    def __init__(
        self, url: str, *, api_key: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        self.http = httpx.Client(base_url=url, headers=_headers(api_key, headers), timeout=_TIMEOUT)
        self.assistants = _Assistants(self)
        self.threads = _Threads(self)
        self.runs = _Runs(self)

    def call(self, request: Request, headers: Any, params: Any) -> Any:
        response = self.http.request(**_sent(request, headers, params))
        _checked(response)
        return response.json()

    def events(self, request: Request, headers: Any, params: Any) -> Iterator[StreamPart]:
        with self.http.stream(**_sent(request, headers, params)) as response:
            if response.is_error:
                response.read()
                _checked(response)
            events = _Events()
            for line in response.iter_lines():
                part = events.feed(line)
                if part is not None:
                    yield part

    def close(self) -> None:
        self.http.close()


class AsyncServerClient:
    """The calls `RemoteGraph`'s async methods make, over one `httpx.AsyncClient`."""

    def __init__(
        self, url: str, *, api_key: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        self.http = httpx.AsyncClient(
            base_url=url, headers=_headers(api_key, headers), timeout=_TIMEOUT
        )
        self.assistants = _Assistants(self)
        self.threads = _Threads(self)
        self.runs = _Runs(self)

    async def call(self, request: Request, headers: Any, params: Any) -> Any:
        response = await self.http.request(**_sent(request, headers, params))
        _checked(response)
        return response.json()

    async def events(
        self, request: Request, headers: Any, params: Any
    ) -> AsyncIterator[StreamPart]:
        async with self.http.stream(**_sent(request, headers, params)) as response:
            if response.is_error:
                await response.aread()
                _checked(response)
            events = _Events()
            async for line in response.aiter_lines():
                part = events.feed(line)
                if part is not None:
                    yield part

    async def aclose(self) -> None:
        await self.http.aclose()
