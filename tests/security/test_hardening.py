"""Input hardening (issue 8): request bodies refuse unknown and wrong-typed fields by name;
state values stay JSON; filters cannot inject SQL; namespaces, nodes and interrupt ids are
checked against the graph and the thread; no input leaves a thread unreadable."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError

from tests.helpers import new_thread

TAGGED = {"$t": "uuid", "v": "12345678-1234-5678-1234-567812345678"}
SDK_RUN_FIELDS = {
    "assistant_id": "echo",
    "input": {"messages": [{"role": "user", "content": "hi"}]},
    "config": {"tags": ["a"], "recursion_limit": 10},
    "context": {},
    "metadata": {"m": 1},
    "stream_mode": ["values"],
    "stream_subgraphs": False,
    "stream_resumable": False,
    "interrupt_before": [],
    "interrupt_after": [],
    "feedback_keys": ["score"],
    "webhook": None,
    "checkpoint_during": True,
    "multitask_strategy": "enqueue",
    "if_not_exists": "create",
    "on_disconnect": "continue",
    "on_completion": "keep",
    "after_seconds": 0,
    "durability": "async",
    "strict_resume": False,
    "langsmith_tracer": {"project_name": "x"},
}


@pytest.fixture
async def http(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        yield client


async def echo(http: httpx.AsyncClient, t: str, messages: list[Any]) -> httpx.Response:
    """A waited run of the echo graph on the thread at path `t`, with `messages` as input."""
    return await http.post(
        f"{t}/runs/wait", json={"assistant_id": "echo", "input": {"messages": messages}}
    )


async def echoed_thread(http: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    """A new thread's path after one echo turn, and its state then: what a refused input
    must leave as it was."""
    t = f"/threads/{await new_thread(http)}"
    assert (await echo(http, t, ["hi"])).is_success
    return t, (await http.get(f"{t}/state")).json()


def bodies(thread_id: str) -> list[tuple[str, str, Any, list[Any]]]:
    """(method, path, body, where the unknown field is: [] at the top) for every request
    body model."""
    t = f"/threads/{thread_id}"
    run = {"assistant_id": "echo"}
    return [
        ("POST", "/threads", {"colour": 1}, []),
        ("POST", "/threads/search", {"colour": 1}, []),
        ("POST", "/threads/count", {"colour": 1}, []),
        ("POST", "/threads/prune", {"thread_ids": [], "colour": 1}, []),
        ("PATCH", t, {"metadata": {}, "colour": 1}, []),
        ("POST", "/assistants", {"graph_id": "echo", "colour": 1}, []),
        ("POST", "/assistants/search", {"colour": 1}, []),
        ("POST", "/assistants/count", {"colour": 1}, []),
        ("PATCH", "/assistants/echo", {"colour": 1}, []),
        ("POST", f"{t}/state", {"values": {}, "colour": 1}, []),
        ("POST", f"{t}/state/checkpoint", {"checkpoint": {"colour": 1}}, ["checkpoint"]),
        ("POST", f"{t}/history", {"colour": 1}, []),
        ("POST", f"{t}/runs", {**run, "colour": 1}, []),
        ("POST", f"{t}/runs", {**run, "command": {"colour": 1}}, ["command"]),
        (
            "POST",
            f"{t}/runs",
            {**run, "command": {"goto": {"node": "talk", "colour": 1}}},
            ["command", "goto", "Send"],
        ),
        ("POST", "/runs/wait", {**run, "checkpoint": {"colour": 1}}, ["checkpoint"]),
        ("POST", "/runs/batch", [{**run, "colour": 1}], [0]),
        ("POST", "/runs/cancel", {"colour": 1}, []),
        ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {}, "colour": 1}, []),
        ("DELETE", "/store/items", {"namespace": ["a"], "key": "k", "colour": 1}, []),
        ("POST", "/store/items/search", {"colour": 1}, []),
        ("POST", "/store/namespaces", {"colour": 1}, []),
    ]


async def test_unknown_fields_are_refused_by_name(http: httpx.AsyncClient) -> None:
    thread_id = await new_thread(http)
    for method, path, body, where in bodies(thread_id):
        answer = await http.request(method, path, json=body)
        assert answer.status_code == 422, (path, body, answer.text)
        # A union (command.goto) reports each of its members: one of them names it.
        named = [e["loc"][1:] for e in answer.json()["detail"] if e["type"] == "extra_forbidden"]
        assert named == [[*where, "colour"]], (path, answer.text)


WRONG_TYPES = [
    ("/threads", {"metadata": "text"}, "metadata"),
    ("/threads/search", {"limit": "many"}, "limit"),
    ("/threads/search", {"ids": "not-a-list"}, "ids"),
    ("/runs", {"assistant_id": "echo", "stream_subgraphs": [1]}, "stream_subgraphs"),
    ("/runs", {"assistant_id": ["echo"]}, "assistant_id"),
    ("/store/items/search", {"namespace_prefix": "a"}, "namespace_prefix"),
    ("/runs", {"assistant_id": "echo", "config": {"recursion_limit": "deep"}}, "recursion_limit"),
    ("/runs", {"assistant_id": "echo", "after_seconds": 1e12}, "after_seconds"),
]


async def test_wrong_types_are_refused_by_name(http: httpx.AsyncClient) -> None:
    for path, body, field in WRONG_TYPES:
        answer = await http.post(path, json=body)
        assert answer.status_code == 422
        named = {str(part) for error in answer.json()["detail"] for part in error["loc"]}
        assert field in named, (path, answer.text)
    # Any JSON is an input (an @entrypoint may take a string); a StateGraph's is refused
    # by the graph's rule, naming it.
    answer = await http.post("/runs", json={"assistant_id": "echo", "input": "text"})
    assert answer.status_code == 422 and answer.json()["detail"].startswith("input: ")


async def test_a_checkpoint_id_too_long_in_a_path_is_refused_by_name(
    http: httpx.AsyncClient,
) -> None:
    """As in a body (422 naming it); it was a 500, and the connection was reset."""
    thread_id = await new_thread(http)
    answer = await http.get(f"/threads/{thread_id}/state/{'c' * 201}")
    assert answer.status_code == 422
    assert [e["loc"] for e in answer.json()["detail"]] == [["path", "checkpoint_id"]]
    fits = await http.get(f"/threads/{thread_id}/state/{'c' * 200}")
    assert fits.status_code < 500, fits.text


async def test_a_refusal_says_what_is_wrong_in_the_clients_exception(server: str) -> None:
    """langgraph-sdk's exception shows a string `message` (or `detail`): a 422 of a
    malformed request has both FastAPI's errors and one line naming each field."""
    client = get_client(url=server)
    with pytest.raises(UnprocessableEntityError) as refused:
        await client.crons.create("echo", schedule="every minute")
    assert str(refused.value).startswith("body.schedule: Value error, 'every minute' is not")
    with pytest.raises(UnprocessableEntityError) as refused:
        await client.threads.search(limit=0, sort_by="colour")  # type: ignore[arg-type]
    assert str(refused.value).count("body.") == 2
    assert [e["loc"] for e in refused.value.body["detail"]] == [  # type: ignore[index]
        ["body", "limit"],
        ["body", "sort_by"],
    ]


async def test_every_field_the_sdk_sends_is_accepted(http: httpx.AsyncClient) -> None:
    thread_id = await new_thread(http)
    answer = await http.post(f"/threads/{thread_id}/runs/wait", json=SDK_RUN_FIELDS)
    assert answer.is_success, answer.text
    assert answer.json()["messages"][-1]["content"] == "You said: hi"


async def test_type_tags_from_clients_stay_json(http: httpx.AsyncClient) -> None:
    thread_id = await new_thread(http, metadata={"graph_id": "asker", "tag": TAGGED})
    updated = await http.post(f"/threads/{thread_id}/state", json={"values": {"question": TAGGED}})
    assert updated.is_success, updated.text
    run = await http.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": "asker", "input": {"question": {"$t": "bytes", "v": "aGk="}}},
    )
    assert run.json()["question"] == {"$t": "bytes", "v": "aGk="}
    history = (await http.post(f"/threads/{thread_id}/history", json={"limit": 10})).json()
    assert TAGGED in [state["values"].get("question") for state in history]
    thread = (await http.get(f"/threads/{thread_id}")).json()
    assert thread["metadata"]["tag"] == TAGGED


UNSTORABLE = [
    b'{"metadata": {"x": NaN}}',
    b'{"metadata": {"x": -Infinity}}',
    b'{"metadata": {"x": 1e400}}',
    b'{"metadata": {"x": 123456789012345678901234567890}}',
    b'{"metadata": {"x": "a\\u0000b"}}',
    b'{"metadata": {"a\\u0000": 1}}',
    b'{"metadata": {"x": "\\ud800"}}',
    b'{"metadata": {"x": "\xff"}}',
]


async def test_bodies_are_json_that_any_database_stores(http: httpx.AsyncClient) -> None:
    json_body = {"content-type": "application/json"}
    for body in UNSTORABLE:
        for path in ("/threads", "/threads/search", "/assistants/search"):
            answer = await http.post(path, content=body, headers=json_body)
            assert answer.status_code == 422, (path, body, answer.text)
            assert answer.json()["detail"][0]["type"] == "json_invalid"
    nul = await http.get("/store/items", params={"namespace": "a\x00b", "key": "k"})
    assert nul.status_code == 422 and nul.json()["detail"][0]["loc"] == ["query", "namespace"]
    assert (await http.post("/threads/count", json={})).json() == 0


INJECTIONS: list[dict[str, Any]] = [
    {"k": "' OR 1=1 --"},
    {"k": "x'); DROP TABLE threads; --"},
    {"k) OR (1=1": 1},
    {"$.k": 1},
    {"k": {"$ne": None}},
    {"k": ["'", '"', "\\"]},
]


async def test_metadata_filters_cannot_inject_sql(http: httpx.AsyncClient) -> None:
    await new_thread(http, metadata={"k": "v"})
    for metadata in INJECTIONS:
        for path in ("/threads/search", "/threads/count", "/assistants/search"):
            answer = await http.post(path, json={"metadata": metadata})
            assert answer.status_code == 200, answer.text
            assert answer.json() in ([], 0), (path, metadata)
    # Keys are data too: quotes and backslashes match themselves.
    quoted = {'k") OR 1=1 --': "'\\"}
    await new_thread(http, metadata=quoted)
    assert (await http.post("/threads/count", json={"metadata": quoted})).json() == 1
    assert (await http.post("/threads/count", json={"metadata": {"k": "v"}})).json() == 1


async def test_namespaces_nodes_and_interrupts_are_checked(http: httpx.AsyncClient) -> None:
    thread_id = await new_thread(http)
    t = f"/threads/{thread_id}"
    await http.post(f"{t}/runs/wait", json={"assistant_id": "nested", "input": {"question": "?"}})
    before = (await http.get(f"{t}/state")).json()
    [task] = before["tasks"]
    where = task["checkpoint"]["checkpoint_ns"]
    for ns in ("inner:not-a-task", "inner", "talk:x", f"{where}|inner:x"):
        checkpoint = {"checkpoint_ns": ns}
        read = await http.post(f"{t}/state/checkpoint", json={"checkpoint": checkpoint})
        assert read.status_code == 404, (ns, read.text)
        for path, body in [
            ("history", {"checkpoint": checkpoint}),
            ("state", {"values": {"answers": ["x"]}, "checkpoint": checkpoint}),
            ("runs", {"assistant_id": "nested", "checkpoint": checkpoint}),
        ]:
            assert (await http.post(f"{t}/{path}", json=body)).status_code == 404, (path, ns)
    # In a subgraph's namespace, `as_node` names a node of the subgraph.
    write = {
        "values": {"answers": ["x"]},
        "as_node": "inner",
        "checkpoint": {"checkpoint_ns": where},
    }
    assert (await http.post(f"{t}/state", json=write)).status_code == 422
    for body in (
        {"values": {"answers": ["x"]}, "as_node": "nowhere"},
        {"values": {"answers": ["x"]}, "as_node": "__end__"},
    ):
        assert (await http.post(f"{t}/state", json=body)).status_code == 422
    for goto in ("nowhere", "__end__", ["inner", "nowhere"], {"node": "nowhere"}):
        answer = await http.post(
            f"{t}/runs", json={"assistant_id": "nested", "command": {"goto": goto}}
        )
        assert answer.status_code == 422 and "command.goto" in answer.json()["detail"], goto
    assert (await http.get(f"{t}/state")).json() == before

    idle = await new_thread(http)
    resume = {"assistant_id": "asker", "command": {"resume": {"no-such-interrupt": 1}}}
    assert (await http.post(f"/threads/{idle}/runs", json=resume)).status_code == 409


async def test_input_a_reducer_refuses_leaves_the_thread_readable(
    http: httpx.AsyncClient,
) -> None:
    t, before = await echoed_thread(http)
    for bad in ([{"$t": "bytes", "v": "aGk="}], [{"content": "no role"}], [[1, 2]]):
        failed = await echo(http, t, bad)
        assert failed.json()["__error__"]["error"] == "ValueError", failed.text
        state = await http.get(f"{t}/state")
        assert state.status_code == 200 and state.json()["values"] == before["values"]
        assert (await http.get(f"{t}")).json()["status"] == "error"
    again = await echo(http, t, ["again"])
    assert again.json()["messages"][-1]["content"] == "You said: again"


# Each makes LangChain's message coercion raise a different exception class.
NOT_MESSAGES = [
    (5, "Unsupported message type"),
    ({"role": "tool", "content": "done"}, "missing key 'tool_call_id'"),
    ({"role": ["user"], "content": "hi"}, "unhashable type"),
    ({"role": "robot", "content": "hi"}, "Unexpected message type: 'robot'"),
    ({"role": "user", "content": 5}, "Input should be a valid string"),
]


async def test_a_message_langchain_refuses_is_a_422_naming_it(http: httpx.AsyncClient) -> None:
    """A state update answers 422 with LangChain's reason, a run ends `error` with it:
    never a 500, and the thread stays as it was."""
    t, before = await echoed_thread(http)
    for bad, reason in NOT_MESSAGES:
        update = await http.post(f"{t}/state", json={"values": {"messages": [bad]}})
        assert update.status_code == 422, update.text
        assert update.json()["detail"].startswith("values.messages: not messages: ")
        assert reason in update.json()["detail"]
        run = await echo(http, t, [bad])
        assert reason in run.json()["__error__"]["message"]
        assert (await http.get(f"{t}/state")).json()["values"] == before["values"]


# Each was a 500 (LangChain raised AttributeError) or, written as the graph's input, saved
# and then failed every read of the state and every copy of the thread.
MALFORMED = [
    {"type": "chat", "content": "x"},
    {"type": "ai", "content": "", "tool_calls": {"name": "x"}},
    {"type": "ai", "content": "", "tool_calls": ["abc"]},
    {"role": "assistant", "content": "", "tool_calls": "abc"},
    5,
]


async def test_messages_written_as_any_node_or_the_input_are_checked(
    http: httpx.AsyncClient,
) -> None:
    t, before = await echoed_thread(http)
    for bad in MALFORMED:
        for as_node in ("__input__", "talk", None):
            update = {"values": {"messages": [bad]}, "as_node": as_node}
            refused = await http.post(f"{t}/state", json=update)
            assert refused.status_code == 422, (bad, as_node, refused.text)
            assert refused.json()["detail"].startswith("values.messages: not messages: ")
        steps = [{"updates": [{"values": {"messages": [bad]}, "as_node": "__input__"}]}]
        made = await http.post(
            "/threads", json={"metadata": {"graph_id": "echo"}, "supersteps": steps}
        )
        assert made.status_code == 422, (bad, made.text)
    state = await http.get(f"{t}/state")
    assert state.status_code == 200 and state.json()["values"] == before["values"]
    assert (await http.post(f"{t}/copy")).status_code == 200


async def test_a_commands_update_and_sends_are_checked(http: httpx.AsyncClient) -> None:
    """Keys the state does not have and pairs that are not `[key, value]` were accepted
    and changed nothing; a Send without `input` failed the run."""
    t, _ = await echoed_thread(http)
    for command, field in (
        ({"update": {"zzz": 1}}, "command.update"),
        ({"update": [["zzz", 1]]}, "command.update"),
        ({"update": [["messages"]]}, "command.update"),
        ({"update": [[5, 1]]}, "command.update"),
        ({"goto": {"node": "talk"}}, "command.goto"),
        ({"goto": [{"node": "talk"}]}, "command.goto"),
    ):
        run = await http.post(f"{t}/runs/wait", json={"assistant_id": "echo", "command": command})
        assert run.status_code == 422 and run.json()["detail"].startswith(field), run.text


async def test_a_body_is_json_whatever_its_type_says_and_never_compressed(
    http: httpx.AsyncClient,
) -> None:
    """`curl -d` sends a form's Content-Type: the body is still read as the JSON it is, as
    LangGraph's server reads it, and so is a body without one (`/mcp` refused it as no
    JSON-RPC message); a compressed body is a 415 naming its encoding (it was a
    422 saying the body is not UTF-8)."""
    body = json.dumps({"metadata": {"via": "curl"}}).encode()
    for kind in ("application/x-www-form-urlencoded", "text/plain", "application/json"):
        made = await http.post("/threads", content=body, headers={"content-type": kind})
        assert made.status_code == 200 and made.json()["metadata"] == {"via": "curl"}, kind
    bare = await http.post("/threads", content=body)  # no Content-Type at all
    assert bare.status_code == 200 and bare.json()["metadata"] == {"via": "curl"}
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    answered = await http.post("/mcp", content=ping, headers={"accept": "application/json"})
    assert answered.status_code == 200 and answered.json()["id"] == 1, answered.text
    form = await http.post("/threads", data={"metadata": "x"})
    assert form.status_code == 422 and form.json()["detail"][0]["type"] == "json_invalid"
    for encoding in ("gzip", "br"):
        packed = await http.post(
            "/threads", content=gzip.compress(body), headers={"content-encoding": encoding}
        )
        assert packed.status_code == 415 and encoding in packed.json()["detail"]


async def test_a_body_coded_in_any_of_its_headers_is_a_415(server: str) -> None:
    """A coding in a second Content-Encoding header, or a Transfer-Encoding other than
    chunked, is no body the server decodes either (both were a 422 saying the body is
    not UTF-8); raw HTTP, as clients do not send such headers."""
    packed = gzip.compress(b'{"metadata": {}}')
    chunk = b"%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
    sent = {
        "Content-Encoding 'gzip'": b"Content-Encoding: identity\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(packed), packed),
        "Transfer-Encoding 'gzip'": b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunk,
    }
    url = httpx.URL(server)
    for named, rest in sent.items():
        reader, writer = await asyncio.open_connection(url.host, url.port)
        writer.write(b"POST /threads HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + rest)
        answer = await reader.read()
        writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 415") and named in json.loads(body)["detail"], answer


async def test_head_is_get_without_its_body(http: httpx.AsyncClient) -> None:
    """As on LangGraph's server: a monitor's `HEAD /ok` is a 200, not a 405."""
    thread = (await http.post("/threads", json={})).json()["thread_id"]
    for path in ("/ok", f"/threads/{thread}", "/web/app.js", "/info"):
        got, head = await http.get(path), await http.head(path)
        assert (head.status_code, head.content) == (200, b""), path
        assert head.headers["content-type"] == got.headers["content-type"], path
    assert (await http.head(f"/threads/{thread}/copy")).status_code == 405


async def test_the_pages_files_are_found_by_name_alone(http: httpx.AsyncClient) -> None:
    """`/web/<path>` serves the page's files; any other name is a 404, never a look at
    the file system (a NUL, a name too long for it, a way out of the folder)."""
    assert (await http.get("/web/app.js")).status_code == 200
    for path in ("%00", "a" * 5000, "../main.py", "%2e%2e/main.py", "..%2fmain.py", "web"):
        answer = await http.get(f"/web/{path}")
        assert answer.status_code == 404, (path[:20], answer.status_code)
