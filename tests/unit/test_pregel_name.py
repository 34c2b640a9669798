"""`engine.pregel.Pregel` and `PregelProtocol` name a compiled graph, as LangGraph programs
use the names (in annotations and `isinstance`); building one from channels by hand says it
is unsupported."""

import pytest

from engine import START, MessagesState, StateGraph
from engine.func import entrypoint
from engine.pregel import Pregel
from engine.pregel.protocol import PregelProtocol


def test_every_compiled_graph_is_a_pregel_and_a_pregel_protocol() -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [("ai", "hi")]})
    builder.add_edge(START, "reply")

    @entrypoint()
    def echo(value: str) -> str:
        return value

    for graph in (builder.compile(), echo):
        assert isinstance(graph, Pregel) and isinstance(graph, PregelProtocol)
        assert issubclass(type(graph), Pregel)
    assert not isinstance(builder, Pregel) and not isinstance(builder, PregelProtocol)


def test_building_a_pregel_by_hand_is_refused_with_what_to_do() -> None:
    with pytest.raises(NotImplementedError, match="build a StateGraph"):
        Pregel(nodes={}, channels={}, input_channels="a", output_channels="a")
