"""A graph that reads what the server hands it (`Runtime.context`, the run's ids and user
in `config["configurable"]`) and remembers it in the server's store, for
tests/api/test_context_store.py."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig

from engine import START, StateGraph
from engine.config import get_store
from engine.runtime import Runtime

IDS = ("thread_id", "run_id", "assistant_id", "graph_id", "user_id", "langgraph_auth_user_id")


@dataclass
class Context:
    user_name: str
    style: str = "plain"
    # Minutes the memory lives (None: it stays).
    remember_for: float | None = None


class Notes(TypedDict):
    notes: Annotated[list[str], operator.add]


async def remember(state: Notes, runtime: Runtime[Context], config: RunnableConfig) -> Notes:
    """Writes through `runtime.store` (async) what the run was given."""
    configurable = config["configurable"]
    user = configurable["langgraph_auth_user"]
    value: dict[str, Any] = {key: configurable[key] for key in IDS}
    value.update(style=runtime.context.style, identity=user.identity)
    value.update(tags=config.get("tags"), max_concurrency=config.get("max_concurrency"))
    # A graph written before `context` reads it from its configurable.
    value.update(configurable_context=[configurable.get(k) for k in ("user_name", "style")])
    assert runtime.store is not None
    namespace = ("memories", runtime.context.user_name)
    await runtime.store.aput(namespace, "last", value, ttl=runtime.context.remember_for)
    return {"notes": [f"{runtime.context.user_name}/{runtime.context.style}/{user['identity']}"]}


def recall(state: Notes) -> Notes:
    """A sync node (run in a worker thread): `get_store()` and the store's sync methods."""
    found = get_store().search(("memories",))
    return {"notes": [f"remembered {[item.namespace[-1] for item in found]}"]}


graph = (
    StateGraph(Notes, context_schema=Context)
    .add_node("remember", remember)
    .add_node("recall", recall)
    .add_edge(START, "remember")
    .add_edge("remember", "recall")
)
