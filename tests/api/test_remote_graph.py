"""LangGraph's `RemoteGraph` (a dev-only client) against a real server: a served graph
used as if it were local, and as a node of a local LangGraph graph, whose interrupts
stop the local run and whose answers resume the remote thread."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command
from langgraph_sdk import get_sync_client


class AskState(TypedDict, total=False):
    question: str
    answers: Annotated[list[str], operator.add]


def thread(url: str) -> dict[str, Any]:
    created = get_sync_client(url=url).threads.create()
    return {"configurable": {"thread_id": created["thread_id"]}}


def test_a_served_graph_used_as_a_local_one(server: str) -> None:
    echo = RemoteGraph("echo", url=server)
    said = {"messages": [HumanMessage("hello", id="h1")]}
    assert echo.invoke(said)["messages"][-1]["content"] == "You said: hello"
    config = thread(server)
    parts = list(echo.stream(said, config, stream_mode=["updates", "values"]))
    assert [part.event for part in parts] == ["values", "updates", "values"]
    state = echo.get_state(config)
    assert [m["content"] for m in state.values["messages"]] == ["hello", "You said: hello"]
    assert state.next == ()
    assert state.config["configurable"]["thread_id"] == config["configurable"]["thread_id"]
    history = list(echo.get_state_history(config))
    assert [len(s.values.get("messages", [])) for s in history] == [2, 1, 0]
    updated = echo.update_state(config, {"messages": [HumanMessage("more", id="h2")]})
    assert echo.get_state(config).config == updated
    assert list(echo.get_graph().nodes) == ["__start__", "talk", "__end__"]


def test_interrupts_and_resumes_through_a_remote_node(server: str) -> None:
    asker = RemoteGraph("asker", url=server)
    config = thread(server)
    stopped = asker.invoke({"question": "why?"}, config)
    assert stopped["__interrupt__"][0]["value"] == {"question": "why?"}
    assert set(stopped["__interrupt__"][0]) == {"value", "id", "response_schema"}
    assert asker.invoke(Command(resume="because"), config)["answers"] == ["because", "done"]

    # As a node of a local graph: the remote thread is the local run's, and its
    # interrupt is the local node's. (Resuming the local graph runs the node again on
    # its input, a new run of the remote thread, which asks again: RemoteGraph passes
    # no resume down, only LangGraph's `__pregel_resuming`, on LangGraph's server too.
    # The remote thread is answered directly.)
    local = (
        StateGraph(AskState)
        .add_node("remote", asker)
        .add_edge(START, "remote")
        .compile(checkpointer=InMemorySaver())
    )
    mine = {"configurable": {"thread_id": str(uuid.uuid4())}}
    first = local.invoke({"question": "where?"}, mine)
    assert first["__interrupt__"][0].value == {"question": "where?"}
    assert local.get_state(mine).next == ("remote",)
    (inner_ns, inner), (outer_ns, outer) = local.stream(
        {"question": "where?"}, mine, subgraphs=True
    )
    assert [inner_ns[0].split(":")[0], outer_ns] == ["remote", ()]
    assert inner["__interrupt__"][0]["value"] == outer["__interrupt__"][0].value
    again = local.invoke(Command(resume="there"), mine)
    assert again["__interrupt__"][0].value == {"question": "where?"}
    assert asker.invoke(Command(resume="here"), mine)["answers"] == ["here", "done"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_thread_id_that_is_not_a_uuid_is_refused(server: str) -> None:
    asker = RemoteGraph("asker", url=server)
    with pytest.raises(Exception, match="thread_id must be a UUID"):
        asker.invoke({"question": "?"}, {"configurable": {"thread_id": "not-a-uuid"}})
