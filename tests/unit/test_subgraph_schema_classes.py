"""A saver learns the classes of the subgraphs it keeps checkpoints for, not only of the
graph it was given to: a server reads a thread's subgraph state in a process that has
run nothing yet, with a saver whose serializer knows only what compiling taught it."""

import asyncio
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel

from engine.checkpoint.serde.jsonplus import JsonSerializer
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import migrate
from engine.checkpoint.sql.saver import SQLSaver
from engine.graph import START, StateGraph
from engine.types import interrupt


class Reading(BaseModel):
    temperature: float


class Inner(TypedDict, total=False):
    question: str
    reading: Reading


class Outer(TypedDict, total=False):
    question: str


def measure(state: Inner) -> dict[str, Any]:
    return {"reading": Reading(temperature=21)}


def confirm(state: Inner) -> dict[str, Any]:
    interrupt("confirm?")
    return {}


def outer_builder() -> StateGraph:
    inner = (
        StateGraph(Inner)
        .add_node("measure", measure)
        .add_node("confirm", confirm)
        .add_edge(START, "measure")
        .add_edge("measure", "confirm")
        .compile()
    )
    return StateGraph(Outer).add_node("inner", inner).add_edge(START, "inner")


def test_a_fresh_saver_reads_a_subgraph_state_holding_its_classes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'threads.db'}"
    asyncio.run(migrate(url))
    config: Any = {"configurable": {"thread_id": "1"}}

    def saver() -> SQLSaver:
        # A serializer of its own, as in another process: only compiling has taught it.
        return SQLSaver(create_engine(url, pool_per_call=True), serde=JsonSerializer())

    outer_builder().compile(checkpointer=saver()).invoke({"question": "warm?"}, config)
    fresh = outer_builder().compile(checkpointer=saver())
    (task,) = fresh.get_state(config, subgraphs=True).tasks
    assert task.state.values["reading"] == Reading(temperature=21)
