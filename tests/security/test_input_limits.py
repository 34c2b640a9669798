"""Input limits (issue 22): depth, lengths, counts and ranges, each refused with a JSON
answer that names the field and the limit, before anything is stored, with the same answer
on SQLite and PostgreSQL. Errors the database raises for a request are 4xx, never a 503."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.db.database import Database
from app.errors import refused_by_database
from app.limits import (
    MAX_BATCH_RUNS,
    MAX_EVENT_ID,
    MAX_FILTER_DEPTH,
    MAX_FILTER_ENTRIES,
    MAX_FILTER_SIZE,
    MAX_IDS,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_KEY_LENGTH,
    MAX_NAMES,
    MAX_OFFSET,
    MAX_PAGE_SIZE,
)
from tests.helpers import said


def nest(levels: int) -> Any:
    """A value of exactly `levels` nested objects (0: a scalar)."""
    return 0 if levels == 0 else {"d": nest(levels - 1)}


@pytest.fixture
async def http(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server, timeout=60) as client:
        yield client


async def stored(http: httpx.AsyncClient) -> dict[str, Any]:
    """What the server holds: threads, assistants and store items, each counted."""
    threads = (await http.post("/threads/count", json={})).json()
    assistants = (await http.post("/assistants/count", json={})).json()
    items = (await http.post("/store/items/search", json={"limit": 1000})).json()["items"]
    return {"threads": threads, "assistants": assistants, "items": len(items)}


def bodies(levels: int, thread: str, assistant: str) -> list[tuple[str, str, Any, list[Any]]]:
    """(method, path, body, the field that nests) of every kind of body, nesting `levels`
    deep in all (the body counting as one)."""
    t, a = f"/threads/{thread}", f"/assistants/{assistant}"
    run = {"assistant_id": "echo"}
    message = said("hi", additional_kwargs=nest(levels - 4))  # in input, messages, [0]
    item = {"namespace": ["n"], "key": "k"}
    return [
        ("POST", "/threads", {"metadata": nest(levels - 1)}, ["metadata"]),
        ("PATCH", t, {"metadata": nest(levels - 1)}, ["metadata"]),
        ("POST", "/assistants", {"graph_id": "echo", "context": nest(levels - 1)}, ["context"]),
        ("PATCH", a, {"config": {"configurable": nest(levels - 2)}}, ["config"]),
        ("POST", f"{t}/runs/wait", {**run, "metadata": nest(levels - 1)}, ["metadata"]),
        ("POST", f"{t}/runs/wait", {**run, "input": message}, ["input"]),
        ("POST", "/runs/batch", [{**run, "input": nest(levels - 2)}], [0, "input"]),
        ("POST", f"{t}/state", {"values": message}, ["values"]),
        ("PUT", "/store/items", {**item, "value": nest(levels - 1)}, ["value"]),
    ]


async def test_bodies_nest_at_most_the_limit(http: httpx.AsyncClient) -> None:
    thread = (await http.post("/threads", json={"metadata": {"graph_id": "echo"}})).json()
    assistant = (await http.post("/assistants", json={"graph_id": "echo"})).json()
    ids = thread["thread_id"], assistant["assistant_id"]
    before = await stored(http)
    for (method, path, _, field), (*_, too_deep, _) in zip(
        bodies(MAX_JSON_DEPTH, *ids), bodies(MAX_JSON_DEPTH + 1, *ids), strict=True
    ):
        refused = await http.request(method, path, json=too_deep)
        assert refused.status_code == 422, (path, refused.text)
        [error] = refused.json()["detail"]
        assert error["type"] == "json_too_deep" and error["ctx"] == {"max_depth": MAX_JSON_DEPTH}
        assert error["loc"] == ["body", *field], (path, error)
        assert f"at most {MAX_JSON_DEPTH}" in error["msg"]
    assert await stored(http) == before
    for method, path, deepest, _ in bodies(MAX_JSON_DEPTH, *ids):
        answer = await http.request(method, path, json=deepest)
        assert answer.is_success, (path, answer.text)


async def test_absurd_nesting_and_too_many_values_are_refused(http: httpx.AsyncClient) -> None:
    json_body = {"content-type": "application/json"}
    absurd = b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    answer = await http.post("/threads", content=absurd, headers=json_body)
    assert answer.status_code == 422 and answer.json()["detail"][0]["type"] == "json_too_deep"
    many = {"metadata": {"list": [0] * MAX_JSON_VALUES}}
    answer = await http.post("/threads", json=many)
    assert answer.status_code == 413
    assert answer.json() == {
        "detail": f"The body holds more than {MAX_JSON_VALUES} JSON values; at most that."
    }
    # The body, its key and object "metadata", their key and array "list": five more.
    fits = {"metadata": {"list": [0] * (MAX_JSON_VALUES - 5)}}
    assert (await http.post("/threads", json=fits)).is_success
    assert (await http.post("/threads/count", json={})).json() == 1


LONG = "x" * (MAX_KEY_LENGTH + 1)


def too_long_or_many(thread_id: str) -> list[tuple[str, str, Any, list[Any], str]]:
    """(method, path, body, the error's loc, words of its message) of each limit on a
    length, a count or a range that a body's schema states."""
    t = f"/threads/{thread_id}"
    run = {"assistant_id": "echo"}
    wide = {f"k{i}": i for i in range(MAX_FILTER_ENTRIES + 1)}
    deep = {"a": [[[[[[[[1]]]]]]]]}  # the object and eight arrays: nine levels
    big = {"a": "x" * MAX_FILTER_SIZE}
    ids = [str(uuid.uuid4())] * (MAX_IDS + 1)
    names = ["values"] * (MAX_NAMES + 1)
    most, le = "at most", "less than or equal to"
    return [
        ("POST", "/threads", {"thread_id": LONG}, ["thread_id"], f"{most} 200 characters"),
        ("POST", "/threads", {"metadata": {LONG: 1}}, ["metadata"], f"{most} 200"),
        ("PATCH", t, {"metadata": {LONG: 1}}, ["metadata"], f"{most} 200"),
        ("POST", "/assistants", {"graph_id": LONG}, ["graph_id"], f"{most} 200 characters"),
        ("POST", "/assistants", {"graph_id": "echo", "name": LONG}, ["name"], f"{most} 200"),
        ("PATCH", "/assistants/echo", {"name": LONG}, ["name"], f"{most} 200 characters"),
        ("POST", f"{t}/runs", {**run, "metadata": {LONG: 1}}, ["metadata"], f"{most} 200"),
        ("POST", f"{t}/runs", {"assistant_id": LONG}, ["assistant_id"], f"{most} 200"),
        ("POST", f"{t}/runs", {**run, "interrupt_before": names}, ["interrupt_before"], most),
        ("POST", f"{t}/state", {"values": {}, "as_node": LONG}, ["as_node"], f"{most} 200"),
        ("PUT", "/store/items", {"namespace": ["n"], "key": LONG}, ["key"], f"{most} 200"),
        ("POST", "/threads/search", {"metadata": wide}, ["metadata"], f"{most} 100"),
        ("POST", "/threads/count", {"values": deep}, ["values"], f"{most} {MAX_FILTER_DEPTH}"),
        ("POST", "/assistants/search", {"metadata": big}, ["metadata"], f"{most} 65536"),
        ("POST", "/store/items/search", {"filter": {LONG: 1}}, ["filter"], f"{most} 200"),
        ("POST", f"{t}/history", {"metadata": wide}, ["metadata"], f"{most} 100"),
        ("POST", "/threads/search", {"ids": ids}, ["ids"], f"{most} 1000 items"),
        ("POST", "/runs/cancel", {"run_ids": ids}, ["run_ids"], f"{most} 1000 items"),
        ("POST", "/threads/search", {"select": names}, ["select"], f"{most} 100 items"),
        ("POST", f"{t}/history", {"select": names}, ["select"], f"{most} 100 items"),
        ("POST", "/runs/batch", [run] * (MAX_BATCH_RUNS + 1), [], f"{most} 100 items"),
        ("POST", "/threads/search", {"limit": MAX_PAGE_SIZE + 1}, ["limit"], f"{le} 1000"),
        ("POST", "/assistants/search", {"offset": MAX_OFFSET + 1}, ["offset"], le),
        ("POST", "/threads/search", {"limit": True}, ["limit"], "a valid integer"),
        ("POST", "/assistants/search", {"offset": 2.0}, ["offset"], "a valid integer"),
        ("POST", "/store/namespaces", {"max_depth": 101}, ["max_depth"], f"{le} 100"),
        ("POST", "/runs", {**run, "after_seconds": 366 * 24 * 3600}, ["after_seconds"], le),
    ]


async def test_lengths_counts_and_ranges_are_refused_naming_the_field(
    http: httpx.AsyncClient,
) -> None:
    thread_id = (await http.post("/threads", json={"metadata": {"graph_id": "echo"}})).json()[
        "thread_id"
    ]
    before = await stored(http)
    for method, path, body, loc, words in too_long_or_many(thread_id):
        answer = await http.request(method, path, json=body)
        assert answer.status_code == 422, (path, loc, answer.text)
        errors = answer.json()["detail"]
        # A union (interrupt_before) has an error per member: one of them tells.
        named = [e["msg"] for e in errors if e["loc"][1 : len(loc) + 1] == loc]
        assert any(words in msg for msg in named), (path, loc, errors)
    assert await stored(http) == before
    assert (await http.get(f"/threads/{thread_id}/runs")).json() == []


async def test_store_names_and_query_ranges_are_refused(http: httpx.AsyncClient) -> None:
    label = "n" * 120
    namespace = [label, label]  # 241 characters with the separator
    put = await http.put("/store/items", json={"namespace": namespace, "key": "k", "value": {}})
    assert put.status_code == 422
    assert put.json()["detail"] == (
        "namespace: the labels have 241 characters, counting one between labels; at most 200."
    )
    read = await http.get("/store/items", params={"namespace": namespace, "key": "k"})
    assert read.status_code == 422 and "at most 200" in read.json()["detail"]
    key = await http.get("/store/items", params={"namespace": "n", "key": LONG})
    assert key.status_code == 422 and key.json()["detail"][0]["loc"] == ["query", "key"]
    prefix = await http.post("/store/items/search", json={"namespace_prefix": ["x" * 50_000]})
    assert prefix.status_code == 422 and "namespace_prefix" in prefix.json()["detail"]
    assert (await http.post("/store/items/search", json={})).json() == {"items": []}

    thread_id = (await http.post("/threads", json={})).json()["thread_id"]
    runs = await http.get(f"/threads/{thread_id}/runs", params={"offset": MAX_OFFSET + 1})
    assert runs.status_code == 422 and runs.json()["detail"][0]["loc"] == ["query", "offset"]
    ran = await http.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": "echo", "input": said("hi"), "stream_resumable": True},
    )
    location = ran.headers["content-location"] + "/stream"
    for last in (str(MAX_EVENT_ID + 1), "9" * 18):
        rejoin = await http.get(location, headers={"Last-Event-ID": last})
        assert rejoin.status_code == 422, last
        assert f"from 0 to {MAX_EVENT_ID}" in rejoin.json()["detail"]
    async with http.stream("GET", location, headers={"Last-Event-ID": str(MAX_EVENT_ID)}) as end:
        assert end.status_code == 200
        assert [line async for line in end.aiter_lines() if line.startswith("data")] == []


async def database_error(url: str, statement: str) -> DBAPIError:
    db = Database(url)
    try:
        async with db.read() as session:
            await session.execute(text(statement))
    except DBAPIError as exc:
        return exc
    finally:
        await db.close()
    raise AssertionError(f"{statement[:40]} did not fail")


async def test_database_errors_a_request_causes_are_4xx(database_url: str) -> None:
    """The net under the limits: what the database refuses of a request is the client's
    to change (413 too large, 422 a bad value), not an outage (503)."""
    if database_url.startswith("sqlite"):
        too_large = "SELECT " + " AND ".join(["1 = 1"] * 1200)
        pattern = "SELECT 'a' LIKE '" + "%a" * 30_000 + "'"
        assert refused_by_database(await database_error(database_url, too_large)) == 413
        assert refused_by_database(await database_error(database_url, pattern)) == 413
        unknown = await database_error(database_url, "SELECT * FROM no_such_table")
    else:
        columns = ", ".join(f"{i} AS c{i}" for i in range(2000))
        assert refused_by_database(await database_error(database_url, f"SELECT {columns}")) == 413
        out_of_range = "SELECT CAST(2147483648 AS integer)"
        assert refused_by_database(await database_error(database_url, out_of_range)) == 422
        unknown = await database_error(database_url, "SELECT * FROM no_such_table")
    assert refused_by_database(unknown) is None  # a bug: still a 500


def test_limits_stay_within_what_the_databases_hold() -> None:
    """Owner, namespace and key of a store item together fit PostgreSQL's largest btree
    entry (2704 bytes) in the worst case: every character four bytes of UTF-8."""
    assert 3 * MAX_KEY_LENGTH * 4 + 64 <= 2704
