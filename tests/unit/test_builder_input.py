"""What a builder is given is checked where it is given, naming it: a state schema must be
a type (LangGraph warns and runs with a state that drops every write), and a node's name
a str."""

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


@pytest.mark.parametrize("name", [5, None, 2.5])
def test_a_node_name_that_is_no_str_is_refused(name: Any) -> None:
    with pytest.raises(TypeError, match="add_node takes a node's name"):
        StateGraph(Model).add_node(name, lambda state: {})
