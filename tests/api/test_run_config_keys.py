"""A run starts from the version its own `checkpoint`/`checkpoint_id` fields name, or from
the head: the keys that place checkpoints in `config.configurable` (a client's or its
assistant's) are ignored, as LangGraph's server ignores them, rather than failing the run
(and the thread) or sending it back in time."""

from typing import Any

from tests.helpers import client, new_id, new_thread, said

# What a client (or an old assistant) may carry in its config: a version that is not the
# thread's, a subgraph's namespace, a map of subgraph versions.
PLACING = {
    "checkpoint_id": new_id(),
    "checkpoint_ns": "talk:" + new_id(),
    "checkpoint_map": {"": new_id()},
}


def texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"]]


async def test_a_runs_config_does_not_place_it(server: str) -> None:
    api = client(server)
    thread_id = await new_thread(api)
    first = await api.runs.wait(thread_id, "echo", input=said("one"))
    # An older version of the thread, named in the config only: the run goes on from the head.
    [*_, oldest] = await api.threads.get_history(thread_id)
    config = {"configurable": {**PLACING, "checkpoint_id": oldest["checkpoint"]["checkpoint_id"]}}
    second = await api.runs.wait(thread_id, "echo", input=said("two"), config=config)
    assert texts(second) == [*texts(first), "two", "You said: two"]
    unknown = {"configurable": {**PLACING, "user": "ann"}}
    third = await api.runs.wait(thread_id, "echo", input=said("three"), config=unknown)
    assert "__error__" not in third and texts(third)[-1] == "You said: three"
    assert {run["status"] for run in await api.runs.list(thread_id)} == {"success"}
    assert (await api.threads.get(thread_id))["status"] == "idle"
    # The config is kept as sent, as LangGraph's server keeps it.
    [last, *_] = await api.runs.list(thread_id)
    assert last["kwargs"]["config"] == unknown


async def test_an_assistants_config_does_not_place_its_runs(server: str) -> None:
    api = client(server)
    assistant = await api.assistants.create("echo", config={"configurable": PLACING})
    thread_id = await new_thread(api)
    for turn in ("one", "two"):
        answer = await api.runs.wait(thread_id, assistant["assistant_id"], input=said(turn))
        assert texts(answer)[-1] == f"You said: {turn}", answer
    assert len((await api.threads.get_state(thread_id))["values"]["messages"]) == 4
    # A stateless run with it too.
    answer = await api.runs.wait(None, assistant["assistant_id"], input=said("alone"))
    assert texts(answer) == ["alone", "You said: alone"]
