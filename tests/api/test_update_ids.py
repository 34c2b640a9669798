"""A node's messages without an id get theirs from `add_messages`, in place, when the step
ends; a run's `updates`, `debug` and `tasks` events show that id, the one the message has
in the state, as LangGraph's server does (it reads the parts as `astream` hands them over,
after the step's reducers ran), whatever other modes the run streams."""

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from app.config import Settings
from app.main import create_app
from engine import START, MessagesState, StateGraph
from tests.helpers import ServeApp, client, collect, new_thread, said


async def reply(state: MessagesState) -> dict[str, Any]:
    """Answers with a message of no id, as a node built by hand often does."""
    return {"messages": [AIMessage(f"echo: {state['messages'][-1].text}")]}


anonymous = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")


@pytest.fixture
def anonymous_server(serve_app: ServeApp, database_url: str) -> str:
    graphs = {"anonymous": "tests.api.test_update_ids:anonymous"}
    return serve_app(create_app(Settings(database_url=database_url, graphs=json.dumps(graphs))))


def message_ids(data: Any) -> list[Any]:
    """The `id` of every AI message anywhere in an event's data."""
    if isinstance(data, dict):
        own = [data.get("id")] if data.get("type") == "ai" and "content" in data else []
        return own + [i for value in data.values() for i in message_ids(value)]
    if isinstance(data, list):
        return [i for value in data for i in message_ids(value)]
    return []


@pytest.mark.parametrize(
    "modes", [["updates"], ["updates", "values"], ["debug"], ["tasks"], ["updates", "debug"]]
)
async def test_updates_show_the_id_the_message_gets_in_the_state(
    anonymous_server: str, modes: list[str]
) -> None:
    api = client(anonymous_server)
    thread_id = await new_thread(api)
    events = await collect(
        api.runs.stream(thread_id, "anonymous", input=said("hi"), stream_mode=modes)
    )
    state = await api.threads.get_state(thread_id)
    [human, ai] = state["values"]["messages"]
    assert ai["content"] == "echo: hi" and ai["id"]
    for mode in modes:
        shown = [i for event, data in events if event == mode for i in message_ids(data)]
        # Every part that carries the reply shows it with its id in the state.
        assert shown and set(shown) == {ai["id"]}, (mode, events)
