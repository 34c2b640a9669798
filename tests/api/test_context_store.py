"""Graphs get the server's context and store (issue 23, item 2): a run's `context` over
its assistant's reaches the graph as `Runtime.context` (422 when it does not fit the
graph's context_schema), `config["configurable"]` carries the run's ids and its user,
and the graph's store is `/store`, each user's own. On both dialects, with two users."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import jwt
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from app.config import Settings
from app.main import create_app
from tests.helpers import ServeApp, client, new_thread

SECRET = "a-test-secret-long-enough-for-hs256-0123456789"
GRAPH = "memory"


@pytest.fixture
def url(serve_app: ServeApp, database_url: str) -> str:
    settings = Settings(
        database_url=database_url,
        graphs=json.dumps({GRAPH: "tests.api.context_graph:graph"}),
        auth="jwt",
        jwt_secret=SECRET,
    )
    return serve_app(create_app(settings))


def as_user(url: str, user: str) -> LangGraphClient:
    """The official client, signed in as `user`."""
    bearer = jwt.encode({"sub": user, "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")
    return client(url, headers={"Authorization": f"Bearer {bearer}"})


async def test_a_graph_reads_the_context_and_writes_its_users_store(url: str) -> None:
    alice, bob = as_user(url, "alice"), as_user(url, "bob")
    assistant = await alice.assistants.create(
        GRAPH, context={"style": "terse"}, config={"tags": ["a"], "max_concurrency": 4}
    )
    thread_id = await new_thread(alice)

    values = await alice.runs.wait(
        thread_id,
        assistant["assistant_id"],
        input={"notes": []},
        context={"user_name": "ally"},
        config={"tags": ["r", "a"], "max_concurrency": 2},
    )

    # The run's context over the assistant's, as the graph's dataclass.
    assert values["notes"] == ["ally/terse/alice", "remembered ['ally']"]
    [run] = await alice.runs.list(thread_id)
    item = await alice.store.get_item(["memories", "ally"], "last")
    assert item["value"] == {
        "thread_id": thread_id,
        "run_id": run["run_id"],
        "assistant_id": assistant["assistant_id"],
        "graph_id": GRAPH,
        "user_id": "alice",
        "langgraph_auth_user_id": "alice",
        "style": "terse",
        "identity": "alice",
        # The assistant's tags, then the run's; the run's limit over the assistant's.
        "tags": ["a", "r"],
        "max_concurrency": 2,
        # The context is in the configurable too, as LangGraph's server puts it there.
        "configurable_context": ["ally", "terse"],
    }
    # Bob's graph runs write and read Bob's items only.
    assert (await bob.store.search_items(["memories"]))["items"] == []
    bob_thread = await new_thread(bob)
    bobs = await bob.runs.wait(bob_thread, GRAPH, input={"notes": []}, context={"user_name": "bo"})
    assert bobs["notes"] == ["bo/plain/bob", "remembered ['bo']"]
    found = (await alice.store.search_items(["memories"]))["items"]
    assert [item["namespace"] for item in found] == [["memories", "ally"]]


async def test_a_client_sets_user_id_as_on_langgraph_server(url: str) -> None:
    """A client's `config.configurable.user_id` reaches the graph, as LangGraph's server
    gives it (LangGraph's memory tutorial keys its store by it); the run is still the
    owner's: `langgraph_auth_user_id` names them, and the store written is theirs."""
    alice, bob = as_user(url, "alice"), as_user(url, "bob")
    thread_id = await new_thread(alice)
    await alice.runs.wait(
        thread_id,
        GRAPH,
        input={"notes": []},
        context={"user_name": "ally"},
        config={"configurable": {"user_id": "bob"}},
    )
    item = await alice.store.get_item(["memories", "ally"], "last")
    assert (item["value"]["user_id"], item["value"]["langgraph_auth_user_id"]) == ("bob", "alice")
    assert (await bob.store.search_items(["memories"]))["items"] == []


async def test_a_configs_own_keys_reach_the_configurable_under_the_servers(url: str) -> None:
    """A key of a config's own goes into its configurable, as LangChain's config moves it
    (`user_id` at the top, as some clients send it); the keys the server sets there (the
    thread, the user the run is for) stay the server's whatever the config says."""
    alice = as_user(url, "alice")
    thread_id, elsewhere = await new_thread(alice), str(uuid.uuid4())
    loose = {"user_id": "carol", "thread_id": elsewhere, "langgraph_auth_user_id": "bob"}
    await alice.runs.wait(
        thread_id,
        GRAPH,
        input={"notes": []},
        context={"user_name": "ally"},
        config=loose,  # type: ignore[arg-type]
    )
    item = await alice.store.get_item(["memories", "ally"], "last")
    seen = {key: item["value"][key] for key in loose}
    assert seen == {"user_id": "carol", "thread_id": thread_id, "langgraph_auth_user_id": "alice"}
    async with httpx.AsyncClient(base_url=url, headers=alice.http.client.headers) as http:
        body = {"assistant_id": GRAPH, "config": {"__pregel_store": "x"}}
        answer = await http.post(f"/threads/{thread_id}/runs/wait", json=body)
    assert answer.status_code == 422 and "'__pregel_store'" in answer.text


async def test_a_context_given_in_the_configurable_reaches_the_graph(url: str) -> None:
    """A client written before `context` (LangGraph's `RemoteGraph` among them) gives it
    in `config.configurable`: without a `context`, the keys there that the graph's
    context schema names are its context, as LangGraph's server reads them, for an
    assistant and for a run (the run's over the assistant's)."""
    alice = as_user(url, "alice")
    assistant = await alice.assistants.create(
        GRAPH, config={"configurable": {"style": "terse", "other": 1}}
    )
    thread_id = await new_thread(alice)
    values = await alice.runs.wait(
        thread_id,
        assistant["assistant_id"],
        input={"notes": []},
        config={"configurable": {"user_name": "ally", "unrelated": True}},
    )
    assert values["notes"][0] == "ally/terse/alice"
    # A context given wins over the configurable's, which is then the graph's own.
    given = await alice.runs.wait(
        thread_id,
        GRAPH,
        input={"notes": []},
        context={"user_name": "bea"},
        config={"configurable": {"user_name": "ally", "style": "long"}},
    )
    assert given["notes"][-2] == "bea/plain/alice"


async def test_a_bad_max_concurrency_is_refused(url: str) -> None:
    alice = as_user(url, "alice")
    thread_id = await new_thread(alice)
    for bad in (0, -1, "many"):
        with pytest.raises(UnprocessableEntityError) as refused:
            await alice.runs.create(
                thread_id, GRAPH, input={"notes": []}, config={"max_concurrency": bad}
            )
        assert "max_concurrency" in refused.value.response.text
    assert await alice.runs.list(thread_id) == []


@pytest.mark.parametrize(
    ("context", "problem"),
    [({}, "user_name: Field required"), ({"user_name": ["x"]}, "user_name: Input should be")],
)
async def test_a_context_that_does_not_fit_is_refused_before_the_run(
    url: str, context: dict[str, object], problem: str
) -> None:
    alice = as_user(url, "alice")
    thread_id = await new_thread(alice)
    with pytest.raises(UnprocessableEntityError) as refused:
        await alice.runs.create(thread_id, GRAPH, input={"notes": []}, context=context)
    assert problem in refused.value.response.json()["detail"]
    assert await alice.runs.list(thread_id) == []


async def test_the_schemas_are_the_graphs(url: str) -> None:
    schemas = await as_user(url, "alice").assistants.get_schemas(GRAPH)
    context = schemas["context_schema"]
    assert (context["title"], sorted(context["properties"]), context["required"]) == (
        "Context",
        ["remember_for", "style", "user_name"],
        ["user_name"],
    )
    # As LangGraph's server gives them: a field's title and default (a form shows them).
    assert context["properties"]["style"] == {
        "default": "plain",
        "title": "Style",
        "type": "string",
    }
    # The config schema that forms written for LangGraph's server read: the context's
    # keys, as what a config's `configurable` takes.
    assert schemas["config_schema"] == context
    notes = {"items": {"type": "string"}, "title": "Notes", "type": "array"}
    assert schemas["state_schema"] == {
        "properties": {"notes": {**notes, "default": None}},  # a state may lack any key
        "title": "memory_state",  # an unnamed graph is named by its id, as LangGraph's server does
        "type": "object",
    }
    assert schemas["input_schema"] == schemas["output_schema"]
    assert schemas["input_schema"]["properties"] == {"notes": notes}
