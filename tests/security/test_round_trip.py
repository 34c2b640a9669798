"""Nothing accepted makes a read fail (issue 22): the largest and deepest values the limits
accept, written into every writable field by a user whose name is as long as a name may be
(all of it four-byte characters), then read back through every endpoint, on both
databases: every read answers, and gives back what was written."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from app.limits import MAX_JSON_DEPTH, MAX_JSON_VALUES, MAX_KEY_LENGTH
from tests.security.conftest import StartSecure, count_values, token


def wide(length: int) -> str:
    """Four-byte characters, varied so that no database compresses them away."""
    return "".join(chr(0x20000 + (i * 7919) % 0xA000) for i in range(length))


KEY = wide(MAX_KEY_LENGTH)
OTHER_KEY = KEY[::-1]
USER = wide(MAX_KEY_LENGTH)
# The labels of the longest namespace: four of 49 characters and the separators between.
NAMESPACE = [wide(196)[i : i + 49] for i in range(0, 196, 49)]


def nest(levels: int, leaf: Any = 0) -> Any:
    """Exactly `levels` nested objects, each under the longest key, around `leaf`."""
    return leaf if levels == 0 else {KEY: nest(levels - 1, leaf)}


def filled(body: dict[str, Any], field: dict[str, Any]) -> dict[str, Any]:
    """`body` with a list added to `field` (an object in it) that brings the body to the
    most values a body may hold."""
    field["many"] = []
    field["many"] = ["v"] * (MAX_JSON_VALUES - count_values(body))
    assert count_values(body) == MAX_JSON_VALUES
    return body


def message(text: str) -> dict[str, Any]:
    """A message nesting as deep as a body allows: body, input, messages, the message."""
    return {"role": "user", "content": text, "additional_kwargs": nest(MAX_JSON_DEPTH - 4)}


async def ok(http: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> Any:
    answer = await http.request(method, path, **kwargs)
    assert answer.is_success, (method, path, answer.status_code, answer.text[:300])
    return answer.json() if answer.content else None


async def test_the_largest_accepted_values_read_back_everywhere(
    start_secure: StartSecure,
) -> None:
    server = await start_secure("jwt")
    headers = {"Authorization": f"Bearer {token(USER)}"}
    deepest = nest(MAX_JSON_DEPTH - 2)  # under a field of the body
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=120) as http:
        # Writes.
        metadata: dict[str, Any] = {KEY: deepest, "long": wide(200_000)}
        created = filled({"thread_id": str(uuid.uuid4()), "metadata": metadata}, metadata)
        thread = await ok(http, "POST", "/threads", json=created)
        t = f"/threads/{thread['thread_id']}"
        await ok(http, "PATCH", t, json={"metadata": {OTHER_KEY: deepest}})
        assistant_body = {
            "graph_id": "echo",
            "assistant_id": str(uuid.uuid4()),
            "name": wide(MAX_KEY_LENGTH),
            "description": wide(10_000),
            "config": {"configurable": nest(MAX_JSON_DEPTH - 3), "tags": [KEY]},
            "context": deepest,
            "metadata": {KEY: deepest},
        }
        assistant = await ok(http, "POST", "/assistants", json=assistant_body)
        a = f"/assistants/{assistant['assistant_id']}"
        await ok(http, "PATCH", a, json={"metadata": {OTHER_KEY: deepest}, "name": KEY})
        run_body = {
            "assistant_id": assistant["assistant_id"],
            "input": {"messages": [message(wide(100_000))]},
            "metadata": {KEY: deepest},
            "config": {"configurable": nest(MAX_JSON_DEPTH - 3)},
            "context": deepest,
            "stream_resumable": True,
        }
        waited = await http.post(f"{t}/runs/wait", json=run_body)
        assert waited.is_success, waited.text[:300]
        run_id = waited.headers["content-location"].rsplit("/", 1)[1]
        update = {"values": {"messages": [message("edited")]}, "as_node": "talk"}
        written = await ok(http, "POST", f"{t}/state", json=update)
        value: dict[str, Any] = {KEY: deepest}
        item = filled({"namespace": NAMESPACE, "key": KEY, "value": value}, value)
        await ok(http, "PUT", "/store/items", json=item)

        # Reads: every endpoint that shows any of it.
        found = nest(7, {})  # as deep as a filter may be
        read = await ok(http, "GET", t)
        assert read["metadata"][KEY] == deepest and read["metadata"][OTHER_KEY] == deepest
        assert read["metadata"]["many"] == metadata["many"]
        assert read["metadata"]["long"] == metadata["long"]
        [listed] = await ok(http, "POST", "/threads/search", json={"limit": 1000})
        assert listed["metadata"] == read["metadata"] and listed["values"] == read["values"]
        searched = await ok(http, "POST", "/threads/search", json={"metadata": found})
        assert [s["thread_id"] for s in searched] == [thread["thread_id"]]
        assert await ok(http, "POST", "/threads/count", json={"metadata": found}) == 1
        state = await ok(http, "GET", f"{t}/state")
        assert [m["additional_kwargs"] for m in state["values"]["messages"]] == [
            message("")["additional_kwargs"],
            {},
            message("")["additional_kwargs"],
        ]
        checkpoint = written["checkpoint"]
        at = await ok(http, "POST", f"{t}/state/checkpoint", json={"checkpoint": checkpoint})
        assert at == state
        assert await ok(http, "GET", f"{t}/state/{checkpoint['checkpoint_id']}") == state
        history = await ok(http, "POST", f"{t}/history", json={"limit": 1000})
        assert history[0] == state and len(history) > 2
        assert await ok(http, "GET", f"{t}/history", params={"limit": 1000}) == history
        await ok(http, "GET", f"{t}/tree")
        [run] = await ok(http, "GET", f"{t}/runs")
        assert run["metadata"] == {KEY: deepest}
        assert run["kwargs"]["config"]["configurable"] == nest(MAX_JSON_DEPTH - 3)
        assert await ok(http, "GET", f"{t}/runs/{run_id}") == run
        joined = await ok(http, "GET", f"{t}/runs/{run_id}/join")
        assert joined == waited.json()
        events = await http.get(f"{t}/runs/{run_id}/stream", headers={"Last-Event-ID": "-1"})
        assert events.status_code == 200 and "event: values" in events.text
        copy = await ok(http, "POST", f"{t}/copy")
        assert copy["metadata"] == read["metadata"]
        assert (await ok(http, "GET", f"/threads/{copy['thread_id']}/state"))["values"] == state[
            "values"
        ]

        got = await ok(http, "GET", a)
        assert got["metadata"] == {KEY: deepest, OTHER_KEY: deepest}
        assert got["config"] == assistant_body["config"] and got["context"] == deepest
        assert got["name"] == KEY and got["description"] == assistant_body["description"]
        mine = {"metadata": {OTHER_KEY: nest(6, {})}}
        assert await ok(http, "POST", "/assistants/search", json=mine) == [got]
        assert await ok(http, "POST", "/assistants/count", json=mine) == 1
        await ok(http, "GET", f"{a}/graph")
        await ok(http, "GET", f"{a}/schemas")

        params = {"namespace": NAMESPACE, "key": KEY}
        stored = await ok(http, "GET", "/store/items", params=params)
        assert (stored["namespace"], stored["key"], stored["value"]) == (NAMESPACE, KEY, value)
        search = {"namespace_prefix": NAMESPACE[:1], "filter": found}
        [hit] = (await ok(http, "POST", "/store/items/search", json=search))["items"]
        assert hit["value"] == value
        spaces = await ok(http, "POST", "/store/namespaces", json={"prefix": NAMESPACE[:2]})
        assert spaces == {"namespaces": [NAMESPACE]}
        assert await ok(http, "GET", "/reminders") == []
