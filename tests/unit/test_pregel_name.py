"""`engine.pregel.Pregel` and `PregelProtocol` name a compiled graph, as LangGraph programs
use the names (in annotations and `isinstance`); a graph built from channels by hand that
names what does not exist is refused when it is made (what it does is conformance:
cases_pregel)."""

from typing import Any

import pytest

from engine import START, MessagesState, StateGraph
from engine.channels import LastValue
from engine.func import entrypoint
from engine.pregel import NodeBuilder, Pregel
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


def pregel(nodes: dict[str, NodeBuilder], **options: Any) -> Pregel:
    channels = {name: LastValue(int) for name in ("a", "b")}
    return Pregel(nodes=nodes, channels=channels, **{"input_channels": "a", **options})


@pytest.mark.parametrize(
    ("nodes", "options", "problem"),
    [
        ({"n": NodeBuilder().subscribe_only("x").do(len)}, {}, "Node 'n' names channel 'x'"),
        ({"n": NodeBuilder().subscribe_only("a").write_to("y")}, {}, "channel 'y'"),
        ({"n": NodeBuilder().read_from("a").do(len)}, {}, "subscribes to no channel"),
        ({"n": NodeBuilder().subscribe_only("b").do(len)}, {}, "No node subscribes to an input"),
        ({"n": NodeBuilder().subscribe_only("a")}, {"output_channels": "z"}, "output channel 'z'"),
    ],
)
def test_a_graph_built_by_hand_that_names_what_does_not_exist_is_refused(
    nodes: dict[str, NodeBuilder], options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        pregel(nodes, **{"output_channels": "b", **options})


def test_nodes_and_channels_of_other_kinds_are_refused() -> None:
    with pytest.raises(TypeError, match="Node 'n' is a builtin_function_or_method: .*NodeBuilder"):
        pregel({"n": len}, output_channels="b")  # type: ignore[dict-item]
    node = NodeBuilder().subscribe_only("a").do(len)
    with pytest.raises(TypeError, match="Channel 'a' is a type, not a channel"):
        Pregel(nodes={"n": node}, channels={"a": int}, input_channels="a", output_channels="a")  # type: ignore[dict-item]


def test_subscriptions_that_cannot_mix_are_refused() -> None:
    with pytest.raises(ValueError, match="single channel"):
        NodeBuilder().subscribe_only("a").subscribe_to("b")
    with pytest.raises(ValueError, match="already subscribed to"):
        NodeBuilder().subscribe_to("a").subscribe_only("b")


def test_dict_input_is_required_for_several_input_channels() -> None:
    node = NodeBuilder().subscribe_only("a").do(lambda x: x + 1).write_to("b")
    graph = pregel({"n": node}, input_channels=["a"], output_channels="b")
    assert graph.invoke({"a": 1}) == 2
    with pytest.raises(TypeError, match=r"input channels \['a'\] is a dict"):
        graph.invoke(1)
