"""A graph whose one node waits for the test to let it go: a run that is still going when
its test deletes its thread, or when more runs come. (Served in the test's process, so the
gate is shared.)"""

from __future__ import annotations

import asyncio
import json
import operator
import threading
from typing import Annotated, Any, TypedDict

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from app.config import Settings
from app.main import create_app
from engine import START, StateGraph
from tests.api.graphs import GRAPHS
from tests.helpers import ServeApp, new_id

# Set by the test: the node returns.
GATE = threading.Event()
# Set by the node: it is waiting at the gate.
WAITING = threading.Event()


class HeldState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


async def hold(state: HeldState) -> dict[str, Any]:
    WAITING.set()
    await asyncio.to_thread(GATE.wait, 60)
    return {"log": ["held"]}


held = StateGraph(HeldState).add_node("hold", hold).add_edge(START, "hold")


async def held_thread(serve_app: ServeApp, database_url: str) -> tuple[Any, LangGraphClient, str]:
    """A server of its own (its app, a client of it) that serves the held graph, its gate
    closed, and a new thread on it."""
    graphs = {**GRAPHS, "held": "tests.api.held_graph:held"}
    app = create_app(Settings(database_url=database_url, graphs=json.dumps(graphs), workers=8))
    client = get_client(url=serve_app(app))
    GATE.clear()
    WAITING.clear()
    thread_id = new_id()
    await client.threads.create(thread_id=thread_id)
    return app, client, thread_id
