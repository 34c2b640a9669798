"""LangChain inside graphs: chat models streaming tokens and tool calls in the "messages"
stream mode, Runnables as nodes, nodes taking their config, messages in and out.

The chat models are LangChain's fakes; each case builds its own, so both implementations
see the same replies. No ``from __future__ import annotations`` here (see cases_core).
"""

import asyncio
import dataclasses
import enum
import operator
import warnings
from collections.abc import Callable, Iterable
from functools import reduce
from typing import Annotated, Any, Literal, TypedDict

import pydantic
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
    GenericFakeChatModel,
    ParrotFakeChatModel,
)
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool

from tests.message_samples import user_dict_with_blocks

from .cases_core import LogState, Node, build, chain_edges, note, notes
from .cases_persistence import timeline
from .harness import (
    NS,
    case,
    graph_shape,
    invoke,
    stream,
    thread,
    update_next,
)

TOOL_CALLS = [
    {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "weather"}'},
    }
]


def replies(*items: AIMessage | str) -> GenericFakeChatModel:
    """A chat model that streams `items` one reply per call, word by word (tool calls
    given as OpenAI `additional_kwargs` stream as tool call chunks)."""
    return GenericFakeChatModel(messages=iter(items))


def question(text: str = "what is the weather?") -> dict[str, Any]:
    return {"messages": [HumanMessage(text, id="q1")]}


def model_node(model: Any, aio: bool, how: Literal["invoke", "stream"] = "invoke") -> Node:
    """A node that calls `model` on the messages: `invoke`, or `stream` adding the chunks."""

    def call(state: Any) -> dict[str, Any]:
        if how == "invoke":
            return {"messages": [model.invoke(state["messages"])]}
        return {"messages": [reduce(operator.add, model.stream(state["messages"]))]}

    async def acall(state: Any) -> dict[str, Any]:
        if how == "invoke":
            return {"messages": [await model.ainvoke(state["messages"])]}
        chunks = [chunk async for chunk in model.astream(state["messages"])]
        return {"messages": [reduce(operator.add, chunks)]}

    return acall if aio else call


def chat_graph(ns: NS, nodes: dict[str, Node], **compile_kw: Any) -> Any:
    """START -> the nodes in a line -> END on MessagesState, saved."""
    return build(
        ns,
        ns.MessagesState,
        nodes,
        chain_edges(list(nodes)),
        checkpointer=ns.InMemorySaver(),
        **compile_kw,
    )


def tools_loop(ns: NS, model: Node, tools: Node) -> Any:
    """START -> model, then tools and back while the model's last reply calls a tool, on
    MessagesState, saved."""
    return (
        ns.StateGraph(ns.MessagesState)
        .add_node("model", model)
        .add_node("tools", tools)
        .add_edge(ns.START, "model")
        .add_edge("tools", "model")
        .add_conditional_edges(
            "model", lambda s: "tools" if s["messages"][-1].tool_calls else ns.END
        )
        .compile(checkpointer=ns.InMemorySaver())
    )


def messages_run(
    ns: NS, graph: Any, inp: Any, aio: bool, modes: Iterable[str] = ("messages",), **kw: Any
) -> dict[str, Any]:
    """Stream one turn on a thread in `modes`, then the thread's state and history."""
    cfg = thread()
    parts = stream(graph, inp, cfg, stream_mode=list(modes), aio=aio, **kw)
    return {"stream": parts, **timeline(graph, cfg)}


# --------------------------------------------------------------------------- chat models


@case(aio=True, sql=True)
def case_chat_model_invoke_streams_tokens(ns: NS, aio: bool) -> Any:
    model = replies(AIMessage("sunny all day", id="r1"), "and tomorrow rain")
    graph = chat_graph(ns, {"model": model_node(model, aio)})
    first = messages_run(ns, graph, question(), aio)
    cfg = thread()
    second = stream(graph, question("and tomorrow?"), cfg, stream_mode="messages", aio=aio)
    return {"first": first, "second": second, "state": graph.get_state(cfg)}


@case(aio=True)
def case_chat_model_stream_in_node(ns: NS, aio: bool) -> Any:
    model = replies("it will be sunny")
    graph = chat_graph(ns, {"model": model_node(model, aio, how="stream")})
    return messages_run(ns, graph, question(), aio, modes=("messages", "updates"))


@case(aio=True, sql=True)
def case_chat_model_streams_tool_calls(ns: NS, aio: bool) -> Any:
    model = replies(
        AIMessage("let me look", additional_kwargs={"tool_calls": TOOL_CALLS}), "it is sunny"
    )

    def tools(state: Any) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage("sunny", tool_call_id=call["id"], id="t1")]}

    graph = tools_loop(ns, model_node(model, aio), tools)
    return messages_run(ns, graph, question(), aio, modes=("messages", "values"))


@case(aio=True)
def case_parallel_nodes_stream_their_models(ns: NS, aio: bool) -> Any:
    builder = ns.StateGraph(ns.MessagesState)
    for name in ("left", "right"):
        builder.add_node(name, model_node(replies(f"{name} says hi"), aio))
        builder.add_edge(ns.START, name)
    graph = builder.compile()
    return stream(graph, question(), stream_mode="messages", aio=aio, unordered=True)


@case(aio=True)
def case_chat_model_given_the_node_config(ns: NS, aio: bool) -> Any:
    """Nodes written before config was passed on by itself hand their config to the model."""
    model = replies("configured reply").with_config(tags=["mine"], metadata={"who": "me"})

    def call(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"], config)]}

    async def acall(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    graph = chat_graph(ns, {"model": acall if aio else call})
    return messages_run(ns, graph, question(), aio)


@case(aio=True)
def case_chat_model_after_resume(ns: NS, aio: bool) -> Any:
    model = replies("approved reply")

    def ask(state: Any) -> dict[str, Any]:
        answer = ns.interrupt("go on?")
        return {"messages": [{"role": "user", "content": answer, "id": "answer"}]}

    graph = chat_graph(ns, {"ask": ask, "model": model_node(model, aio)})
    cfg = thread()
    first = stream(graph, question(), cfg, stream_mode=["messages", "updates"], aio=aio)
    resumed = stream(graph, ns.Command(resume="yes"), cfg, stream_mode="messages", aio=aio)
    return {"first": first, "resumed": resumed, **timeline(graph, cfg)}


@case(aio=True, sql=True)
def case_chat_model_without_streaming(ns: NS, aio: bool) -> Any:
    """A model that cannot stream: its whole reply is one "messages" part."""
    call = {"name": "lookup", "args": {"q": "x"}, "id": "call_1"}
    usage = {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage("", tool_calls=[call], id="r1", usage_metadata=usage),
            AIMessage("done", response_metadata={"finish_reason": "stop"}),
        ]
    )
    graph = chat_graph(ns, {"first": model_node(model, aio), "second": model_node(model, aio)})
    return messages_run(ns, graph, question(), aio)


@case(aio=True)
def case_character_streaming_models(ns: NS, aio: bool) -> Any:
    graph = chat_graph(
        ns,
        {
            "chars": model_node(FakeListChatModel(responses=["abc"]), aio, how="stream"),
            "parrot": model_node(ParrotFakeChatModel(), aio),
        },
    )
    return messages_run(ns, graph, question("hi"), aio)


@case(aio=True)
def case_nostream_tag(ns: NS, aio: bool) -> Any:
    loud = replies("you hear me")
    quiet = replies("you do not").with_config(tags=["nostream"])
    tagged = GenericFakeChatModel(messages=iter(["tagged"]), tags=["nostream", "mine"])
    user_tags = replies("tagged by me").with_config(tags=["mine"])
    graph = chat_graph(
        ns,
        {
            "loud": model_node(loud, aio),
            "quiet": model_node(quiet, aio),
            "tagged": model_node(tagged, aio),
            "user_tags": model_node(user_tags, aio),
        },
    )
    return messages_run(ns, graph, question(), aio)


@case(aio=True)
def case_node_outputs_in_messages_mode(ns: NS, aio: bool) -> Any:
    """Messages a node writes without a model are streamed once; input messages never."""

    def echo(state: Any) -> dict[str, Any]:
        return {"messages": [*state["messages"], AIMessage("written", id="w1")]}

    def command(state: Any) -> Any:
        return ns.Command(update={"messages": [AIMessage("by command", id="w2")]})

    def plain(state: Any) -> dict[str, Any]:
        return {"messages": [("ai", "from a tuple"), {"role": "assistant", "content": "dict"}]}

    graph = chat_graph(ns, {"echo": echo, "command": command, "plain": plain})
    return messages_run(ns, graph, question(), aio)


def sub_chat(ns: NS, model: Any, aio: bool) -> Any:
    return (
        ns.StateGraph(ns.MessagesState)
        .add_node("inner", model_node(model, aio))
        .add_edge(ns.START, "inner")
        .compile()
    )


def with_subgraph(ns: NS, aio: bool) -> Any:
    """START -> outer (a model) -> sub (a subgraph whose node calls a model), saved."""
    sub = sub_chat(ns, replies("from inside"), aio)
    return chat_graph(ns, {"outer": model_node(replies("from outside"), aio), "sub": sub})


@case(aio=True)
def case_messages_from_a_subgraph(ns: NS, aio: bool) -> Any:
    return {
        f"subgraphs={subgraphs}": messages_run(
            ns,
            with_subgraph(ns, aio),
            question(),
            aio,
            modes=("messages", "updates"),
            subgraphs=subgraphs,
        )
        for subgraphs in (False, True)
    }


def streamed_messages(ns: NS, graph: Any, subgraphs: bool) -> list[Any]:
    """(namespace, message class, content, node) of each "messages" part of a turn."""
    parts = stream(graph, question(), thread(), stream_mode="messages", subgraphs=subgraphs)
    return [
        [
            [seg.split(":")[0] for seg in ns_] if subgraphs else [],
            type(message).__name__,
            message.content,
            meta["langgraph_node"],
        ]
        for ns_, (message, meta) in (
            (part[0], part[1]) if subgraphs else ((), part) for part in parts["parts"]
        )
    ]


@case(aio=True)
def case_subgraph_node_output_without_subgraphs(ns: NS, aio: bool) -> Any:
    sub = (
        ns.StateGraph(ns.MessagesState)
        .add_node("inner", lambda s: {"messages": [AIMessage("from inside", id="i1")]})
        .add_edge(ns.START, "inner")
        .compile()
    )
    graph = chat_graph(ns, {"sub": sub})
    return stream(graph, question(), thread(), stream_mode="messages", aio=aio)


@case()
def case_subgraph_reply_without_subgraphs(ns: NS) -> Any:
    return streamed_messages(ns, with_subgraph(ns, aio=False), subgraphs=False)


@case
def case_subgraph_reply_with_subgraphs(ns: NS) -> Any:
    return streamed_messages(ns, with_subgraph(ns, aio=False), subgraphs=True)


@case()
def case_subgraph_model_metadata(ns: NS) -> Any:
    parts = stream(
        with_subgraph(ns, aio=False), question(), thread(), stream_mode="messages", subgraphs=True
    )
    return [
        {key: meta.get(key) for key in ("checkpoint_ns", "langgraph_checkpoint_ns")}
        for _, (message, meta) in parts["parts"]
        if isinstance(message, AIMessageChunk)
    ]


@case(aio=True)
def case_messages_of_a_subgraph_invoked_in_a_node(ns: NS, aio: bool) -> Any:
    sub = sub_chat(ns, replies("nested reply"), aio)

    def call_sub(state: Any) -> dict[str, Any]:
        return {"messages": sub.invoke(state)["messages"][-1:]}

    async def acall_sub(state: Any) -> dict[str, Any]:
        return {"messages": (await sub.ainvoke(state))["messages"][-1:]}

    graph = chat_graph(ns, {"call_sub": acall_sub if aio else call_sub})
    return {
        "plain": messages_run(ns, graph, question(), aio),
        "subgraphs": stream(graph, question(), stream_mode="messages", subgraphs=True, aio=aio),
    }


@case()
def case_history_of_a_node_that_invokes_a_subgraph(ns: NS) -> Any:
    sub = build(ns, LogState, {"inner": note("inner")}, [("S", "inner")])
    graph = build(
        ns,
        LogState,
        {"outer": lambda s: sub.invoke(s)},
        [("S", "outer")],
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    graph.invoke({"log": []}, cfg)
    return timeline(graph, cfg)


@case()
def case_node_output_message_metadata(ns: NS) -> Any:
    graph = chat_graph(ns, {"reply": lambda s: {"messages": [AIMessage("hi", id="a1")]}})
    return [
        meta for _, meta in stream(graph, question(), thread(), stream_mode="messages")["parts"]
    ]


@case()
def case_node_output_message_before_updates(ns: NS) -> Any:
    graph = chat_graph(ns, {"reply": lambda s: {"messages": [AIMessage("hi", id="a1")]}})
    parts = stream(graph, question(), thread(), stream_mode=["messages", "updates"])["parts"]
    return [mode for mode, _ in parts]


# --------------------------------------------------------------------------- runnables


@case(aio=True)
def case_runnable_lambda_nodes(ns: NS, aio: bool) -> Any:
    def sync_part(state: Any) -> dict[str, Any]:
        return {"log": ["sync"]}

    async def async_part(state: Any) -> dict[str, Any]:
        return {"log": ["async"]}

    graph = build(
        ns,
        LogState,
        {
            "plain": RunnableLambda(sync_part),
            "both": RunnableLambda(sync_part, afunc=async_part),
            "named": RunnableLambda(lambda s: {"log": [len(s["log"])]}, name="counter"),
        },
        chain_edges(["plain", "both", "named"]),
    )
    return {
        "invoke": invoke(graph, {"log": []}, aio=aio),
        "updates": stream(graph, {"log": []}, aio=aio),
        "shape": graph_shape(graph),
    }


@case(aio=True)
def case_chain_as_node(ns: NS, aio: bool) -> Any:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "answer as a {role}"), MessagesPlaceholder("messages")]
    )
    answer = prompt | replies("arr, sunny") | RunnableLambda(lambda m: {"messages": [m]})
    prepare = RunnableLambda(lambda s: {"role": "pirate", "messages": s["messages"]})
    graph = chat_graph(ns, {"answer": prepare | answer})
    return messages_run(ns, graph, question(), aio, modes=("messages", "updates"))


@case(aio=True, sql=True)
def case_tools_loop_with_a_langchain_tool(ns: NS, aio: bool) -> Any:
    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return f"{q}: sunny"

    call = {"name": "lookup", "args": {"q": "weather"}, "id": "call_1", "type": "tool_call"}
    model = FakeMessagesListChatModel(
        responses=[AIMessage("", tool_calls=[call], id="r1"), AIMessage("sunny", id="r2")]
    )

    def tools(state: Any) -> dict[str, Any]:
        return {"messages": [lookup.invoke(c) for c in state["messages"][-1].tool_calls]}

    graph = tools_loop(ns, model_node(model, aio), tools)
    return messages_run(ns, graph, question(), aio, modes=("messages", "updates"))


# --------------------------------------------------------------------------- config


@case(aio=True)
def case_node_takes_config(ns: NS, aio: bool) -> Any:
    def seen(config: RunnableConfig) -> list[Any]:
        meta = config.get("metadata", {})
        return [
            config["configurable"].get("user"),
            meta.get("langgraph_node"),
            meta.get("langgraph_step"),
            list(meta.get("langgraph_triggers", ())),
            meta.get("user_meta"),
            sorted(t for t in config.get("tags", ()) if not t.startswith("graph:step")),
        ]

    def typed(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [seen(config)]}

    def untyped(state, config):  # found by its name, not by an annotation
        return {"log": [seen(config)]}

    async def in_async(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [seen(config)]}

    graph = build(
        ns,
        LogState,
        {"typed": typed, "untyped": untyped, "in_async": in_async},
        chain_edges(["typed", "untyped", "in_async"]),
    )
    cfg = {"configurable": {"user": "ann"}, "metadata": {"user_meta": 1}, "tags": ["t1"]}
    return invoke(graph, {"log": []}, cfg, aio=aio)


@case(aio=True)
def case_node_config_in_detail(ns: NS, aio: bool) -> Any:
    """Exactly what a node's config holds: its metadata's keys (the tracers' mark only if
    the caller gave one), its configurable's keys and the `checkpoint_map` of the
    versions its step came from (of the subgraph and of its parent), its tags (none
    without any: no key; a `with_config`'d graph's before the call's, in order)."""

    def seen(config: RunnableConfig) -> dict[str, Any]:
        conf = config["configurable"]
        return {
            "metadata": sorted(config["metadata"]),
            "ls_integration": config["metadata"].get("ls_integration"),
            "configurable": sorted(k for k in conf if not k.startswith("__")),
            "checkpoint_map": conf.get("checkpoint_map"),
            "tags": config.get("tags", "no key"),
        }

    def outer(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [seen(config)]}

    async def inner(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [seen(config)]}

    sub = build(ns, LogState, {"inner": inner}, chain_edges(["inner"]))
    graph = build(
        ns,
        LogState,
        {"outer": outer, "sub": sub},
        chain_edges(["outer", "sub"]),
        checkpointer=ns.InMemorySaver(),
    )
    cfg = thread()
    runs = {
        "plain": invoke(graph, {"log": []}, cfg, aio=aio),
        "with_config": invoke(graph.with_config(recursion_limit=9), {"log": []}, cfg, aio=aio),
        "tagged": invoke(
            graph.with_config(tags=["w"]),
            {"log": []},
            {**cfg, "tags": ["c"], "metadata": {"ls_integration": "mine"}},
            aio=aio,
        ),
    }
    versions = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(cfg)]
    return {**runs, "versions": versions}


@case(aio=True, sql=True)
def case_loose_config_keys_go_to_configurable(ns: NS, aio: bool) -> Any:
    """A config's top-level key that no RunnableConfig has is a `configurable` value of
    the run (over one of the same name there; an empty one is dropped), in the config a
    node is given and in `get_config()`, in a graph called from a node, and as the run's
    thread."""

    def seen(config: Any) -> dict[str, Any]:
        conf = config["configurable"]
        return {
            "configurable": {k: v for k, v in conf.items() if not k.startswith("__")},
            "top": sorted(k for k in config if k not in ("callbacks", "metadata")),
            "foo": config.get("foo", "absent"),
            "thread_in_metadata": config["metadata"].get("thread_id"),
        }

    def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [seen(config), seen(ns.get_config())]}

    inner = build(ns, LogState, {"inner": node}, chain_edges(["inner"]))

    def calls_inner(state: Any) -> dict[str, Any]:
        return {"log": inner.invoke({"log": []}, {"sub": "yes", "none": None})["log"]}

    plain = build(ns, LogState, {"a": node, "calls": calls_inner}, chain_edges(["a", "calls"]))
    loose = {
        "foo": "bar",
        "num": 3,
        "obj": {"a": 1},
        "run_name": "rn",
        "empty": [],
        "none": None,
        "configurable": {"foo": "c", "keep": 1},
    }
    saved = build(ns, LogState, {"a": node}, chain_edges(["a"]), checkpointer=ns.InMemorySaver())
    return {
        "plain": invoke(plain, {"log": []}, loose, aio=aio),
        "with_config": invoke(
            plain.with_config(configurable={"wc": 0, "foo": "w"}), {"log": []}, {"wc": 2}, aio=aio
        ),
        "thread": invoke(saved, {"log": []}, {"thread_id": "t7", "foo": "bar"}, aio=aio),
        # The parts' configs (their metadata would show LangGraph's copy of `foo`: see
        # docs/langgraph-differences.md).
        "checkpoints": [
            [part["config"], part["parent_config"]]
            for part in stream(
                saved, None, {"thread_id": "t7", "foo": "bar"}, stream_mode="checkpoints", aio=aio
            )["parts"]
        ],
        "history": [s.values for s in saved.get_state_history({"thread_id": "t7"})],
        "state": saved.get_state(thread("t7")),
    }


@case()
def case_get_graph_node_data(ns: NS) -> Any:
    sub = build(ns, LogState, {"inner": note("inner")}, [("S", "inner")])
    graph = build(
        ns,
        LogState,
        {"lambda": RunnableLambda(lambda s: {"log": ["x"]}, name="named"), "sub": sub},
        chain_edges(["lambda", "sub"]),
    )
    drawn = graph.get_graph()
    return {
        "shape": graph_shape(graph),
        "nodes": {key: [node.name, type(node.data).__name__] for key, node in drawn.nodes.items()},
        "mermaid": drawn.draw_mermaid(),
    }


@case()
def case_get_graph_labels_and_end_edges(ns: NS) -> Any:
    """A label shows a node's metadata, `defer` and where the graph stops for it; plain
    edges to END are drawn last, a conditional one where its source's edges are."""
    builder = ns.StateGraph(LogState)
    builder.add_node("a", note("a"))
    builder.add_node("b", note("b"))
    builder.add_node("c", note("c"), metadata={"owner": "ann"})
    builder.add_node("d", note("d"), defer=True)
    builder.add_edge(ns.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", ns.END)
    builder.add_conditional_edges("b", lambda s: "c", {"c": "c", "stop": ns.END})
    builder.add_edge("c", "d")
    builder.add_edge("d", ns.END)
    graph = builder.compile(interrupt_before=["b", "c"], interrupt_after=["c"])
    return {"mermaid": graph.get_graph().draw_mermaid(), "entrypoint": entrypoint_drawing(ns)}


@case()
def case_get_graph_ends_in_name_order(ns: NS) -> Any:
    """Nodes with nowhere to go get their edges to END in the order of their names, not
    of their adding, at every level of an xray drawing."""
    sub = ns.StateGraph(LogState)
    for name in ("slow", "fast"):
        sub.add_node(name, note(name))
    sub.add_conditional_edges(ns.START, lambda s: "fast", ["slow", "fast"])
    builder = ns.StateGraph(LogState)
    for name in ("up", "other", "down"):
        builder.add_node(name, note(name))
    builder.add_node("inner", sub.compile())
    builder.add_edge(ns.START, "up")
    builder.add_edge("up", "other")
    builder.add_edge("up", "down")
    builder.add_edge("up", "inner")
    graph = builder.compile()
    return {
        "mermaid": graph.get_graph().draw_mermaid(),
        "xray": [[e.source, e.target] for e in graph.get_graph(xray=True).edges],
    }


@case()
def case_get_graph_deferred_nodes(ns: NS) -> Any:
    """A deferred node is drawn with dotted edges from the nodes it runs after when no
    edge of theirs leads to it: a longer branch, a loop, a join, two deferred nodes."""

    def drawing(edges: list[tuple[Any, str]], deferred: set[str], branch: Any = None) -> str:
        builder = ns.StateGraph(LogState)
        names = {target for _, target in edges}
        names.update(
            n for source, _ in edges for n in ([source] if isinstance(source, str) else source)
        )
        for name in sorted(names - {ns.START, ns.END}):
            builder.add_node(name, note(name), defer=name in deferred)
        for source, target in edges:
            builder.add_edge(source, target)
        if branch is not None:
            builder.add_conditional_edges(*branch)
        return builder.compile().get_graph().draw_mermaid(with_styles=False)

    S, E = ns.START, ns.END
    return {
        "longer_branch": drawing(
            [(S, "a"), ("a", "b"), ("b", "c"), ("a", "d"), ("b", "z"), ("d", "z"), ("z", E)],
            {"z"},
        ),
        "join": drawing(
            [(S, "a"), (S, "b"), ("a", "a2"), ("a2", "a3"), (["a", "b"], "z"), ("z", E)], {"z"}
        ),
        "loop": drawing(
            [(S, "a"), (S, "b"), ("b", "z"), ("z", E)],
            {"z"},
            ("a", lambda s: "a" if len(s["log"]) < 3 else "z", ["a", "z"]),
        ),
        "two_deferred": drawing(
            [(S, "a"), ("a", "b"), ("b", "c"), ("a", "y"), ("a", "z"), ("y", E), ("z", E)],
            {"y", "z"},
        ),
        "none_needed": drawing([(S, "a"), (S, "b"), ("a", "z"), ("b", "z"), ("z", E)], {"z"}),
    }


def entrypoint_drawing(ns: NS) -> Any:
    @ns.entrypoint()
    def workflow(value: str) -> str:
        return value

    return [workflow.get_name(), sorted(workflow.get_graph().nodes)]


@case()
def case_get_graph_xray(ns: NS) -> Any:
    sub = build(ns, LogState, notes("one", "two"), chain_edges(["one", "two"]))
    graph = build(
        ns, LogState, {"before": note("before"), "sub": sub}, chain_edges(["before", "sub"])
    )
    drawn = graph.get_graph(xray=True)
    return {
        "nodes": sorted(drawn.nodes),
        "edges": sorted([e.source, e.target, e.conditional] for e in drawn.edges),
        "mermaid": drawn.draw_mermaid(),
    }


@case
def case_command_literal_annotations_draw_edges(ns: NS) -> Any:
    def route(state: Any) -> ns.Command[Literal["b", "c"]]:
        return ns.Command(goto="c", update={"log": ["a"]})

    def finish(state: Any) -> ns.Command[Literal["__end__"]]:
        return ns.Command(update={"log": ["c"]}, goto=ns.END)

    graph = (
        ns.StateGraph(LogState)
        .add_node("a", route)
        .add_node("b", note("b"))
        .add_node("c", finish)
        .add_edge(ns.START, "a")
        .compile()
    )
    return {"shape": graph_shape(graph), "run": stream(graph, {"log": []})}


# --------------------------------------------------------------------------- messages


class AnyMessagesState(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]


@case(aio=True, sql=True)
def case_langchain_messages_in_and_out(ns: NS, aio: bool) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        kinds = [type(m).__name__ for m in state["messages"]]
        return {"messages": [AIMessage(" ".join(kinds), id="a1")]}

    graph = chat_graph(ns, {"reply": reply})
    inp = {
        "messages": [
            SystemMessage("be brief", id="s1"),
            "a plain string",
            ("user", "a tuple"),
            {"role": "user", "content": [{"type": "text", "text": "blocks"}], "id": "d1"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": {}, "id": "c"}]},
            {"role": "tool", "content": "result", "tool_call_id": "c"},
        ]
    }
    return messages_run(ns, graph, inp, aio, modes=("values",))


@case
def case_messages_list_without_add_messages(ns: NS) -> Any:
    graph = build(
        ns, AnyMessagesState, {"a": lambda s: {"messages": [AIMessage("x")]}}, [("S", "a")]
    )
    return invoke(graph, {"messages": [HumanMessage("hi")]})


@case(aio=True)
def case_add_messages_openai_format_in_a_graph(ns: NS, aio: bool) -> Any:
    class OpenAIState(TypedDict):
        messages: Annotated[list[AnyMessage], ns.add_messages(format="langchain-openai")]

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessageChunk("a chunk", id="k1")]}

    graph = build(ns, OpenAIState, {"reply": reply}, [("S", "reply")])
    return invoke(graph, {"messages": [user_dict_with_blocks("u1")]}, aio=aio)


# --------------------------------------------------------------------------- callback runs


def callback_runs(
    graph: Any, inp: Any, config: dict[str, Any] | None = None, *, ordered: bool = True
) -> list[Any]:
    """What `astream_events(version="v2")` shows of a run: each event's kind, run name,
    tags, node, the tracers' marks (`ls_integration`, a subgraph's `checkpoint_ns`), the
    names of the runs it nests under and the keys of its data; sorted unless `ordered`
    (runs at once interleave as the event loop has them)."""

    async def collect() -> list[Any]:
        names: dict[str, str] = {}
        seen = []
        async for event in graph.astream_events(inp, config, version="v2"):
            names[event["run_id"]] = event["name"]
            seen.append(
                [
                    event["event"],
                    event["name"],
                    sorted(event["tags"]),
                    event["metadata"].get("langgraph_node"),
                    event["metadata"].get("ls_integration"),
                    event["metadata"].get("checkpoint_ns"),
                    [names.get(p) for p in event["parent_ids"]],
                    sorted(event["data"]),
                ]
            )
        return seen if ordered else sorted(seen, key=repr)

    return asyncio.run(collect())


@case(aio=True)
def case_callback_runs_of_nodes(ns: NS, aio: bool) -> Any:
    """Each node is a run tagged with its step, the runs of its code (a chat model, a
    tool, a graph it invokes) under it, its output streamed; a subgraph's run nests under
    its node's run."""
    inner = (
        ns.StateGraph(ns.MessagesState)
        .add_node("inner", lambda s: {"messages": [AIMessage("inside", id="in1")]})
        .add_edge(ns.START, "inner")
        .compile()
    )

    @tool
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    def nested(state: Any) -> dict[str, Any]:
        shout.invoke({"text": "hey"})
        return {"messages": inner.invoke(state)["messages"][-1:]}

    nodes = {"model": model_node(replies("sunny"), aio), "nested": nested, "sub": inner}
    graph = chat_graph(ns, nodes)
    return callback_runs(graph, question(), thread())


@case
def case_callback_runs_of_tasks(ns: NS) -> Any:
    """An entrypoint's node is a run; each task call a run under it, with its arguments
    as input and its result streamed."""

    @ns.task
    def double(x: int, times: int = 2) -> int:
        return x * times

    @ns.entrypoint()
    def workflow(xs: list[int]) -> int:
        return sum(double(x, times=3).result() for x in xs)

    return callback_runs(workflow, [1, 2], ordered=False)


@case(aio=True)
def case_callback_tags_of_runs_in_a_task(ns: NS, aio: bool) -> Any:
    """What a task call's code runs (a chat model) is the first step of the call's run
    (`seq:step:1`), in a call made by another call too, as what an entrypoint's code runs
    is of its node's run."""
    tags: list[Any] = []

    class Tags(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            tags.append(kwargs.get("tags"))

    def ask(text: str) -> str:
        return str(replies("fine").invoke(text).content)

    @ns.task
    def inner(text: str) -> str:
        return ask(text)

    @ns.task
    def outer(text: str) -> str:
        return ask(text) + inner(text).result()

    @ns.entrypoint()
    def workflow(text: str) -> str:
        return ask(text) + outer(text).result()

    return [invoke(workflow, "how?", {"callbacks": [Tags()]}, aio=aio), tags]


@case(aio=True)
def case_messages_from_a_task(ns: NS, aio: bool) -> Any:
    """A chat model called in a task streams as the task's (its node name and path), in
    the namespace of the task's caller."""
    model = replies("sunny today")

    @ns.task
    def forecast(messages: list[Any]) -> str:
        return model.invoke(messages).content

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def workflow(messages: list[Any]) -> str:
        return forecast(messages).result()

    return messages_streamed(
        workflow,
        question()["messages"],
        lambda at, message, meta: [
            [seg.split(":")[0] for seg in at],
            message.content,
            meta["langgraph_node"],
            meta["langgraph_triggers"],
            meta["langgraph_checkpoint_ns"].count("|"),
        ],
        aio,
    )


def messages_streamed(
    workflow: Any, given: Any, row: Callable[[Any, Any, dict[str, Any]], Any], aio: bool
) -> dict[str, list[Any]]:
    """`row(namespace, message, metadata)` of each part the `messages` mode streams,
    without subgraphs (the namespace `[]`) and with them, each on a thread of its own."""
    return {
        f"subgraphs={subgraphs}": [
            row(part[0] if subgraphs else [], message, meta)
            for part in stream(
                workflow,
                given,
                thread(f"t{subgraphs}"),
                stream_mode="messages",
                subgraphs=subgraphs,
                aio=aio,
            )["parts"]
            for message, meta in [part[1] if subgraphs else part]
        ]
        for subgraphs in (False, True)
    }


@case(aio=True)
def case_messages_from_nested_task_calls_and_their_graphs(ns: NS, aio: bool) -> Any:
    """A chat model in a task call made by another call streams in the namespace of the
    entrypoint's caller, with the call's namespace (the calls it is made in, then its
    own) and its path (wrapping its caller's); one in a graph the call invokes streams in
    that graph's namespace, under the call's."""

    def answer(state: Any) -> dict[str, Any]:
        return {"messages": [replies(AIMessage("from the graph", id="g")).invoke("?")]}

    sub = ns.StateGraph(ns.MessagesState).add_node("answer", answer)
    sub = sub.add_edge(ns.START, "answer").compile()

    @ns.task
    def inner(text: str) -> str:
        replies(AIMessage("from inner", id="i")).invoke(text)
        return sub.invoke({"messages": [text]})["messages"][-1].content

    @ns.task
    def outer(text: str) -> str:
        return inner(text).result()

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def workflow(text: str) -> str:
        return outer(text).result()

    keys = ("checkpoint_ns", "langgraph_checkpoint_ns", "langgraph_node", "langgraph_path")
    return messages_streamed(
        workflow,
        "hi",
        lambda at, message, meta: [at, message.content, {k: meta.get(k) for k in keys}],
        aio,
    )


@case(aio=True, sql=True)
def case_model_reply_with_an_id_its_node_was_given(ns: NS, aio: bool) -> Any:
    """A chat model's whole reply whose id is among the messages its node was given (a
    node's state, a `Send` task's packet, a subgraph node's state) is not streamed; one
    streamed token by token still is."""

    def fan_out(state: Any) -> list[Any]:
        return [ns.Send("sent", {"messages": [AIMessage("in the packet", id="packet")]})]

    def fixed(reply: AIMessage) -> FakeMessagesListChatModel:
        return FakeMessagesListChatModel(responses=[reply])

    def graph() -> Any:
        """The graph, with models of its own (a streaming one gives its replies once)."""
        sub = sub_chat(ns, fixed(AIMessage("again from inside", id="q1")), aio)
        streamer = replies(AIMessage("again in tokens", id="old"))
        return (
            ns.StateGraph(ns.MessagesState)
            .add_node("agent", model_node(fixed(AIMessage("again", id="old")), aio))
            .add_node("sent", model_node(fixed(AIMessage("packet again", id="packet")), aio))
            .add_node("sub", sub)
            .add_node("streamer", model_node(streamer, aio, how="stream"))
            .add_edge(ns.START, "agent")
            .add_conditional_edges("agent", fan_out, ["sent"])
            .add_edge("sent", "sub")
            .add_edge("sub", "streamer")
            .compile(checkpointer=ns.InMemorySaver())
        )

    given = {"messages": [HumanMessage("hi", id="q1"), AIMessage("old", id="old")]}
    return {
        f"subgraphs={subgraphs}": stream(
            graph(),
            given,
            thread(f"t{subgraphs}"),  # a saver on a database keeps every run's thread
            stream_mode="messages",
            subgraphs=subgraphs,
            aio=aio,
        )
        for subgraphs in (False, True)
    }


@case(aio=True)
def case_message_handed_to_the_parent_graph(ns: NS, aio: bool) -> Any:
    """A message a subgraph's node hands to the parent graph in `Command(graph=PARENT)`
    is not streamed: no node returned it (the command was raised up to the parent), and
    the node of the parent that gets it is given it."""

    def gate(state: Any) -> ns.Command[Literal["__end__"]]:  # type: ignore[name-defined]
        handed = AIMessage("escalating", id="handed")
        return ns.Command(graph=ns.Command.PARENT, goto="human", update={"messages": [handed]})

    sub = ns.StateGraph(ns.MessagesState).add_node("gate", gate)
    sub = sub.add_edge(ns.START, "gate").compile()

    def human(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("human here", id="human")]}

    def call_sub(state: Any) -> Any:
        return sub.invoke(state)

    graphs = {"as node": sub, "invoked in a node": call_sub}
    return {
        how: messages_streamed(
            ns.StateGraph(ns.MessagesState)
            .add_node("assistant", node, destinations=("human",))
            .add_node("human", human)
            .add_edge(ns.START, "assistant")
            .add_edge("assistant", ns.END)
            .add_edge("human", ns.END)
            .compile(checkpointer=ns.InMemorySaver()),
            question(),
            lambda at, message, meta: [
                [seg.split(":")[0] for seg in at],
                message.content,
                meta["langgraph_node"],
            ],
            aio,
        )
        for how, node in graphs.items()
    }


@case(aio=True)
def case_callback_runs_of_a_command_to_the_parent(ns: NS, aio: bool) -> Any:
    """A subgraph's node that hands control up (`Command(graph=PARENT)`) ends its run,
    the subgraph's run and the parent node's run with that error (the parent's task then
    goes on with the command), the latter two naming the graph it goes to by the task
    that ran the subgraph (`<node>:<task id>`; a second graph a node invokes as its
    first); the parent graph's run ends as usual."""
    seen: list[Any] = []

    class Runs(BaseCallbackHandler):
        def __init__(self) -> None:
            self.names: dict[Any, str] = {}

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.names[kwargs["run_id"]] = kwargs.get("name") or ""

        def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
            seen.append(["end", self.names[kwargs["run_id"]]])

        def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
            graph = getattr(error.args[0], "graph", None) if error.args else None
            # The task id in it is each engine's own.
            named = graph if graph is None else graph.split(":")[0] + (":<id>" * (":" in graph))
            seen.append(["error", self.names[kwargs["run_id"]], type(error).__name__, named])

    def jump(state: Any) -> Any:
        if state["log"]:
            return {"log": ["stay"]}
        return ns.Command(graph=ns.Command.PARENT, goto="after", update={"log": ["up"]})

    sub = build(ns, LogState, {"jump": jump}, [("S", "jump")])

    def twice(state: Any) -> dict[str, Any]:
        sub.invoke({"log": ["first"]})
        return sub.invoke({"log": []})

    out = {}
    for how, node in {"as node": sub, "invoked twice in a node": twice}.items():
        seen.clear()
        nodes = {"sub": node, "after": note("after")}
        graph = build(ns, LogState, nodes, [("S", "sub")])
        out[how] = [invoke(graph, {"log": []}, {"callbacks": [Runs()]}, aio=aio), list(seen)]
    return out


@case(aio=True)
def case_callback_runs_of_routers(ns: NS, aio: bool) -> Any:
    """A conditional edge's function is a run under its source node's run, after the
    node's code (`seq:step:3`, then 4 for the next one); the input node that routes is a
    hidden run of its own (`seq:step:2` for its router). The caller's tags come after
    each run's own."""

    def first(state: Any) -> str:
        return "model"

    async def afirst(state: Any) -> str:
        return "model"

    graph = (
        ns.StateGraph(ns.MessagesState)
        .add_node("model", model_node(replies("sunny"), aio))
        .add_conditional_edges(ns.START, afirst if aio else first, ["model"])
        .add_conditional_edges("model", lambda s: ns.END)
        .add_conditional_edges("model", first, {"model": ns.END})
        .compile()
    )
    return callback_runs(graph, question(), {"tags": ["mine"]})


@case(aio=True)
def case_callback_run_names_of_routers(ns: NS, aio: bool) -> Any:
    """The name a handler is told for each router's run: a named function's name; for a
    lambda, the Runnable class's in a sync run and none in an async one (LangGraph's
    two sides differ so). A router asking for its config is handed it either way."""
    seen: list[Any] = []

    class Names(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            if any(tag.startswith("seq:") for tag in kwargs.get("tags") or ()):
                seen.append(kwargs.get("name"))

    def named(state: Any, config: RunnableConfig) -> str:
        return "b" if config["configurable"]["go"] else ns.END

    graph = (
        ns.StateGraph(LogState)
        .add_node("a", note("a"))
        .add_node("b", note("b"))
        .add_edge(ns.START, "a")
        .add_conditional_edges("a", lambda state: ns.END)
        .add_conditional_edges("a", named, ["b", ns.END])
        .compile()
    )
    config = {"callbacks": [Names()], "configurable": {"go": True}}
    return {"run": invoke(graph, {"log": []}, config, aio=aio), "names": seen}


@case
def case_callback_runs_of_a_runnable_node(ns: NS) -> Any:
    """A Runnable given as a node streams under `astream_events`: a chain's steps are the
    node's own (no run of the chain between them), its chat model streams its tokens, the
    chunks added up are the node's output, and its router comes after its steps."""
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("messages")])
    chain = prompt | replies("it is sunny") | RunnableLambda(lambda m: {"messages": [m]})
    graph = (
        ns.StateGraph(ns.MessagesState)
        .add_node("chain", chain)
        .add_node("named", RunnableLambda(lambda s: {}, name="named"))
        .add_edge(ns.START, "chain")
        .add_conditional_edges("chain", lambda s: "named", ["named"])
        .compile(checkpointer=ns.InMemorySaver())
    )
    return {"runs": callback_runs(graph, question(), thread()), "state": graph.get_state(thread())}


@case(aio=True)
def case_runnable_lambda_calls(ns: NS, aio: bool) -> Any:
    """`RunnableLambda` nodes as LangChain calls them: with the config when the function
    takes one (and as the current config, for what it calls), a Runnable returned
    invoked in turn, a sync function under `ainvoke`, an async-only one under `invoke`
    refused, a Runnable returned again and again stopped by the recursion limit."""

    def given(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [f"given {config['configurable'].get('who')}"]}

    def current(state: Any) -> dict[str, Any]:
        return {"log": [f"current {ns.get_config()['configurable'].get('who')}"]}

    def deferring(state: Any) -> Any:
        return RunnableLambda(lambda s: {"log": [f"deferred {len(s['log'])}"]})

    async def asynchronous(state: Any) -> dict[str, Any]:
        return {"log": ["async"]}

    def endless(state: Any) -> Any:
        return RunnableLambda(endless)

    nodes = {
        "given": RunnableLambda(given),
        "current": RunnableLambda(current),
        "deferring": RunnableLambda(deferring),
        "both": RunnableLambda(lambda s: {"log": ["sync"]}, afunc=asynchronous),
    }
    cfg = {"configurable": {"who": "ann"}}
    graph = build(ns, LogState, nodes, chain_edges(list(nodes)))
    runs = {"chain": invoke(graph, {"log": []}, cfg, aio=aio)}
    alone = {"async only": RunnableLambda(asynchronous), "endless": RunnableLambda(endless)}
    for name, node in alone.items():
        graph = build(ns, LogState, {name: node}, chain_edges([name]))
        runs[name] = invoke(graph, {"log": []}, {"recursion_limit": 5}, aio=aio)
    return runs


@case(aio=True)
def case_nodes_coerced_as_langchain_does(ns: NS, aio: bool) -> Any:
    """What `add_node` takes beyond functions and Runnables, as LangChain coerces it: a
    dict of Runnables (a parallel, each key's output an update of that key), a generator
    function and an async one (the last value yielded is the update; async code under
    `invoke` refused), each in the updates stream too."""

    def counted(state: Any) -> Any:
        yield {"log": ["first"]}
        yield {"log": [f"last of {len(state['log'])}"]}

    async def counted_async(state: Any) -> Any:
        yield {"log": ["async first"]}
        yield {"log": ["async last"]}

    parallel = {"log": RunnableLambda(lambda s: [f"parallel {len(s['log'])}"])}
    runs = {}
    for name, nodes in {
        "dict": {"parallel": parallel},
        "generator": {"gen": counted, "parallel": parallel},
        "async generator": {"agen": counted_async},
    }.items():
        graph = build(ns, LogState, nodes, chain_edges(list(nodes)))
        runs[name] = {
            "invoke": invoke(graph, {"log": ["in"]}, aio=aio),
            "updates": stream(graph, {"log": ["in"]}, stream_mode="updates", aio=aio),
        }
    return runs


@case(aio=True)
def case_messages_of_a_resumed_subgraph_with_a_pydantic_state(ns: NS, aio: bool) -> Any:
    """A subgraph that stopped at an interrupt, resumed: the messages it showed before
    are not shown again when its node returns them, with a pydantic state as with a
    dict (what the node was given is not news)."""

    class Chat(pydantic.BaseModel):
        messages: Annotated[list[Any], ns.add_messages] = []

    def propose(state: Chat) -> Any:
        return {"messages": [AIMessage(content="Proposal", id="proposal")]}

    def approve(state: Chat) -> Any:
        return {"messages": [HumanMessage(content=ns.interrupt("ok?"), id="answer")]}

    saver = ns.InMemorySaver()
    inner = (
        ns.StateGraph(Chat)
        .add_node("propose", propose)
        .add_node("approve", approve)
        .add_edge(ns.START, "propose")
        .add_edge("propose", "approve")
        .compile(checkpointer=saver)
    )
    outer = (
        ns.StateGraph(Chat)
        .add_node("inner", inner)
        .add_node("close", lambda s: {"messages": [AIMessage(content="Done", id="done")]})
        .add_edge(ns.START, "inner")
        .add_edge("inner", "close")
        .compile(checkpointer=saver)
    )
    config = thread()
    first = {"messages": [HumanMessage(content="hi", id="hi")]}
    return [
        stream(outer, given, config, stream_mode="messages", subgraphs=True, aio=aio)
        for given in (first, ns.Command(resume="yes"))
    ]


@case(aio=True, sql=True)
def case_a_functional_chatbot_streams_each_turn_once(ns: NS, aio: bool) -> Any:
    """The functional API's chatbot: the history an entrypoint saves with
    `entrypoint.final` is not shown again on the next turn, as the `@task` that called
    the model was given it."""
    model = replies(AIMessage("hello world", id="a1"), AIMessage("second one", id="a2"))

    @ns.task
    def call_model(messages: list[Any]) -> Any:
        return model.invoke(messages)

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def chat(inputs: list[Any], *, previous: Any = None) -> Any:
        if previous:
            inputs = ns.add_messages(previous, inputs)
        reply = call_model(inputs).result()
        return ns.entrypoint.final(value=reply, save=ns.add_messages(inputs, reply))

    cfg = thread()
    return [
        stream(chat, [{"role": "user", "content": text}], cfg, stream_mode="messages", aio=aio)
        for text in ("hi", "again")
    ]


@case(aio=True)
def case_callback_runs_of_routers_in_update_state(ns: NS, aio: bool) -> Any:
    """An update as a node with routers is a run, `<graph name>UpdateState`, of the
    caller's tags and metadata (with its thread), and its routers runs under it, numbered
    after the node's state writes, then one step for each static edge and join out of it
    (as in a real run of the node, after its code); an update as a node without routers
    is no run. A router handed its config sees the call's, less its run name."""
    runs: dict[Any, str] = {}
    seen: list[Any] = []

    class Runs(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            runs[kwargs["run_id"]] = kwargs.get("name") or ""
            keys = sorted(k for k in kwargs.get("metadata") or {} if not k.startswith("lang"))
            parent = runs.get(kwargs.get("parent_run_id"))
            seen.append(["start", kwargs.get("name"), kwargs.get("tags"), keys, parent, inputs])

        def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
            seen.append(["end", runs.get(kwargs["run_id"]), outputs])

        def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
            seen.append(["error", runs.get(kwargs["run_id"]), repr(error)])

    def route(state: Any, config: RunnableConfig) -> str:
        seen.append(["config", config.get("run_name"), sorted(config["metadata"])])
        return "c" if len(state["log"]) > 3 else ns.END

    def again(state: Any) -> list[str]:
        return ["b"]

    def refuse(state: Any) -> str:
        raise ValueError("no way")

    builder = ns.StateGraph(LogState)
    for name in ("a", "b", "c", "d"):
        builder.add_node(name, note(name))
    builder.add_edge(ns.START, "a").add_edge(ns.START, "d").add_edge("a", "b")
    builder.add_edge(["a", "d"], "c").add_conditional_edges("a", route, ["c", ns.END])
    builder.add_conditional_edges("a", again).add_conditional_edges("d", refuse, [ns.END])
    graph, cfg = builder.compile(checkpointer=ns.InMemorySaver(), name="Edited"), thread()

    def update(values: Any, as_node: str | None, **config: Any) -> Any:
        config = {**cfg, "callbacks": [Runs()], **config}
        return update_next(graph, config, values, as_node, aio=aio, read=cfg)

    def traced(**config: Any) -> list[Any]:
        seen.clear()
        return [update(**config), list(seen)]

    invoke(graph, {"log": []}, {**cfg, "callbacks": [Runs()]}, aio=aio)
    ran = [event for event in seen if event[0] == "start" and event[4] in ("a", "d")]
    return {
        "run": ran,
        "as a": traced(
            values={"log": ["x"]},
            as_node="a",
            tags=["mine"],
            metadata={"who": "me"},
            run_name="named",
        ),
        "as b": traced(values={"log": ["y"]}, as_node="b"),
        "inferred": traced(values=None, as_node=None),
        "refused": traced(values={"log": ["z"]}, as_node="d"),
    }


# --------------------------------------------------------------------------- prebuilt agent


class Sky(enum.Enum):
    CLEAR = "clear"
    CLOUDY = "cloudy"


class Forecast(pydantic.BaseModel):
    conditions: str
    sky: Sky = Sky.CLEAR


class ForecastDict(TypedDict):
    conditions: str


@dataclasses.dataclass
class ForecastRecord:
    conditions: str


FORECAST_JSON_SCHEMA = {
    "title": "Forecast",
    "type": "object",
    "properties": {"conditions": {"type": "string"}},
    "required": ["conditions"],
}


class StructuredFake(FakeMessagesListChatModel):
    """A chat model that binds any tools and answers a structured-output call with a
    sunny forecast in the shape the schema asks for."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def answer(_: Any) -> Any:
            if isinstance(schema, dict) or issubclass(schema, dict):
                return {"conditions": "sunny"}
            if issubclass(schema, pydantic.BaseModel):
                return schema(conditions="sunny", sky=Sky.CLOUDY)
            return schema(conditions="sunny")

        return RunnableLambda(answer)


def forecaster(ns: NS, response_format: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        # Both warn that create_react_agent moved to `langchain.agents`; it still works.
        warnings.simplefilter("ignore", DeprecationWarning)
        return ns.create_react_agent(
            StructuredFake(responses=[AIMessage("hi")]), [], response_format=response_format, **kw
        )


@case(aio=True, sql=True)
def case_react_agent_saves_its_structured_response(ns: NS, aio: bool) -> Any:
    """create_react_agent's structured response is saved whatever the response format's
    form (a class, a (prompt, class) pair, a TypedDict, a dataclass, a JSON schema), with
    the saver given at compile or attached later, and as a subgraph on its parent's saver,
    as a node or invoked by one."""
    # Every saver of a SQL run shares one database: each agent has a thread of its own.
    out: dict[str, Any] = {}
    forms = {
        "model": Forecast,
        "prompt and model": ("Answer as a forecast.", Forecast),
        "typed dict": ForecastDict,
        "dataclass": ForecastRecord,
        "json schema": FORECAST_JSON_SCHEMA,
    }
    for label, form in forms.items():
        agent = forecaster(ns, form, checkpointer=ns.InMemorySaver())
        cfg = thread(label)
        out[label] = [invoke(agent, question(), cfg, aio=aio), agent.get_state(cfg).values]
    later = forecaster(ns, Forecast)
    later.checkpointer = ns.InMemorySaver()
    out["attached later"] = invoke(later, question(), thread("later"), aio=aio)
    as_node = chat_graph(ns, {"agent": forecaster(ns, Forecast)})
    out["as a node"] = invoke(as_node, question(), thread("node"), aio=aio)
    inner = forecaster(ns, Forecast)

    def call(state: Any) -> dict[str, Any]:
        return {"messages": inner.invoke(state)["messages"][-1:]}

    async def acall(state: Any) -> dict[str, Any]:
        return {"messages": (await inner.ainvoke(state))["messages"][-1:]}

    calling = chat_graph(ns, {"caller": acall if aio else call})
    out["invoked by a node"] = invoke(calling, question(), thread("caller"), aio=aio)
    return out
