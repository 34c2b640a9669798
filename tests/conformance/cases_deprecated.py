"""What LangGraph 1.2 still takes under names it deprecated: older programs (and many
tutorials) pass `input=`, `output=` and `config_schema=` to `StateGraph`, `retry=` to
`add_node`, `checkpoint_during=` to a run, raise `NodeInterrupt`, import `Send` from
`langgraph.constants`. Each must work as there and warn with the same class.

No ``from __future__ import annotations`` here (see cases_core).
"""

import dataclasses
import importlib
import operator
import warnings
from collections.abc import Callable
from typing import Annotated, Any, Optional

import pydantic
from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

from .cases_core import LogState, note
from .harness import NS, bump, case, error_obs, invoke


class Question(TypedDict):
    question: str


class Answer(TypedDict):
    answer: str


class Overall(TypedDict):
    question: str
    answer: str
    log: Annotated[list, operator.add]


class Settings(TypedDict):
    model: str


def warned(make: Callable[[], Any]) -> dict[str, Any]:
    """What `make` returns, and the deprecation warnings it gave (their class names)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = make()
        except Exception as exc:  # the error is the observation
            value = error_obs(exc)
    return {
        "value": value,
        "warned": [
            w.category.__name__ for w in caught if issubclass(w.category, DeprecationWarning)
        ],
    }


@case
def case_deprecated_schema_parameters(ns: NS) -> Any:
    def answer(state: Any, config: Any) -> dict[str, Any]:
        model = config["configurable"].get("model", "none")
        return {"answer": f"{model}: {state['question']}", "log": ["answered"]}

    def build() -> Any:
        return (
            ns.StateGraph(Overall, input=Question, output=Answer, config_schema=Settings)
            .add_node("answer", answer)
            .add_edge(ns.START, "answer")
            .compile()
        )

    graph = warned(build)["value"]
    config = {"configurable": {"model": "m1"}}
    return {
        "built": warned(build)["warned"],
        "result": invoke(graph, {"question": "why?"}, config),
        "input schema": sorted(graph.get_input_jsonschema()["properties"]),
        "output schema": sorted(graph.get_output_jsonschema()["properties"]),
        "context schema": sorted(graph.get_context_jsonschema()["properties"]),
    }


@case
def case_deprecated_node_parameters(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def flaky(state: Any) -> dict[str, Any]:
        if bump(calls, "flaky") < 2:
            raise ConnectionError("once")
        return {"log": ["flaky"]}

    def reads_question(state: Question) -> dict[str, Any]:
        return {"log": [f"saw {sorted(state)}"]}

    def build() -> Any:
        retry = ns.RetryPolicy(initial_interval=0.0, jitter=False)
        return (
            ns.StateGraph(Overall)
            .add_node("flaky", flaky, retry=retry)
            .add_node("reader", reads_question, input=Question)
            .add_edge(ns.START, "flaky")
            .add_edge("flaky", "reader")
            .compile()
        )

    built = warned(build)
    return {
        "warned": built["warned"],
        "result": invoke(built["value"], {"question": "q", "log": []}),
        "calls": calls,
    }


@case
def case_deprecated_functional_parameters(ns: NS) -> Any:
    calls: dict[str, int] = {}

    def make() -> Any:
        @ns.task(retry=ns.RetryPolicy(initial_interval=0.0, jitter=False))
        def step(x: int) -> int:
            if bump(calls, "step") < 2:
                raise ConnectionError("once")
            return x + 1

        @ns.entrypoint(config_schema=Settings, retry=ns.RetryPolicy(max_attempts=1))
        def main(x: int) -> int:
            return step(x).result()

        return main

    made = warned(make)
    graph = made["value"]
    return {
        "warned": made["warned"],
        "result": invoke(graph, 1),
        "calls": calls,
        "context schema": sorted(graph.get_context_jsonschema()["properties"]),
    }


@case
def case_deprecated_run_and_names(ns: NS) -> Any:
    graph = (
        ns.StateGraph(LogState)
        .add_node("a", note("a"))
        .add_edge(ns.START, "a")
        .compile(checkpointer=ns.InMemorySaver())
    )
    constants = importlib.import_module(ns.StateGraph.__module__.split(".")[0] + ".constants")

    def both() -> Any:
        return graph.invoke(
            {"log": []},
            {"configurable": {"thread_id": "both"}},
            checkpoint_during=True,
            durability="sync",
        )

    return {
        "exit": warned(
            lambda: graph.invoke(
                {"log": []}, {"configurable": {"thread_id": "t"}}, checkpoint_during=False
            )
        ),
        "history under exit": len(
            list(graph.get_state_history({"configurable": {"thread_id": "t"}}))
        ),
        "both": warned(both),
        "constants": warned(lambda: [constants.Send is ns.Send, constants.Interrupt("x").value]),
        "interrupt_id": warned(lambda: ns.Interrupt(value=1, id="i").interrupt_id),
    }


@case(aio=True)
def case_node_interrupt(ns: NS, aio: bool) -> Any:
    calls: dict[str, int] = {}

    def stops(state: Any) -> dict[str, Any]:
        n = bump(calls, "stops")
        if n < 3:
            raise ns.NodeInterrupt(f"stop {n}")
        return {"log": ["done"]}

    graph = (
        ns.StateGraph(LogState)
        .add_node("stops", stops)
        .add_edge(ns.START, "stops")
        .compile(checkpointer=ns.InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        first = invoke(graph, {"log": []}, config, aio=aio)
        state = graph.get_state(config)
        again = invoke(graph, None, config, aio=aio)
        resumed = invoke(graph, ns.Command(resume="x"), config, aio=aio)
    return {
        "first": first,
        "pending": [state.next, [t.interrupts for t in state.tasks]],
        "again": again,
        "resumed": resumed,
        "calls": calls,
        "warns": warned(lambda: ns.NodeInterrupt("v", id="mine").args)["warned"],
    }


class PydanticState(pydantic.BaseModel):
    question: str
    tries: int = 0


@dataclasses.dataclass
class DataState:
    question: str
    tries: int = 0


@case
def case_graph_json_schemas(ns: NS) -> Any:
    """What `get_input_jsonschema` and its siblings give for each kind of schema."""
    out = {}
    for schema in (Overall, PydanticState, DataState):
        graph = (
            ns.StateGraph(schema, context_schema=Settings, input_schema=schema)
            .add_node("a", lambda state: {})
            .add_edge(ns.START, "a")
            .compile()
        )
        out[schema.__name__] = {
            "input": graph.get_input_jsonschema(),
            "output": graph.get_output_jsonschema(),
            "context": graph.get_context_jsonschema(),
        }
    return out


@case
def case_messages_state_json_schemas(ns: NS) -> Any:
    """The JSON schemas of a graph of `MessagesState` (and of a state extending it)
    have no description: LangGraph's `MessagesState` has no docstring."""

    class Extended(ns.MessagesState):
        summary: str

    out = {}
    for schema in (ns.MessagesState, Extended):
        graph = ns.StateGraph(schema).add_node("n", lambda s: {}).add_edge(ns.START, "n")
        compiled = graph.compile()
        out[schema.__name__] = [compiled.get_input_jsonschema(), compiled.get_output_jsonschema()]
    return out


@case
def case_config_parameter_typed_otherwise(ns: NS) -> Any:
    """A `config` parameter typed other than `RunnableConfig` (or its optional) was once
    handed the config; now it is not, and `add_node` warns of it, naming the type. A
    node whose `config` has a default runs with the default."""

    def as_dict(state: Any, config: dict = None) -> dict[str, Any]:  # type: ignore[assignment]
        return {"log": [f"dict {config is None}"]}

    def as_any(state: Any, config: Any = None) -> dict[str, Any]:
        return {"log": [f"any {config is None}"]}

    def typed(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [f"typed {config is None}"]}

    def optional(state: Any, config: Optional[RunnableConfig]) -> dict[str, Any]:  # noqa: UP045
        return {"log": [f"optional {config is None}"]}

    def untyped(state, config):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        return {"log": [f"untyped {config is None}"]}

    nodes = [as_dict, as_any, typed, optional, untyped]
    builder = ns.StateGraph(LogState)
    added = {}
    for node in nodes:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            builder.add_node(node)
        added[node.__name__] = [
            (w.category.__name__, "should be typed as 'RunnableConfig'" in str(w.message))
            for w in caught
        ]
    for before, after in zip([ns.START, *nodes], [*nodes, ns.END], strict=True):
        builder.add_edge(getattr(before, "__name__", before), getattr(after, "__name__", after))
    return {"added": added, "result": invoke(builder.compile(), {"log": []})}


@case
def case_dataclass_state_json_schema_optional_fields(ns: NS) -> Any:
    """A dataclass state's JSON schema: a field that may be None is not required, with
    or without a default; one with a default is not either."""

    @dataclasses.dataclass
    class Form:
        name: str
        nickname: str | None
        tagged: Annotated[float | None, "meta"]
        age: int = 0
        items: list[int] = dataclasses.field(default_factory=list)

    graph = ns.StateGraph(Form).add_node("n", lambda s: {}).add_edge(ns.START, "n").compile()
    return [graph.get_input_jsonschema(), graph.get_output_jsonschema()]


@case
def case_plain_class_state_json_schema(ns: NS) -> Any:
    """A plain annotated class as the state (neither TypedDict, dataclass nor model):
    its JSON schemas list its keys, each required unless it may be None."""

    class Plain:
        x: int
        y: Optional[str]  # noqa: UP045
        log: Annotated[list, operator.add]

    graph = ns.StateGraph(Plain).add_node("a", lambda s: {"x": 1}).add_edge(ns.START, "a")
    app = graph.compile()
    return [app.invoke({"log": []}), app.get_input_jsonschema(), app.get_output_jsonschema()]
