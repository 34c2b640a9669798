"""A compiled graph as LangChain's and LangGraph's tooling use it, beyond running it:
its input and output schemas (what `as_tool` offers a model), `with_config` (still a
graph: nested, drawn, inspected), the names LangGraph's attributes give its channels
and breakpoints, a Runnable wrapper as a node, and a saver's tuples."""

from __future__ import annotations

import asyncio
import operator
import warnings
from typing import Annotated, Any

import pydantic
from langchain_core._api import LangChainBetaWarning
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from typing_extensions import TypedDict

from .cases_core import LogState, build, build_error, note
from .harness import NS, case, invoke


class Question(TypedDict):
    foo: str
    log: Annotated[list, operator.add]


class Answer(TypedDict):
    log: list


class Form(pydantic.BaseModel):
    q: str
    n: int = 0


@case
def case_a_graph_offers_its_schemas_as_a_tool(ns: NS) -> Any:
    seen: dict[str, Any] = {}
    for name, schema, output in (("typed", Question, Answer), ("model", Form, None)):
        builder = ns.StateGraph(schema, output_schema=output)
        builder.add_node("a", lambda s: {})
        builder.add_edge(ns.START, "a")
        graph = builder.compile()
        model = graph.get_input_schema()
        seen[name] = {
            "input": model.model_json_schema(),
            "input is the model": model is schema,
            "output": graph.get_output_schema().model_json_schema(),
            "as tool": _tool_args(graph),
        }
    return seen


def _tool_args(graph: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)  # as_tool is LangChain's beta
        return graph.as_tool(name="ask", description="Ask.").args


@case
def case_with_config_keeps_a_compiled_graph(ns: NS) -> Any:
    sub = build(ns, LogState, {"c": note("c")}, [("S", "c")]).with_config(
        tags=["inner"], configurable={"who": "sub"}
    )
    saver = ns.InMemorySaver()
    parent = build(
        ns, LogState, {"a": note("a"), "sub": sub}, [("S", "a"), ("a", "sub")], checkpointer=saver
    )
    config = {"configurable": {"thread_id": "t"}}
    parent.invoke({"log": []}, config, interrupt_before=["sub"])
    state = parent.get_state(config, subgraphs=True)
    return {
        "name": sub.name,
        # The copy keeps the class of what `compile()` made (isinstance checks).
        "class": type(sub).__name__,
        "config": {k: v for k, v in sub.config.items() if v},
        "subgraphs": [name for name, _ in parent.get_subgraphs()],
        "xray": sorted(str(n) for n in parent.get_graph(xray=True).nodes),
        "next": state.next,
        "out": invoke(parent, None, config),
    }


@case
def case_a_graph_names_its_channels_and_breakpoints(ns: NS) -> Any:
    builder = ns.StateGraph(Question, output_schema=Answer)
    builder.add_node("a", note("a"))
    builder.add_edge(ns.START, "a")
    graph = builder.compile(interrupt_before=["a"])

    @ns.entrypoint()
    def main(x: int) -> int:
        return x

    names = ("input_channels", "output_channels", "stream_channels", "interrupt_before_nodes")
    return {
        "graph": [getattr(graph, n) for n in (*names, "interrupt_after_nodes")],
        "entrypoint": [getattr(main, n) for n in names[:3]],
    }


@case
def case_a_tool_node_with_fallbacks_is_a_node(ns: NS) -> Any:
    """The customer-support tutorial's `create_tool_node_with_fallback`."""

    @tool
    def double(x: int) -> int:
        """Double x."""
        return x * 2

    fallback = RunnableLambda(lambda state: {"messages": []})
    builder = ns.StateGraph(ns.MessagesState)
    builder.add_node("tools", ns.ToolNode([double]).with_fallbacks([fallback]))
    builder.add_edge(ns.START, "tools")
    asked = AIMessage("", tool_calls=[{"name": "double", "args": {"x": 3}, "id": "1"}])
    out = builder.compile().invoke({"messages": [asked]})
    return [m.content for m in out["messages"]]


@case
def case_a_saved_checkpoint_is_a_tuple(ns: NS) -> Any:
    saver = ns.InMemorySaver()
    graph = build(ns, LogState, {"a": note("a")}, [("S", "a")], checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    found = saver.get_tuple(config)
    config_of, checkpoint, metadata, parent, writes = found
    return {
        "fields": list(found._asdict()),
        "is a tuple": isinstance(found, tuple),
        "source": metadata["source"],
        "same": (found[0], found.parent_config) == (config_of, parent),
        "writes": writes,
        "values": checkpoint["channel_values"],
    }


@case
def case_compiled_graph_policies_channels_and_config(ns: NS) -> Any:
    """A compiled graph's default policies (a Pregel's as given, one policy in a tuple),
    its stream channels as a list, `validate()` and an unset config (None); a
    NodeBuilder's timeout (an async node times out, a sync one is refused); a saver's
    config specs and the pruning it leaves unimplemented."""
    graph = build(ns, LogState, {"a": note("a")}, [("S", "a")])

    async def slow(value: str) -> str:
        await asyncio.sleep(1)
        return value

    def pregel(node: Any, **kw: Any) -> Any:
        channels = {"a": ns.EphemeralValue(str), "b": ns.LastValue(str)}
        return ns.Pregel(
            nodes={"n": node}, channels=channels, input_channels="a", output_channels="b", **kw
        )

    def node(fn: Any) -> Any:
        return ns.NodeBuilder().subscribe_only("a").do(fn).write_to("b")

    one = pregel(node(str.upper), retry_policy=ns.RetryPolicy(), cache_policy=ns.CachePolicy())
    several = pregel(node(str.upper), retry_policy=[ns.RetryPolicy()], stream_channels="b")
    saver = ns.InMemorySaver()
    unimplemented = {}
    for name in ("prune", "delete_for_runs"):
        try:
            getattr(saver, name)(["t"])
        except NotImplementedError:
            unimplemented[name] = True
    return {
        "graph": [graph.retry_policy, graph.cache_policy, graph.stream_channels_list],
        "validated": graph.validate() is graph,
        "config": graph.config,
        "one": [type(one.retry_policy).__name__, one.cache_policy is not None],
        "several": [type(several.retry_policy).__name__, several.stream_channels_list],
        "timed_out": invoke(pregel(node(slow).set_timeout(0.05)), "q", aio=True),
        "sync_refused": build_error(lambda: pregel(node(str.upper).set_timeout(0.05))),
        "no_timeout": invoke(pregel(node(str.upper).set_timeout(None)), "q"),
        "saver": [saver.config_specs, unimplemented],
    }


@case
def case_compiled_graph_copy_takes_a_dict_of_fields(ns: NS) -> Any:
    """`copy(update)` gives a graph of the same class with the fields the dict names
    changed (a saver, a name), the original unchanged."""
    graph = build(ns, LogState, {"a": note("a")}, [("S", "a")], name="original")
    saver = ns.InMemorySaver()
    renamed = graph.copy(update={"name": "other"})
    saving = graph.copy({"checkpointer": saver})
    cfg = {"configurable": {"thread_id": "t"}}
    return {
        "names": [renamed.name, graph.name, graph.copy().name],
        "same class": type(renamed) is type(graph),
        "no update attribute": not hasattr(renamed, "update"),
        "saving": [invoke(saving, {"log": []}, cfg), saving.get_state(cfg).values],
        "original saves": graph.checkpointer,
    }
