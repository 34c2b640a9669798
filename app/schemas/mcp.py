"""Wire models of `/mcp`: a JSON-RPC answer, as documented (the service builds them)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class JsonRpcError(BaseModel):
    code: int
    message: str


class JsonRpcAnswer(BaseModel):
    """The answer to one request: its `id`, and its `result` or its `error`."""

    jsonrpc: str
    id: Any
    result: dict[str, Any] | None = None
    error: JsonRpcError | None = None
