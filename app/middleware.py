"""Query-string conventions of the API, applied before any route sees the request."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send


class EmptyQueryValuesAreUnset:
    """`?stream_mode=` means "not given": clients (the SDK among them) send empty values
    for parameters they leave unset, so they are dropped rather than parsed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("query_string"):
            pairs = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
            kept = [(k, v) for k, v in pairs if v != ""]
            if len(kept) != len(pairs):
                scope = {**scope, "query_string": urlencode(kept).encode("latin-1")}
        await self.app(scope, receive, send)
