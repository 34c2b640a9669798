"""The caller's assistants as the tools of an MCP server (the Model Context Protocol, over
its Streamable HTTP transport, stateless), as LangGraph's server offers them at `/mcp`:
`tools/list` lists each assistant as a tool whose input schema is its graph's input
schema, and `tools/call` runs the assistant on a thread of its own and answers its
output as JSON text.

A JSON-RPC request gets a JSON-RPC answer; notifications and responses a client sends
need none. Errors of a request (an unknown method or tool, arguments a run refuses) are
JSON-RPC errors; a run that fails is a tool result marked `isError`, as MCP wants tool
failures reported to the model.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pydantic import ValidationError

from app import __version__
from app.errors import APIError, validation_problems
from app.limits import MAX_OFFSET
from app.schemas.assistants import AssistantSearch
from app.schemas.runs import RunCreate
from app.services.assistants import AssistantService
from app.services.runs.service import RunService

# The protocol revisions a client may ask for; another is answered with the latest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = PROTOCOL_VERSIONS[-1]
METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST = -32601, -32602, -32600
PAGE = 100  # tools a `tools/list` page holds; its cursor is the offset of the next page
# The most assistants a tool name is looked up among, as LangGraph's server does.
MOST_ASSISTANTS = 1000
# A tool name: letters, digits, `_`, `-` and `.`, at most 128 (MCP's rule).
_NOT_IN_NAME = re.compile(r"[^a-zA-Z0-9_.-]")
_MESSAGE_TYPES = frozenset(
    f"{kind}{suffix}"
    for kind in ("AI", "Human", "Chat", "System", "Function", "Tool")
    for suffix in ("Message", "MessageChunk")
)
_MESSAGE_PARTS = frozenset(
    {
        "ToolCall",
        "ToolCallChunk",
        "InvalidToolCall",
        "UsageMetadata",
        "InputTokenDetails",
        "OutputTokenDetails",
    }
)


class RequestError(Exception):
    """A JSON-RPC error answer to one request."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_answer(message: dict[str, Any], code: int, text: str) -> dict[str, Any]:
    """The JSON-RPC error answering `message` (under its id; null when it has none)."""
    return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": code, "message": text}}


def tool_name(assistant_name: str) -> str:
    """An assistant's name as an MCP tool name: spaces as `_`, other characters MCP does
    not allow dropped, at most 128 characters."""
    return _NOT_IN_NAME.sub("", re.sub(r"\s+", "_", assistant_name.strip()))[:128]


def tool_input_schema(input_schema: dict[str, Any]) -> dict[str, Any]:
    """A graph's input schema as a tool's: a list of LangChain messages becomes a string
    (the user's message, which the graph's message reducer takes as a human message),
    and the message classes' definitions are dropped; an object schema in any case."""
    schema = copy.deepcopy(input_schema)
    defs = schema.get("$defs") or {}
    if defs.keys() & _MESSAGE_TYPES:
        for name in _MESSAGE_TYPES | _MESSAGE_PARTS:
            defs.pop(name, None)
        if not defs:
            schema.pop("$defs", None)
        for key, prop in (schema.get("properties") or {}).items():
            if _is_message_list(prop):
                schema["properties"][key] = {
                    "type": "string",
                    "title": prop.get("title") or key.replace("_", " ").title(),
                    "description": "The user message to send to the agent.",
                }
    schema.setdefault("type", "object")
    return schema


def _takes_object(schema: dict[str, Any]) -> bool:
    """Whether an input schema is an object's: of keys, or any (`dict`)."""
    return "properties" in schema or schema.get("type") == "object"


def _is_message_list(prop: dict[str, Any]) -> bool:
    if prop.get("type") != "array":
        return False
    items = prop.get("items") or {}
    refs = [c.get("$ref", "") for c in items.get("oneOf") or items.get("anyOf") or []]
    return any(ref.removeprefix("#/$defs/") in _MESSAGE_TYPES for ref in refs)


def _offset(cursor: Any) -> int:
    """The offset a `tools/list` cursor stands for (none: the first page)."""
    if cursor is None:
        return 0
    text = str(cursor) if isinstance(cursor, str | int) and not isinstance(cursor, bool) else ""
    if not (text.isascii() and text.isdigit()) or len(text) > 10 or int(text) > MAX_OFFSET:
        raise RequestError(INVALID_PARAMS, f"cursor: not one this server gave: {text[:40]!r}")
    return int(text)


class McpService:
    def __init__(self, assistants: AssistantService, runs: RunService) -> None:
        self.assistants = assistants
        self.runs = runs

    async def answer(self, request: dict[str, Any], *, owner: str) -> dict[str, Any]:
        """The JSON-RPC answer to one request (a message with an `id` and a `method`)."""
        method, params = request["method"], request.get("params") or {}
        try:
            if not isinstance(params, dict):
                raise RequestError(INVALID_PARAMS, "params must be an object.")
            result = await self._result(method, params, owner)
        except RequestError as exc:
            return error_answer(request, exc.code, exc.message)
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}

    async def _result(self, method: str, params: dict[str, Any], owner: str) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in PROTOCOL_VERSIONS else LATEST_VERSION
            return {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "Threadline", "version": __version__},
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return await self._tools(params.get("cursor"), owner)
        if method == "tools/call":
            return await self._call(params, owner)
        raise RequestError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _tools(self, cursor: Any, owner: str) -> dict[str, Any]:
        """One page of the caller's assistants as tools; an assistant whose name another
        one on the page has already, or whose graph's input is no object (an
        entrypoint's number or text), is left out."""
        offset = _offset(cursor)
        page, _ = await self.assistants.search(
            AssistantSearch(limit=PAGE, offset=offset), owner=owner
        )
        tools, seen = [], set()
        for assistant in page:
            name = tool_name(assistant.name)
            schema = self.assistants.schemas(assistant).input_schema
            # A tool's arguments are an object: an input that is none (an entrypoint's
            # one value) makes no tool.
            if not name or name in seen or schema is None or not _takes_object(schema):
                continue
            seen.add(name)
            tools.append(
                {
                    "name": name,
                    "title": assistant.name,
                    "description": assistant.description
                    or f"Tool based on the {assistant.name} assistant",
                    "inputSchema": tool_input_schema(schema),
                    "annotations": {
                        "readOnlyHint": False,
                        "destructiveHint": False,
                        "idempotentHint": False,
                        "openWorldHint": True,
                    },
                }
            )
        listed: dict[str, Any] = {"tools": tools}
        if len(page) == PAGE:
            listed["nextCursor"] = str(offset + PAGE)
        return listed

    async def _call(self, params: dict[str, Any], owner: str) -> dict[str, Any]:
        """Run the assistant the tool names on a new thread, with the call's arguments as
        its input (and `context`, if given), and answer its output."""
        name, arguments = params.get("name"), params.get("arguments")
        if arguments is None:  # optional: none given is no arguments (an empty array is no object)
            arguments = {}
        if not isinstance(name, str) or not name:
            raise RequestError(INVALID_PARAMS, "name: the tool to call is required.")
        if not isinstance(arguments, dict):
            raise RequestError(INVALID_PARAMS, "arguments must be an object.")
        page, _ = await self.assistants.search(AssistantSearch(limit=MOST_ASSISTANTS), owner=owner)
        # The assistant `tools/list` shows under the name: the first of those named so.
        found = [a for a in page if tool_name(a.name) == name]
        if not found:
            raise RequestError(INVALID_PARAMS, f"Unknown tool: {name}")
        try:
            body = RunCreate(
                assistant_id=found[0].assistant_id,
                input=arguments,
                context=params.get("context"),
            )
            _, answer = await self.runs.wait(None, body, owner=owner)
        except ValidationError as exc:
            raise RequestError(INVALID_PARAMS, validation_problems(exc)) from None
        except APIError as exc:
            raise RequestError(INVALID_PARAMS, exc.detail) from None
        output = json.loads(answer)
        if isinstance(output, dict) and "__error__" in output:
            failed = output["__error__"]
            text = f"{failed.get('error')}: {failed.get('message')}"
            return {"isError": True, "content": [{"type": "text", "text": text}]}
        return {"content": [{"type": "text", "text": answer}]}
