"""`/mcp`: the caller's assistants as MCP tools, over a real server (JSON-RPC over HTTP)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.helpers import new_id

HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.fixture
async def http(server: str) -> Any:
    async with httpx.AsyncClient(base_url=server, headers=HEADERS, timeout=30) as client:
        yield client


async def rpc(http: httpx.AsyncClient, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": new_id(), "method": method}
    if params is not None:
        message["params"] = params
    response = await http.post("/mcp", json=message)
    assert response.status_code == 200
    answer = response.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == message["id"]
    return answer


async def test_initialize_and_ping(http: httpx.AsyncClient) -> None:
    answer = await rpc(http, "initialize", {"protocolVersion": "2025-03-26"})
    assert answer["result"]["protocolVersion"] == "2025-03-26"
    assert answer["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert answer["result"]["serverInfo"]["name"] == "Threadline"
    newer = await rpc(http, "initialize", {"protocolVersion": "2099-01-01"})
    assert newer["result"]["protocolVersion"] == "2025-11-25"
    assert (await rpc(http, "ping"))["result"] == {}
    unknown = await rpc(http, "resources/list")
    assert unknown["error"]["code"] == -32601


async def test_tools_are_the_assistants(http: httpx.AsyncClient) -> None:
    tools = {tool["name"]: tool for tool in (await rpc(http, "tools/list"))["result"]["tools"]}
    assert {"echo", "asker", "slow"} <= tools.keys()
    echo = tools["echo"]
    assert echo["title"] == "echo" and echo["description"]
    # A list of messages is asked for as the user's message: what a model can write.
    assert echo["inputSchema"]["type"] == "object"
    assert echo["inputSchema"]["properties"]["messages"]["type"] == "string"
    assert "$defs" not in echo["inputSchema"]
    assert tools["asker"]["inputSchema"]["properties"]["question"]["type"] == "string"
    # An object of any keys makes a tool too; a workflow of one text does not.
    assert tools["tally"]["inputSchema"]["type"] == "object" and "essay" not in tools
    tallied = await rpc(http, "tools/call", {"name": "tally", "arguments": {"a": 2, "b": 3}})
    assert json.loads(tallied["result"]["content"][0]["text"]) == {"total": 5}


async def test_call_runs_the_assistant(http: httpx.AsyncClient) -> None:
    answer = await rpc(http, "tools/call", {"name": "echo", "arguments": {"messages": "hi"}})
    result = answer["result"]
    assert "isError" not in result
    [content] = result["content"]
    output = json.loads(content["text"])
    assert [m["content"] for m in output["messages"]] == ["hi", "You said: hi"]


async def test_call_errors(http: httpx.AsyncClient) -> None:
    unknown = await rpc(http, "tools/call", {"name": "nope", "arguments": {}})
    assert unknown["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    for wrong in ([1], [], ""):
        bad = await rpc(http, "tools/call", {"name": "echo", "arguments": wrong})
        assert bad["error"]["code"] == -32602 and "arguments" in bad["error"]["message"]
    refused = await rpc(http, "tools/call", {"name": "echo", "arguments": {}, "context": 3})
    assert refused["error"]["code"] == -32602 and "context" in refused["error"]["message"]
    # The graph fails: a tool result marked as an error, for the model to read.
    failed = await rpc(http, "tools/call", {"name": "looping", "arguments": {}})
    assert failed["result"]["isError"] is True
    assert "GraphRecursionError" in failed["result"]["content"][0]["text"]


async def test_transport_rules(http: httpx.AsyncClient) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post("/mcp", json=note)).status_code == 202
    assert (await http.post("/mcp/", json=note)).status_code == 202
    response = {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert (await http.post("/mcp", json=response)).status_code == 202
    for bad in ({"id": 1, "method": "ping"}, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]):
        refused = await http.post("/mcp", json=bad)
        assert refused.status_code == 400 and "JSON-RPC" in refused.json()["detail"]
    # A method that is no name is an invalid request: answered, not taken for a response.
    numbered = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": 5})
    assert numbered.json()["id"] == 7 and numbered.json()["error"]["code"] == -32600
    plain = await http.post("/mcp", json=note, headers={"accept": "text/html"})
    assert plain.status_code == 400 and "Accept" in plain.json()["detail"]
    broken = await http.post("/mcp", content=b"{not", headers={"content-type": "application/json"})
    assert broken.status_code == 422
    assert (await http.get("/mcp")).status_code == 405
    assert (await http.delete("/mcp")).status_code == 404


async def test_a_cursor_is_one_the_server_gave(http: httpx.AsyncClient) -> None:
    for cursor in ("99999999999999999999999", "-1", "x", "١", 1.5, {"a": 1}, True):
        answer = await rpc(http, "tools/list", {"cursor": cursor})
        assert answer["error"]["code"] == -32602 and "cursor" in answer["error"]["message"]
    assert (await rpc(http, "tools/list", {"cursor": "100"}))["result"]["tools"] == []


async def test_a_tool_called_is_the_one_listed_under_its_name(http: httpx.AsyncClient) -> None:
    """Two assistants of one name: the list shows one tool of that name, and calling it
    runs that one."""
    made = await http.post("/assistants", json={"graph_id": "slow", "name": "echo"})
    try:
        tools = (await rpc(http, "tools/list"))["result"]["tools"]
        [listed] = [tool for tool in tools if tool["name"] == "echo"]
        called = await rpc(http, "tools/call", {"name": "echo", "arguments": {"delay": 0}})
        output = json.loads(called["result"]["content"][0]["text"])
        assert "delay" in listed["inputSchema"]["properties"]
        assert output["log"] == ["step", "step2"]
    finally:
        await http.delete(f"/assistants/{made.json()['assistant_id']}")
