"""Assistants through the official client (raw HTTP where it has no method), on SQLite and
on PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TypedDict

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from app.graphs import system_assistant_id
from app.services.assistants import graph_schemas
from engine.func import entrypoint
from engine.graph import START, StateGraph
from tests.api.graphs import GRAPHS


async def test_create_search_update_delete(server: str) -> None:
    client = get_client(url=server)
    made = await client.assistants.create(
        "echo",
        config={"recursion_limit": 7, "configurable": {"tone": "dry"}},
        metadata={"team": {"name": "core", "size": 3}, "tags": ["a", "b"]},
        name="Echo bot",
        description="Says it back.",
    )
    assert made["graph_id"] == "echo" and made["version"] == 1
    assert made["config"] == {"recursion_limit": 7, "configurable": {"tone": "dry"}}
    assert await client.assistants.get(made["assistant_id"]) == made
    again = await client.assistants.create(
        "echo", assistant_id=made["assistant_id"], if_exists="do_nothing"
    )
    assert again == made
    with pytest.raises(ConflictError):
        await client.assistants.create("echo", assistant_id=made["assistant_id"])
    other = await client.assistants.create("asker", metadata={"team": {"name": "web"}})

    system = await client.assistants.get("echo")
    assert system["assistant_id"] == system_assistant_id("echo")
    assert system["metadata"] == {"created_by": "system"}
    by_metadata = await client.assistants.search(metadata={"team": {"name": "core"}})
    assert [a["assistant_id"] for a in by_metadata] == [made["assistant_id"]]
    by_list = await client.assistants.search(metadata={"tags": ["b"]})
    assert [a["assistant_id"] for a in by_list] == [made["assistant_id"]]
    by_graph = await client.assistants.search(graph_id="asker")
    assert {a["assistant_id"] for a in by_graph} == {
        other["assistant_id"],
        system_assistant_id("asker"),
    }
    assert [a["name"] for a in await client.assistants.search(name="BOT")] == ["Echo bot"]
    every = await client.assistants.count()
    assert every == len(GRAPHS) + 2  # a system assistant per graph, and two made here
    assert await client.assistants.count(graph_id="echo") == 2
    first = await client.assistants.search(
        limit=2, sort_by="assistant_id", sort_order="asc", response_format="object"
    )
    assert first["next"] == "2"
    rest = await client.assistants.search(
        offset=2, limit=100, sort_by="assistant_id", sort_order="asc"
    )
    ids = [a["assistant_id"] for a in first["assistants"]] + [a["assistant_id"] for a in rest]
    assert ids == sorted(set(ids)) and len(ids) == every
    picked = await client.assistants.search(graph_id="asker", select=["assistant_id", "name"])
    assert all(set(a) == {"assistant_id", "name"} for a in picked)

    changed = await client.assistants.update(
        made["assistant_id"], metadata={"extra": 1}, name="Renamed", config={"tags": ["x"]}
    )
    assert changed["version"] == 2 and changed["name"] == "Renamed"
    assert changed["metadata"] == {**made["metadata"], "extra": 1}
    assert changed["config"] == {"tags": ["x"]}
    moved = await client.assistants.update(made["assistant_id"], graph_id="asker")
    assert moved["graph_id"] == "asker" and moved["version"] == 3

    await client.assistants.delete(made["assistant_id"])
    with pytest.raises(NotFoundError):
        await client.assistants.get(made["assistant_id"])


async def test_a_name_is_searched_in_any_alphabets_case(server: str, database_url: str) -> None:
    """On SQLite, whose LIKE folds ASCII letters only, names are compared casefolded.
    PostgreSQL's ILIKE folds as the database's LC_CTYPE says (these tests' cluster: C,
    ASCII only too)."""
    client = get_client(url=server)
    await client.assistants.create("echo", name="Éclair Ωmega")
    asked = ["clair", "CLAIR"]
    if database_url.startswith("sqlite"):
        asked += ["éCLAIR", "ωMEGA", "clair ω", "ÉCLAIR ΩMEGA"]
    for name in asked:
        found = await client.assistants.search(name=name)
        assert [a["name"] for a in found] == ["Éclair Ωmega"], name


async def test_graph_and_schemas(server: str) -> None:
    client = get_client(url=server)
    drawing = await client.assistants.get_graph("asker")
    assert {n["id"] for n in drawing["nodes"]} == {"__start__", "ask", "done", "__end__"}
    assert {(e["source"], e["target"]) for e in drawing["edges"]} == {
        ("__start__", "ask"),
        ("ask", "done"),
        ("done", "__end__"),
    }
    schemas = await client.assistants.get_schemas(system_assistant_id("asker"))
    assert schemas["graph_id"] == "asker"
    # As LangGraph's server gives them; its state typing's TypedDict, which pydantic
    # refuses before Python 3.12 (LangGraph's server then gives no input schema).
    question = {"title": "Question", "type": "string"}
    answers = {"items": {"type": "string"}, "title": "Answers", "type": "array"}
    assert schemas["state_schema"]["properties"] == {
        "question": {**question, "default": None},
        "answers": {**answers, "default": None},
    }
    assert schemas["input_schema"] == {
        "properties": {"question": question, "answers": answers},
        "title": "AskState",
        "type": "object",
    }
    # No context schema: LangGraph's server gives an empty configurable schema, not null.
    assert schemas["config_schema"] == {} and schemas["context_schema"] is None
    messages = (await client.assistants.get_schemas("echo"))["input_schema"]
    assert messages["required"] == ["messages"]
    assert "HumanMessage" in messages["$defs"]


async def test_a_graph_drawn_with_its_subgraphs_inside(server: str) -> None:
    client = get_client(url=server)
    outside = await client.assistants.get_graph("supervisor")
    assert "researcher" in {n["id"] for n in outside["nodes"]}
    for xray in (True, 1, 3):
        inside = await client.assistants.get_graph("supervisor", xray=xray)
        ids = {n["id"] for n in inside["nodes"]}
        assert {"researcher:draft", "researcher:review"} <= ids and "researcher" not in ids
        # As LangGraph's server draws them: a node's label is its id, the end has none.
        drawn = {n["id"]: n for n in inside["nodes"]}
        assert drawn["researcher:draft"] == {
            "id": "researcher:draft",
            "type": "runnable",
            "data": {"name": "researcher:draft"},
        }
        assert drawn["__end__"] == {"id": "__end__"}
        assert ("researcher:review", "researcher:draft") in {
            (e["source"], e["target"]) for e in inside["edges"]
        }
    async with httpx.AsyncClient(base_url=server) as http:
        for bad in ("-1", "deep"):
            answer = await http.get("/assistants/supervisor/graph", params={"xray": bad})
            assert answer.status_code == 422 and "xray" in answer.text


async def test_subgraph_schemas(server: str) -> None:
    client = get_client(url=server)
    nested = await client.assistants.get_subgraphs("nested")
    asker = await client.assistants.get_schemas("asker")
    # The served graph, unnamed, is named by its id; the same graph as a node is not.
    assert asker["state_schema"]["title"] == "asker_state"
    asker["state_schema"]["title"] = "LangGraphState"
    assert nested == {"inner": {k: v for k, v in asker.items() if k != "graph_id"}}
    supervisor = system_assistant_id("supervisor")
    researcher = await client.assistants.get_subgraphs(supervisor, recurse=True)
    assert list(researcher) == ["researcher"]
    assert "notes" in researcher["researcher"]["state_schema"]["properties"]
    assert await client.assistants.get_subgraphs(supervisor, namespace="researcher") == researcher
    assert await client.assistants.get_subgraphs(supervisor, namespace="plan") == {}
    assert await client.assistants.get_subgraphs("echo") == {}
    with pytest.raises(NotFoundError):
        await client.assistants.get_subgraphs(str(uuid.uuid4()))


async def test_versions_are_kept_and_can_be_gone_back_to(server: str) -> None:
    client = get_client(url=server)
    made = await client.assistants.create(
        "echo", config={"tags": ["a"]}, context={"tone": "dry"}, metadata={"v": 1}, name="One"
    )
    mine = made["assistant_id"]
    await client.assistants.update(mine, metadata={"v": 2}, name="Two", description="2nd")
    third = await client.assistants.update(mine, context={"tone": "warm"}, graph_id="asker")
    assert third["version"] == 3

    versions = await client.assistants.get_versions(mine)
    assert [v["version"] for v in versions] == [3, 2, 1]
    first = versions[-1]
    assert {k: first[k] for k in ("assistant_id", "graph_id", "config", "context", "name")} == {
        "assistant_id": mine,
        "graph_id": "echo",
        # The context shows in the config's configurable too, as LangGraph's server keeps
        # them (a settings form reads either).
        "config": {"tags": ["a"], "configurable": {"tone": "dry"}},
        "context": {"tone": "dry"},
        "name": "One",
    }
    older = await client.assistants.create("echo", config={"configurable": {"tone": "old"}})
    assert (older["context"], older["config"]) == (
        {"tone": "old"},
        {"configurable": {"tone": "old"}},
    )
    assert (await client.assistants.get(older["assistant_id"]))["context"] == {"tone": "old"}
    # Changed through either, both follow: a settings form's edit reaches the graph
    # whichever it reads.
    for patch, tone in (
        ({"context": {"tone": "new"}}, "new"),
        ({"config": {"configurable": {"tone": "b"}}}, "b"),
    ):
        changed = await client.assistants.update(older["assistant_id"], **patch)
        assert (changed["context"], changed["config"]["configurable"]) == ({"tone": tone},) * 2
    assert first["metadata"] == {"v": 1} and first["description"] is None
    assert versions[1]["metadata"] == {"v": 2} and versions[1]["description"] == "2nd"
    assert (versions[0]["graph_id"], versions[0]["context"]) == ("asker", {"tone": "warm"})
    assert [v["version"] for v in await client.assistants.get_versions(mine, {"v": 2})] == [3, 2]
    assert await client.assistants.get_versions(mine, {"v": 9}) == []
    async with httpx.AsyncClient(base_url=server) as http:
        paged = await http.post(f"/assistants/{mine}/versions", json={"limit": 1, "offset": 1})
    assert [v["version"] for v in paged.json()] == [2]
    assert paged.headers["x-pagination-total"] == "3"
    assert paged.headers["x-pagination-next"] == "2"

    back = await client.assistants.set_latest(mine, 1)
    assert back["version"] == 1 and back["updated_at"] > third["updated_at"]
    assert {k: back[k] for k in first if k != "created_at"} == {
        k: first[k] for k in first if k != "created_at"
    }
    assert await client.assistants.get(mine) == back
    onwards = await client.assistants.update(mine, metadata={"w": 1})
    assert onwards["version"] == 4 and onwards["metadata"] == {"v": 1, "w": 1}
    assert onwards["graph_id"] == "echo" and onwards["name"] == "One"

    # Changes at once are numbered one after the other.
    await asyncio.gather(*(client.assistants.update(mine, metadata={"n": n}) for n in range(5)))
    numbers = [v["version"] for v in await client.assistants.get_versions(mine, limit=100)]
    assert numbers == list(range(9, 0, -1))

    with pytest.raises(NotFoundError, match="no version 99"):
        await client.assistants.set_latest(mine, 99)
    async with httpx.AsyncClient(base_url=server) as http:
        for version in (0, -1, 2**40, "one", None):
            refused = await http.post(f"/assistants/{mine}/latest", json={"version": version})
            assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == [
                "body",
                "version",
            ]
        refused = await http.post(f"/assistants/{mine}/versions", json={"limit": 0})
        assert refused.status_code == 422

    # A graph's system assistant has its one version, and stays at it.
    [system] = await client.assistants.get_versions("echo")
    assert system["version"] == 1 and system["metadata"] == {"created_by": "system"}
    with pytest.raises(ConflictError):
        await client.assistants.set_latest("echo", 1)
    with pytest.raises(NotFoundError):
        await client.assistants.get_versions(str(uuid.uuid4()))

    # The versions go with the assistant: its id can be used again from version 1.
    await client.assistants.delete(mine)
    with pytest.raises(NotFoundError):
        await client.assistants.get_versions(mine)
    again = await client.assistants.create("asker", assistant_id=mine)
    assert [v["graph_id"] for v in await client.assistants.get_versions(mine)] == ["asker"]
    assert again["version"] == 1


def test_an_entrypoint_has_schemas_without_a_builder() -> None:
    """Its input and output as its annotations say (LangGraph's server gives these);
    no state; with no annotations, any value."""

    @entrypoint()
    def flow(x: list[int]) -> entrypoint.final[str, int]:
        return entrypoint.final(value="x", save=1)

    @entrypoint()
    def untyped(x):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        return x

    assert graph_schemas(flow).model_dump() == {
        "input_schema": {"title": "LangGraphInput", "type": "array", "items": {"type": "integer"}},
        "output_schema": {"title": "LangGraphOutput", "type": "string"},
        "state_schema": None,
        "config_schema": {},
        "context_schema": None,
    }
    assert graph_schemas(untyped).model_dump()["input_schema"] == {"title": "LangGraphInput"}


def test_the_config_schema_is_the_context_without_the_servers_keys() -> None:
    """LangGraph's server's config schema: the context's keys, less those it sets itself
    (a thread id is not the assistant's to configure)."""

    @dataclass
    class Context:
        thread_id: str
        model: str = "small"

    class Count(TypedDict):
        n: int

    graph = (
        StateGraph(Count, context_schema=Context)
        .add_node("one", lambda state: state)
        .add_edge(START, "one")
        .compile()
    )
    schemas = graph_schemas(graph)
    assert schemas.context_schema is not None and schemas.config_schema is not None
    assert sorted(schemas.context_schema["properties"]) == ["model", "thread_id"]
    assert schemas.config_schema == {
        "properties": {"model": {"default": "small", "title": "Model", "type": "string"}},
        "required": [],
        "title": "Context",
        "type": "object",
    }


async def test_one_id_made_or_deleted_by_many_requests_at_once(server: str) -> None:
    """Requests at the same time on one assistant id: one creates it and the others get
    409 (or, with `if_exists: do_nothing`, the same assistant), never a 500; one delete
    answers 204 and the others 404."""
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        for if_exists in ("raise", "do_nothing"):
            body = {"graph_id": "echo", "assistant_id": str(uuid.uuid4()), "if_exists": if_exists}
            made = await asyncio.gather(*(http.post("/assistants", json=body) for _ in range(16)))
            codes = sorted(answer.status_code for answer in made)
            assert codes == ([200] * 16 if if_exists == "do_nothing" else [200] + [409] * 15)
            assert {a.json()["assistant_id"] for a in made if a.status_code == 200} == {
                body["assistant_id"]
            }
            path = f"/assistants/{body['assistant_id']}"
            gone = await asyncio.gather(*(http.delete(path) for _ in range(16)))
            assert sorted(answer.status_code for answer in gone) == [204] + [404] * 15


async def test_bad_requests(server: str) -> None:
    client = get_client(url=server)
    with pytest.raises(NotFoundError, match="not served"):
        await client.assistants.create("no-such-graph")
    with pytest.raises(NotFoundError):
        await client.assistants.get(str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        await client.assistants.get("no-such-graph")
    with pytest.raises(ConflictError):
        await client.assistants.delete("echo")
    with pytest.raises(ConflictError):
        await client.assistants.update("echo", graph_id="asker")
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.create("echo", assistant_id="not-a-uuid")
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.create("echo", config={"recursion_limit": "lots"})
    async with httpx.AsyncClient(base_url=server) as http:
        bad_sort = await http.post("/assistants/search", json={"sort_by": "color"})
        assert bad_sort.status_code == 422
        too_wide = {f"k{i}": i for i in range(101)}
        bad_filter = await http.post("/assistants/search", json={"metadata": too_wide})
        assert bad_filter.status_code == 422
        assert bad_filter.json()["detail"][0]["loc"] == ["body", "metadata"]
