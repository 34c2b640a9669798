"""The store's answers LangGraph's server gives too: a missing item is `null`, search
filters take the comparison operators, namespaces follow the engine's rules. On SQLite
and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError

ITEMS: dict[str, dict[str, Any]] = {
    "low": {"score": 1, "tag": "a", "meta": {"level": 2, 'é"': 5}},
    "mid": {"score": 2.5, "tag": "b", "meta": {"level": 7, 'é"': 1}},
    "high": {"score": 10, "tag": "a", "meta": {"level": 9}},
    "text": {"score": " 4e0 ", "tag": None},
    "word": {"score": "many", "tag": True},
    "none": {"other": 1},
}


async def _keys(server: str, filter: dict[str, Any], **page: int) -> list[str]:
    found = await get_client(url=server).store.search_items(["f"], filter=filter, **page)
    return sorted(item["key"] for item in found["items"])


async def test_a_missing_item_is_null(server: str) -> None:
    client = get_client(url=server)
    assert await client.store.get_item(["users", "u1"], "nope") is None
    await client.store.put_item(["users", "u1"], "k", {"v": 1})
    assert (await client.store.get_item(["users", "u1"], "k"))["value"] == {"v": 1}
    async with httpx.AsyncClient(base_url=server) as http:
        missing = await http.get("/store/items", params={"namespace": "users.u1", "key": "x"})
        assert (missing.status_code, missing.json()) == (200, None)


async def test_filter_operators(server: str) -> None:
    client = get_client(url=server)
    for key, value in ITEMS.items():
        await client.store.put_item(["f"], key, value)

    assert await _keys(server, {"score": {"$gt": 2}}) == ["high", "mid", "text"]
    assert await _keys(server, {"score": {"$gte": 2.5, "$lt": 10}}) == ["mid", "text"]
    assert await _keys(server, {"score": {"$lte": "1"}}) == ["low"]  # a numeric bound
    assert await _keys(server, {"score": {"$eq": 2.5}}) == ["mid"]
    assert await _keys(server, {"score": {"$eq": 10.0}}) == ["high"]
    assert await _keys(server, {"tag": {"$eq": "a"}}) == ["high", "low"]
    assert await _keys(server, {"tag": {"$eq": None}}) == ["text"]
    assert await _keys(server, {"tag": {"$eq": True}}) == ["word"]
    # A field an operator names must be there, as in LangGraph's database stores.
    assert await _keys(server, {"tag": {"$ne": "a"}}) == ["mid", "text", "word"]
    # Nested fields, with values to contain beside them, and keys a JSON path cannot name.
    assert await _keys(server, {"tag": "a", "meta": {"level": {"$gt": 5}}}) == ["high"]
    assert await _keys(server, {"meta": {'é"': {"$gte": 2}}}) == ["low"]
    assert await _keys(server, {"meta": {'é"': {"$ne": 5}}}) == ["mid"]
    # Filtered in SQL, so pages are of the items that pass.
    assert await _keys(server, {"score": {"$gt": 0}}, limit=2, offset=2) == ["low", "mid"]


async def test_order_operators_compare_big_integers_exactly(server: str) -> None:
    """Nanosecond timestamps and snowflake ids are above 2**53, where a double rounds."""
    client = get_client(url=server)
    for n in range(4):
        await client.store.put_item(["big"], f"k{n}", {"n": 2**53 + n})
    await client.store.put_item(["big"], "huge", {"n": 2**63 - 1})

    async def keys(filter: dict[str, Any]) -> list[str]:
        found = await client.store.search_items(["big"], filter=filter)
        return sorted(item["key"] for item in found["items"])

    assert await keys({"n": {"$gt": 2**53 + 1}}) == ["huge", "k2", "k3"]
    assert await keys({"n": {"$gte": 2**53 + 3}}) == ["huge", "k3"]
    assert await keys({"n": {"$lt": 2**53 + 1}}) == ["k0"]
    assert await keys({"n": {"$gte": 2**63 - 1}}) == ["huge"]


@pytest.mark.parametrize(
    ("filter", "named"),
    [
        ({"score": {"$gt": 1, "$foo": 2}}, "$foo"),
        ({"meta": {"level": {"$in": [1]}}}, "$in"),
        ({"score": {"$gt": "many"}}, "needs a number"),
        ({"score": {"$gt": "inf"}}, "finite"),
        ({"score": {"$eq": {"a": 1}}}, "filter.score"),
        ({"score": {"$gt": 1, "level": 2}}, "'level' is not an operator"),
        ({"tags": [{"$gt": 1}]}, "not an array"),
        ({"$gt": 1}, "compares a field"),
    ],
)
async def test_refused_filters(server: str, filter: dict[str, Any], named: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        answer = await http.post("/store/items/search", json={"filter": filter})
    assert answer.status_code == 422
    assert named in answer.json()["detail"]


async def test_namespaces_follow_the_engine_rules(server: str) -> None:
    client = get_client(url=server)
    async with httpx.AsyncClient(base_url=server) as http:
        emptied = await http.request("DELETE", "/store/items", json={"namespace": [], "key": "k"})
        assert emptied.status_code == 422
        assert "at least one label" in emptied.json()["detail"]
    with pytest.raises(UnprocessableEntityError):
        await client.store.put_item(["langgraph", "x"], "k", {"v": 1})
    # "*" is a label like any other (it matches any label only in a namespace listing).
    await client.store.put_item(["*"], "k", {"v": 1})
    assert (await client.store.get_item(["*"], "k"))["value"] == {"v": 1}
