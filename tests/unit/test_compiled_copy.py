"""`copy` of a compiled graph changes only fields it has: LangGraph drops an unknown one,
the engine refuses it, so a misspelt field cannot change nothing without a word."""

from __future__ import annotations

from typing import Any

import pytest

from engine import START, MessagesState, StateGraph
from engine.checkpoint.memory import InMemorySaver


def _graph() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [("ai", "hi")]})
    return builder.add_edge(START, "reply").compile(name="original")


@pytest.mark.parametrize("field", ["no_such_field", "_checkpointer", "invoke", "channels"])
def test_copy_refuses_a_field_the_graph_does_not_have(field: str) -> None:
    graph = _graph()
    with pytest.raises(TypeError, match=repr(field)):
        graph.copy({field: 1})


def test_copy_takes_fields_as_a_dict() -> None:
    graph, saver = _graph(), InMemorySaver()
    copied = graph.copy({"name": "other", "checkpointer": saver, "stream_mode": "values"})
    assert (copied.name, copied.checkpointer, copied.stream_mode) == ("other", saver, "values")
    assert (graph.name, graph.checkpointer, graph.stream_mode) == ("original", None, "updates")
