"""What every request goes through before a route uses it: the query-string conventions
of the API, HEAD as GET, the limit on body size, and JSON bodies that any database can
store, within the limits on their depth and their number of values."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Coroutine, Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.limits import MAX_JSON_DEPTH, MAX_JSON_VALUES, UNSTORABLE


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


class HeadAsGet:
    """HEAD is the GET route's answer without its body, as Starlette's own routes take it
    (monitors and `curl -I` got a 405): the route sees a GET, and uvicorn, which keeps
    the request's method, sends no body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
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
    """A request whose JSON body is parsed strictly (`strict_json`): a body nested deeper
    than MAX_JSON_DEPTH is a 422 naming the field where it does, one of more than
    MAX_JSON_VALUES values a 413. A large body is parsed in a thread: the walk over its
    values lets the event loop serve other requests meanwhile."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                if len(body) > _PARSED_IN_A_THREAD:
                    self._json = await asyncio.to_thread(strict_json, body)
                else:
                    self._json = strict_json(body)
            except TooDeep as exc:
                # Shaped as FastAPI's validation errors, which every route documents.
                error = {
                    "loc": ["body", *exc.field],
                    "msg": f"nested deeper than {MAX_JSON_DEPTH} levels; a body nests at "
                    f"most {MAX_JSON_DEPTH} (objects and arrays, the body counting as one)",
                    "type": "json_too_deep",
                    "ctx": {"max_depth": MAX_JSON_DEPTH},
                }
                raise HTTPException(status_code=422, detail=[error]) from None
            except TooManyValues:
                detail = f"The body holds more than {MAX_JSON_VALUES} JSON values; at most that."
                raise HTTPException(status_code=413, detail=detail) from None
        return self._json


class JsonOnlyRoute(APIRoute):
    """A route that reads its body as JSON that any database can store: no NaN or
    Infinity, no integer beyond 64 bits, no NUL character and no lone surrogate in a
    string (anything else is a 422, `json_invalid`, as malformed JSON is), nested no
    deeper than MAX_JSON_DEPTH (422, `json_too_deep`), of at most MAX_JSON_VALUES values
    (413). The body is read as JSON whatever its Content-Type says, as LangGraph's server
    reads it (`curl -d` sends a form's type); a compressed body is a 415."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            scope = request.scope
            if request.method in _WITH_BODY:
                coded = _coded(request, "content-encoding", "identity") or _coded(
                    request, "transfer-encoding", "identity", "chunked"
                )
                if coded is not None:
                    detail = f"{coded} is not supported: send the JSON body uncompressed."
                    return JSONResponse({"detail": detail}, status_code=415)
                if not _JSON_TYPE.match(request.headers.get("content-type", "")):
                    headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
                    scope = {**scope, "headers": [*headers, (b"content-type", _JSON)]}
            return await handler(JsonOnlyRequest(scope, request.receive))

        return handle


def _coded(request: Request, header: str, *plain: str) -> str | None:
    """The header and coding of a body coded otherwise than `plain` (every header of the
    name, each coding of a list), which the server does not decode; None for none."""
    for value in request.headers.getlist(header):
        for coding in value.split(","):
            if coding.strip().lower() not in plain:
                return f"{header.title()} {coding.strip()!r}"
    return None


_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
_JSON = b"application/json"
# What FastAPI reads as JSON: application/json, application/<anything>+json.
_JSON_TYPE = re.compile(r"\s*application/([^;\s]*\+)?json\s*(;|$)", re.IGNORECASE)


_INT64 = 2**63
# Bodies longer than this many bytes are parsed off the event loop; shorter ones, the
# turns of a chat, are not worth a thread's hop.
_PARSED_IN_A_THREAD = 256 * 1024
# The JSON escapes that spell either.
_ESCAPE = re.compile(r"\\u(0000|d[89a-f])", re.IGNORECASE)


class TooDeep(ValueError):
    """A body nested deeper than MAX_JSON_DEPTH; `path` leads to where it does."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_JSON_DEPTH} levels")
        self.path: list[str | int] = []

    @property
    def field(self) -> list[str | int]:
        """The path down to the first object key: the field of the request's model (or
        of an item of a list body); the first step when there is no key."""
        keys = [i for i, step in enumerate(self.path) if isinstance(step, str)]
        return self.path[: keys[0] + 1] if keys else self.path[:1]


class TooManyValues(ValueError):
    """A body of more than MAX_JSON_VALUES values (objects, arrays, scalars and keys)."""


def strict_json(body: bytes) -> Any:
    """`body` parsed as JSON, refusing what standard JSON or a database cannot hold
    (JSONDecodeError), nesting deeper than MAX_JSON_DEPTH (TooDeep) and more than
    MAX_JSON_VALUES values (TooManyValues). The C parser reads the numbers and the
    strings; one walk over the containers checks them after, at a small cost per value."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise json.JSONDecodeError("the body is not UTF-8", "", 0) from None

    def refuse(what: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(what, text, 0)

    def constant(name: str) -> Any:
        raise refuse(f"{name} is not JSON")

    try:
        parsed = json.loads(text, parse_constant=constant)
    except RecursionError:  # far deeper than the limit: the parser gave up
        raise TooDeep() from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of more digits than Python converts
        raise refuse("an integer does not fit in 64 bits") from None
    # Valid UTF-8 holds neither NUL nor a lone surrogate, and JSON text no raw NUL: only
    # an escape can spell one, so without such escapes no string needs a look.
    strings = _ESCAPE.search(text) is not None
    values = 1

    def scalar(value: Any) -> None:
        kind = type(value)
        if kind is str:
            if strings and UNSTORABLE.search(value):
                raise refuse("strings must not contain NUL or unpaired surrogates")
        elif kind is int:
            if not -_INT64 <= value < _INT64:
                raise refuse(f"integer {str(value)[:30]} does not fit in 64 bits")
        elif kind is float and not math.isfinite(value):
            raise refuse(f"number {value} is out of range")

    def check(container: dict[str, Any] | list[Any], depth: int) -> None:
        nonlocal values
        if depth > MAX_JSON_DEPTH:
            raise TooDeep()
        if type(container) is dict:
            values += 2 * len(container)  # its keys count too
            steps: Iterable[tuple[str | int, Any]] = container.items()
        else:
            values += len(container)
            steps = enumerate(container)
        if values > MAX_JSON_VALUES:
            raise TooManyValues()
        for step, item in steps:
            scalar(step)  # a key (an index is always fine)
            if type(item) is dict or type(item) is list:
                try:
                    check(item, depth + 1)
                except TooDeep as exc:
                    exc.path.insert(0, step)
                    raise
            else:
                scalar(item)

    if type(parsed) is dict or type(parsed) is list:
        check(parsed, 1)
    else:
        scalar(parsed)
    return parsed
