"""A state schema must be a type: a value in its place is refused when the builder is
made, naming it (LangGraph warns and runs with a state that drops every write)."""

import operator
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
import pytest

from engine.graph import StateGraph


class Model(pydantic.BaseModel):
    foo: str


@dataclass
class Data:
    foo: str


@pytest.mark.parametrize(
    "schema",
    [{"foo": "bar"}, ["hi", operator.add], Model(foo="x"), Data(foo="x"), 5],
    ids=["dict", "list", "model", "dataclass", "int"],
)
def test_a_value_is_refused_as_a_schema(schema: Any) -> None:
    with pytest.raises(TypeError, match=r"Invalid state schema: .* not a type"):
        StateGraph(schema)
    with pytest.raises(TypeError, match=r"Invalid state schema"):
        StateGraph(Model, input_schema=schema)
    with pytest.raises(TypeError, match=r"Invalid state schema"):
        StateGraph(Model).add_node("a", lambda state: {}, input_schema=schema)


@pytest.mark.parametrize("schema", [dict, Model, Data, Annotated[list, operator.add], Any])
def test_types_are_schemas(schema: Any) -> None:
    StateGraph(schema)
