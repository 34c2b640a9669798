"""The engine's `RemoteGraph` (`engine.pregel.remote`) against a real server, beside
LangGraph's (a dev-only oracle) on the same calls: a served graph used as a local one,
sync and async; its subgraphs' parts; as a node of a local graph, whose interrupts stop
the local run; with the SDK's clients instead of its own; and its errors."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver as LangGraphSaver
from langgraph.graph import START as LANGGRAPH_START
from langgraph.graph import StateGraph as LangGraphStateGraph
from langgraph.pregel.remote import RemoteGraph as LangGraphRemoteGraph
from langgraph.types import Command as LangGraphCommand
from langgraph_sdk import get_client, get_sync_client

from engine.checkpoint.memory import InMemorySaver
from engine.graph import START, StateGraph
from engine.pregel.remote import RemoteException, RemoteGraph
from engine.types import Command
from tests.api.test_remote_graph import AskState, thread


def contents(values: dict[str, Any]) -> list[str]:
    return [message["content"] for message in values.get("messages", [])]


def used_locally(remote: Any, command: Callable[..., Any], url: str) -> list[Any]:
    """What a program sees of the served `echo` and `asker` graphs, call by call."""
    seen: list[Any] = []
    said = {"messages": [HumanMessage("hello", id="h1")]}
    seen.append(contents(remote.invoke(said)))
    config = thread(url)
    parts = list(remote.stream(said, config, stream_mode=["updates", "values"]))
    seen.append([part.event for part in parts])
    seen.append([contents(part.data) for part in parts if part.event == "values"])
    seen.append([list(part.data) for part in parts if part.event == "updates"])
    seen.append(list(remote.stream(said, thread(url), stream_mode="updates"))[0]["talk"].keys())
    state = remote.get_state(config)
    seen.append((contents(state.values), state.next, state.tasks, state.interrupts))
    seen.append(state.config["configurable"]["thread_id"] == config["configurable"]["thread_id"])
    seen.append(state.metadata["step"])
    history = list(remote.get_state_history(config))
    seen.append([len(s.values.get("messages", [])) for s in history])
    seen.append(list(remote.get_state_history(config, limit=1))[0].config == state.config)
    older = remote.get_state(history[1].config)
    seen.append((contents(older.values), older.next))
    updated = remote.update_state(config, {"messages": [HumanMessage("more", id="h2")]})
    seen.append(remote.get_state(config).config == updated)
    seen.append(list(remote.get_graph().nodes))

    asker = remote.copy({"assistant_id": "asker"})
    config = thread(url)
    stopped = asker.invoke({"question": "why?"}, config)
    seen.append([i["value"] for i in stopped["__interrupt__"]])
    state = asker.get_state(config)
    seen.append((state.next, [i.value for i in state.interrupts], [t.name for t in state.tasks]))
    seen.append(asker.invoke(command(resume="because"), config)["answers"])

    nested = remote.copy({"assistant_id": "nested"})
    config = thread(url)
    parts = list(nested.stream({"question": "deep?"}, config, subgraphs=True))
    seen.append([(len(ns), ns[0].split(":")[0] if ns else None, list(data)) for ns, data in parts])
    updates = nested.stream({"question": "x"}, thread(url), stream_mode="updates")
    seen.append([[i["value"] for i in part["__interrupt__"]] for part in updates])
    inner = nested.get_state(config, subgraphs=True).tasks[0].state
    seen.append((inner.next, inner.values))
    return seen


def test_a_served_graph_used_as_a_local_one_as_with_langgraphs(server: str) -> None:
    ours = used_locally(RemoteGraph("echo", url=server), Command, server)
    theirs = used_locally(LangGraphRemoteGraph("echo", url=server), LangGraphCommand, server)
    assert ours == theirs


def test_the_sdks_clients_do_as_its_own(server: str) -> None:
    remote = RemoteGraph(
        "echo", client=get_client(url=server), sync_client=get_sync_client(url=server)
    )
    assert used_locally(remote, Command, server) == used_locally(
        RemoteGraph("echo", url=server), Command, server
    )


def the_same_calls(remote: Any, url: str) -> list[Any]:
    """A thread's calls, made sync; `async_calls` makes them async."""
    said = {"messages": [HumanMessage("hello", id="h1")]}
    config = thread(url)
    seen: list[Any] = [contents(remote.invoke(said, config))]
    again = {"messages": [HumanMessage("again", id="h2")]}
    seen.append([contents(p.data) for p in remote.stream(again, config, stream_mode=["values"])])
    seen.append(contents(remote.get_state(config).values))
    seen.append([len(s.values.get("messages", [])) for s in remote.get_state_history(config)])
    updated = remote.update_state(config, {"messages": [HumanMessage("x", id="x")]})
    seen.append(remote.get_state(config).config == updated)
    seen.append(list(remote.get_graph().nodes))
    return seen


async def async_calls(remote: RemoteGraph, url: str) -> list[Any]:
    said = {"messages": [HumanMessage("hello", id="h1")]}
    config = thread(url)
    seen: list[Any] = [contents(await remote.ainvoke(said, config))]
    again = {"messages": [HumanMessage("again", id="h2")]}
    parts = [p async for p in remote.astream(again, config, stream_mode=["values"])]
    seen.append([contents(p.data) for p in parts])
    seen.append(contents((await remote.aget_state(config)).values))
    seen.append(
        [len(s.values.get("messages", [])) async for s in remote.aget_state_history(config)]
    )
    updated = await remote.aupdate_state(config, {"messages": [HumanMessage("x", id="x")]})
    seen.append((await remote.aget_state(config)).config == updated)
    seen.append(list((await remote.aget_graph()).nodes))
    return seen


def test_async_calls_give_what_sync_calls_give(server: str) -> None:
    remote = RemoteGraph("echo", url=server)
    expected = the_same_calls(remote, server)
    assert expected == the_same_calls(LangGraphRemoteGraph("echo", url=server), server)
    assert asyncio.run(async_calls(remote, server)) == expected


def test_v2_parts_and_output(server: str) -> None:
    asker = RemoteGraph("asker", url=server)
    theirs = LangGraphRemoteGraph("asker", url=server)
    for remote in (asker, theirs):
        output = remote.invoke({"question": "?"}, thread(server), version="v2")
        assert output.value == {"question": "?", "answers": []}
        assert [i.value for i in output.interrupts] == [{"question": "?"}]
    parts = list(asker.stream({"question": "?"}, thread(server), version="v2"))
    expected = list(theirs.stream({"question": "?"}, thread(server), version="v2"))
    assert [(p["type"], p["ns"]) for p in parts] == [(p["type"], p["ns"]) for p in expected]


def as_a_node(remote: Any, builder: Any, start: str, saver: Any, command: Any) -> list[Any]:
    """A local graph whose node is the remote `asker`: its interrupt stops the local run,
    the remote parts show in the local stream under the node's namespace."""
    local = builder(AskState).add_node("remote", remote).add_edge(start, "remote")
    graph = local.compile(checkpointer=saver)
    mine = {"configurable": {"thread_id": str(uuid.uuid4())}}
    seen: list[Any] = []
    first = graph.invoke({"question": "where?"}, mine)
    seen.append([i.value for i in first["__interrupt__"]])
    seen.append(graph.get_state(mine).next)
    parts = list(graph.stream({"question": "where?"}, mine, subgraphs=True))
    seen.append([(ns[0].split(":")[0] if ns else None, list(data)) for ns, data in parts])
    seen.append(
        [
            mode
            for mode, _ in graph.stream({"question": "w"}, mine, stream_mode=["values", "updates"])
        ]
    )
    seen.append(remote.invoke(command(resume="here"), mine)["answers"])
    return seen


def test_as_a_node_of_a_local_graph_as_with_langgraph(server: str) -> None:
    ours = as_a_node(RemoteGraph("asker", url=server), StateGraph, START, InMemorySaver(), Command)
    theirs = as_a_node(
        LangGraphRemoteGraph("asker", url=server),
        LangGraphStateGraph,
        LANGGRAPH_START,
        LangGraphSaver(),
        LangGraphCommand,
    )
    assert ours == theirs


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_errors_name_what_is_wrong(server: str) -> None:
    with pytest.raises(ValueError, match="no sync client: give `url` or `sync_client`"):
        RemoteGraph("echo").invoke({})
    with pytest.raises(ValueError, match="no async client"):
        asyncio.run(RemoteGraph("echo").ainvoke({}))
    remote = RemoteGraph("asker", url=server)
    with pytest.raises(ValueError, match="configurable.thread_id"):
        remote.get_state({})
    with pytest.raises(httpx.HTTPStatusError, match="thread_id must be a UUID"):
        remote.invoke({"question": "?"}, {"configurable": {"thread_id": "not-a-uuid"}})
    with pytest.raises(RemoteException):
        RemoteGraph("looping", url=server).invoke({"n": 0}, {"recursion_limit": 3})
    with pytest.raises(NotImplementedError, match="update_state for each"):
        remote.bulk_update_state({}, [])
    with pytest.raises(NotImplementedError, match=r"use astream\(\)"):
        asyncio.run(remote.astream_events({"question": "?"}, version="v2"))
