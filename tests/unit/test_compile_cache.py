"""A graph compiled again reuses what was worked out of its schemas and node functions
(their resolved annotations, the parameters a node asks to be given), and works out
anew what cannot be kept: names that do not resolve yet, callables that are not
hashable. What is kept goes with its function or schema: a graph factory's closures
and classes are not held after their graphs."""

from __future__ import annotations

import gc
import weakref
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig

from engine import END, START, StateGraph, add_messages
from engine.checkpoint.memory import InMemorySaver
from engine.checkpoint.serde import jsonplus
from engine.graph import schema
from engine.pregel import runnable


def test_compiling_again_reads_no_schema_or_signature_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class State(TypedDict):
        text: str

    def shout(state: State) -> dict[str, Any]:
        return {"text": state["text"].upper()}

    def sign(state: State, config: RunnableConfig) -> dict[str, Any]:
        return {"text": state["text"] + config["configurable"]["mark"]}

    resolved: Counter[Any] = Counter()
    read: Counter[Any] = Counter()
    hints, params = schema.get_type_hints, runnable._injected_params

    def counting_hints(obj: Any, *args: Any, **kwargs: Any) -> Any:
        resolved[obj] += 1
        return hints(obj, *args, **kwargs)

    def counting_params(fn: Any) -> Any:
        read[fn] += 1
        return params(fn)

    monkeypatch.setattr(schema, "get_type_hints", counting_hints)
    monkeypatch.setattr(runnable, "_injected_params", counting_params)
    builder = (
        StateGraph(State)
        .add_node("shout", shout)
        .add_node("sign", sign)
        .add_edge(START, "shout")
        .add_edge("shout", "sign")
        .add_edge("sign", END)
    )
    for _ in range(3):
        graph = builder.compile()
        config = {"configurable": {"mark": "!"}}
        assert graph.invoke({"text": "hi"}, config) == {"text": "HI!"}
    assert resolved[State] == 1
    assert read[shout] == read[sign] == 1


def test_a_saver_is_told_a_schemas_classes_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each compile with a saver tells its serializer which classes the state names (a
    graph factory compiles for every run); they are worked out once per schema, and a
    chat message's fields are not looked into."""

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]
        note: str

    resolved: Counter[Any] = Counter()
    hints = jsonplus.get_type_hints

    def counting_hints(obj: Any, *args: Any, **kwargs: Any) -> Any:
        resolved[obj] += 1
        return hints(obj, *args, **kwargs)

    monkeypatch.setattr(jsonplus, "get_type_hints", counting_hints)
    builder = StateGraph(State).add_node("a", lambda s: {"note": "x"}).add_edge(START, "a")
    for _ in range(3):
        builder.compile(checkpointer=InMemorySaver())
    assert resolved == Counter({State: 1})


class Late(TypedDict):
    item: LaterType  # noqa: F821 (defined below, after the first read)


def test_names_that_resolve_later_are_resolved_then() -> None:
    assert schema.field_types(Late)["item"].__forward_arg__ == "LaterType"  # as written
    globals()["LaterType"] = int
    try:
        assert schema.field_types(Late) == {"item": int}
    finally:
        del globals()["LaterType"]


def test_a_node_that_is_not_hashable_is_given_what_it_asks_for() -> None:
    class Signer:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            return {"text": state["text"] + config["configurable"]["mark"]}

    class State(TypedDict):
        text: str

    graph = StateGraph(State).add_node("sign", Signer()).add_edge(START, "sign").compile()
    for mark in "!?":
        assert graph.invoke({"text": "hi"}, {"configurable": {"mark": mark}}) == {
            "text": "hi" + mark
        }


def test_what_is_kept_goes_with_its_function_and_schema() -> None:
    def factory(mark: str) -> Any:
        class State(TypedDict):
            text: str

        def sign(state: State, config: RunnableConfig) -> dict[str, Any]:
            return {"text": state["text"] + mark}

        graph = StateGraph(State).add_node("sign", sign).add_edge(START, "sign").compile()
        return graph, weakref.ref(sign), weakref.ref(State)

    graph, sign, state = factory("!")
    assert graph.invoke({"text": "hi"}) == {"text": "hi!"}
    del graph
    gc.collect()
    assert sign() is None
    assert state() is None


def test_a_method_is_read_once_for_its_class(monkeypatch: pytest.MonkeyPatch) -> None:
    read: Counter[Any] = Counter()
    params = runnable._injected_params

    def counting_params(fn: Any) -> Any:
        read[fn] += 1
        return params(fn)

    monkeypatch.setattr(runnable, "_injected_params", counting_params)

    class State(TypedDict):
        text: str

    class Signer:
        def __init__(self, mark: str) -> None:
            self.mark = mark

        def sign(self, state: State, config: RunnableConfig) -> dict[str, Any]:
            return {"text": state["text"] + self.mark + config["configurable"]["end"]}

    for mark in "!?":
        node = Signer(mark).sign
        graph = StateGraph(State).add_node("sign", node).add_edge(START, "sign").compile()
        config = {"configurable": {"end": "."}}
        assert graph.invoke({"text": "hi"}, config) == {"text": f"hi{mark}."}
    assert read[Signer.sign] == 1
