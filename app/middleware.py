"""What every request goes through before a route uses it: the query-string conventions
of the API, the limit on body size, and JSON bodies that any database can store."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class QueryStrings:
    """`?stream_mode=` means "not given": clients (the SDK among them) send empty values
    for parameters they leave unset, so they are dropped rather than parsed. A NUL (`%00`),
    which no database stores, is refused (422) before it can reach one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("query_string"):
            pairs = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
            named = [k for k, v in pairs if "\x00" in k + v]
            if named:
                # Shaped as FastAPI's validation errors, which every route documents.
                error = {"loc": ["query", named[0]], "msg": "must not contain NUL (%00)"}
                refusal = {"detail": [{**error, "type": "value_error"}]}
                await JSONResponse(refusal, status_code=422)(scope, receive, send)
                return
            kept = [(k, v) for k, v in pairs if v != ""]
            if len(kept) != len(pairs):
                scope = {**scope, "query_string": urlencode(kept).encode("latin-1")}
        await self.app(scope, receive, send)


class LimitBodySize:
    """A request body over `max_bytes` (0: no limit) is answered 413 before any route
    reads it: by its Content-Length, or, for a streamed body, once the bytes read pass the
    limit. The body is read here (routes read it whole anyway) and handed on as one part."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.max_bytes:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left: let the app see it
                await self.app(scope, _replay([message], receive), send)
                return
            parts.append(message.get("body", b""))
            size += len(parts[-1])
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = {"type": "http.request", "body": b"".join(parts), "more_body": False}
        await self.app(scope, _replay([body], receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"Request body too large: at most {self.max_bytes} bytes."
        await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` that first gives `messages`, then what the client sends next."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


class JsonOnlyRequest(Request):
    """A request whose JSON body is parsed strictly (`strict_json`)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json(await self.body())
        return self._json


class JsonOnlyRoute(APIRoute):
    """A route that reads its body as JSON that any database can store: no NaN or
    Infinity, no integer beyond 64 bits, no NUL character and no lone surrogate in a
    string. Anything else is a 422 (`json_invalid`), as malformed JSON is."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(JsonOnlyRequest(request.scope, request.receive))

        return handle


_INT64 = 2**63
# A lone surrogate cannot be written as UTF-8; NUL cannot be stored in PostgreSQL text.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def strict_json(body: bytes) -> Any:
    """`body` parsed as JSON, refusing what standard JSON or a database cannot hold."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise json.JSONDecodeError("the body is not UTF-8", "", 0) from None

    def refuse(what: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(what, text, 0)

    def constant(name: str) -> Any:
        raise refuse(f"{name} is not JSON")

    def integer(digits: str) -> int:
        value = int(digits) if len(digits) < 25 else _INT64
        if not -_INT64 <= value < _INT64:
            raise refuse(f"integer {digits[:30]} does not fit in 64 bits")
        return value

    def number(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise refuse(f"number {digits[:30]} is out of range")
        return value

    parsed = json.loads(text, parse_constant=constant, parse_int=integer, parse_float=number)
    _check_strings(parsed, refuse)
    return parsed


def _check_strings(value: Any, refuse: Callable[[str], Exception]) -> None:
    """Raise for a string (value or key) holding a character no database stores."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            raise refuse("strings must not contain NUL or unpaired surrogates")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, refuse)
            _check_strings(item, refuse)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, refuse)
