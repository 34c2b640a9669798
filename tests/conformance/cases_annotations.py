"""Programs as LangGraph's guides write them, annotations and all: postponed ones
(``from __future__ import annotations``, so every annotation here is a string until
resolved), `Callable` parameters and fields, and the run's objects a `@task` asks for
by name. Each broke a ported program once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any

import pydantic
from typing_extensions import TypedDict

from .harness import NS, case, stream


class Line(pydantic.BaseModel):
    sku: str
    qty: int


class Order(pydantic.BaseModel):
    lines: list[Line]


@dataclasses.dataclass
class Leaf:
    v: int


@dataclasses.dataclass
class Tree:
    leaves: list[Leaf] = dataclasses.field(default_factory=list)


class Shop(TypedDict, total=False):
    order: Order
    tree: Tree
    hook: Callable[[int], int] | None


@case(aio=True)
def case_postponed_annotations_name_the_classes_a_saver_restores(ns: NS, aio: bool) -> Any:
    """The classes a state's fields name (as strings) are restored from the checkpoint,
    down to the ones nested in them; a `Callable` field names none."""

    def fill(state: Shop) -> dict[str, Any]:
        return {"order": Order(lines=[Line(sku="a", qty=1)]), "tree": Tree(leaves=[Leaf(1)])}

    def ask(state: Shop) -> dict[str, Any]:
        ns.interrupt("pause")
        return {}

    builder = ns.StateGraph(Shop)
    builder.add_node("fill", fill)
    builder.add_node("ask", ask)
    builder.add_edge(ns.START, "fill")
    builder.add_edge("fill", "ask")
    graph = builder.compile(checkpointer=ns.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    stream(graph, {}, config, aio=aio)
    return graph.get_state(config).values


@case
def case_a_task_asks_for_the_writer_and_takes_a_callable(ns: NS) -> Any:
    """A `@task` parameter named `writer` (or `config`, `runtime`) is given the run's, as
    a node's is; a `Callable` parameter is an argument like any other."""

    @ns.task
    def apply(x: int, fn: Callable[[int], int], writer: Callable[[Any], None]) -> int:
        writer(f"applying to {x}")
        return fn(x)

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def main(x: int, *, writer: Callable[[Any], None]) -> int:
        writer("start")
        return apply(x, lambda n: n * 10).result()

    config = {"configurable": {"thread_id": "t"}}
    return stream(main, 4, config, stream_mode=["custom", "updates"])


@case
def case_messages_state_is_a_pydantic_schema(ns: NS) -> Any:
    """`MessagesState` is typing_extensions' TypedDict, which pydantic takes on every
    Python (a tool's `Annotated[MessagesState, InjectedState]` parameter)."""
    adapter = pydantic.TypeAdapter(Annotated[ns.MessagesState, "injected"])
    return adapter.validate_python({"messages": []})
