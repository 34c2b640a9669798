"""`/mcp` through the MCP Python SDK's own client (Streamable HTTP), over a real server.
The SDK needs a newer pydantic than the server's lower bounds: the lowest-versions venv
has no SDK, and skips this."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402


async def test_the_official_mcp_client(server: str) -> None:
    """The MCP Python SDK's client over its Streamable HTTP transport: it initializes,
    lists the assistants as tools, calls one and reads a failure as a tool error."""
    async with (
        streamable_http_client(f"{server}/mcp") as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        started = await session.initialize()
        assert started.server_info.name == "Threadline"
        listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert tools["echo"].input_schema["properties"]["messages"]["type"] == "string"
        called = await session.call_tool("echo", {"messages": "hello"})
        assert not called.is_error
        output = json.loads(called.content[0].text)
        assert output["messages"][-1]["content"] == "You said: hello"
        failed = await session.call_tool("looping", {})
        assert failed.is_error and "GraphRecursionError" in failed.content[0].text
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await session.call_tool("nope", {})
