"""The store through the official client, on SQLite and on PostgreSQL."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError


async def test_items_search_and_namespaces(server: str) -> None:
    client = get_client(url=server)
    await client.store.put_item(["users", "u1", "prefs"], "theme", {"color": "dark", "size": 2})
    await client.store.put_item(["users", "u1", "prefs"], "lang", {"code": "fr", "tags": ["a"]})
    await client.store.put_item(["users", "u2"], "theme", {"color": "light"})
    await client.store.put_item(["users_x"], "theme", {"color": "dark"})
    await client.store.put_item(["docs"], "readme", {"text": "100% done_"})

    item = await client.store.get_item(["users", "u1", "prefs"], "theme")
    assert item["namespace"] == ["users", "u1", "prefs"] and item["value"]["color"] == "dark"
    await client.store.put_item(["users", "u1", "prefs"], "theme", {"color": "blue"})
    updated = await client.store.get_item(["users", "u1", "prefs"], "theme")
    assert updated["value"] == {"color": "blue"}
    assert updated["created_at"] == item["created_at"] < updated["updated_at"]
    async with httpx.AsyncClient(base_url=server) as http:
        repeated = await http.get(
            "/store/items", params=[("namespace", "users"), ("namespace", "u2"), ("key", "theme")]
        )
        assert repeated.json()["value"] == {"color": "light"}

    def keys(found: dict[str, list[dict[str, object]]]) -> list[tuple[object, object]]:
        return [(tuple(i["namespace"]), i["key"]) for i in found["items"]]  # type: ignore[arg-type]

    under_users = await client.store.search_items(["users"])
    assert sorted(keys(under_users)) == [
        (("users", "u1", "prefs"), "lang"),
        (("users", "u1", "prefs"), "theme"),
        (("users", "u2"), "theme"),
    ]
    assert keys(under_users)[0] == (("users", "u1", "prefs"), "theme")  # last updated first
    assert all(i["score"] is None for i in under_users["items"])
    light = await client.store.search_items(["users"], filter={"color": "light"})
    assert keys(light) == [(("users", "u2"), "theme")]
    tagged = await client.store.search_items([], filter={"tags": ["a"]})
    assert keys(tagged) == [(("users", "u1", "prefs"), "lang")]
    paged = await client.store.search_items(["users"], limit=1, offset=1, query="anything")
    assert keys(paged) == [keys(under_users)[1]]

    listed = await client.store.list_namespaces()
    assert listed["namespaces"] == [
        ["docs"],
        ["users", "u1", "prefs"],
        ["users", "u2"],
        ["users_x"],
    ]
    shallow = await client.store.list_namespaces(prefix=["users"], max_depth=2)
    assert shallow["namespaces"] == [["users", "u1"], ["users", "u2"]]
    wild = await client.store.list_namespaces(prefix=["users", "*"], suffix=["prefs"])
    assert wild["namespaces"] == [["users", "u1", "prefs"]]
    page = await client.store.list_namespaces(limit=2, offset=1)
    assert page["namespaces"] == [["users", "u1", "prefs"], ["users", "u2"]]
    # A label no namespace can have is refused, naming the field it is in.
    async with httpx.AsyncClient(base_url=server) as http:
        for field in ("prefix", "suffix"):
            answer = await http.post("/store/namespaces", json={field: ["users", ""]})
            assert answer.status_code == 422 and answer.json()["detail"].startswith(f"{field}:")

    await client.store.delete_item(["users", "u2"], "theme")
    await client.store.delete_item(["users", "u2"], "theme")
    assert await client.store.get_item(["users", "u2"], "theme") is None


async def test_bad_requests(server: str) -> None:
    client = get_client(url=server)
    with pytest.raises(UnprocessableEntityError):
        await client.store.put_item(["a"], "k", {"v": 1}, ttl=0)
    with pytest.raises(UnprocessableEntityError):
        await client.store.put_item([], "k", {"v": 1})
    with pytest.raises(UnprocessableEntityError):
        await client.store.put_item(["a", ""], "k", {"v": 1})
    with pytest.raises(UnprocessableEntityError):
        await client.store.search_items(["a"], filter={"n": {"$in": [1]}})
    async with httpx.AsyncClient(base_url=server) as http:
        not_a_dict = await http.put(
            "/store/items", json={"namespace": ["a"], "key": "k", "value": [1]}
        )
        assert not_a_dict.status_code == 422
        no_key = await http.get("/store/items", params={"namespace": "a"})
        assert no_key.status_code == 422
