"""engine.prebuilt's ToolNode, ValidationNode and tools_condition against the oracle
`langgraph.prebuilt`: the same tools and the same input through both give the same
ToolMessages, Commands and errors.

Each side builds its own tools (a tool returning a Command must return its own side's
Command), and runs outside a graph with its own Runtime in the config, as a node would.
"""

import asyncio
import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.tools import BaseTool, InjectedToolCallId, ToolException
from langchain_core.tools import tool as dec_tool
from langgraph import prebuilt as oracle_prebuilt
from langgraph import runtime as oracle_runtime
from langgraph import types as oracle_types
from langgraph.errors import GraphBubbleUp as OracleBubbleUp
from langgraph.prebuilt import tool_node as oracle_tool_node
from langgraph.store.memory import InMemoryStore as OracleStore
from pydantic import BaseModel, ValidationError

from engine import prebuilt, types
from engine import runtime as engine_runtime
from engine.errors import GraphBubbleUp, GraphInterrupt
from engine.graph.message import REMOVE_ALL_MESSAGES
from engine.prebuilt import interrupt as engine_interrupt
from engine.prebuilt import tool_node
from engine.store.memory import InMemoryStore
from tests import side_by_side

# The oracle marks its prebuilt names deprecated (they moved to `langchain.agents`).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@dataclasses.dataclass(frozen=True)
class Side:
    """One implementation: its prebuilt module and the core types its tools use."""

    name: str
    prebuilt: Any
    tool_node: Any
    types: Any
    runtime: Any
    store: Callable[[], Any]
    bubble_up: type[Exception]

    def config(self, store: Any = None, context: Any = None) -> dict[str, Any]:
        runtime = self.runtime.Runtime(context=context, store=store)
        return {"configurable": {"__pregel_runtime": runtime}}


ENGINE = Side("engine", prebuilt, tool_node, types, engine_runtime, InMemoryStore, GraphBubbleUp)
ORACLE = Side(
    "oracle",
    oracle_prebuilt,
    oracle_tool_node,
    oracle_types,
    oracle_runtime,
    OracleStore,
    OracleBubbleUp,
)


def normalized(value: Any) -> Any:
    """A value with each side's own classes (Command, Send) turned into plain tuples."""
    if isinstance(value, BaseMessage):
        return (
            value.type,
            value.content,
            value.name,
            getattr(value, "tool_call_id", None),
            getattr(value, "status", None),
            value.additional_kwargs,
            value.id,
        )
    if type(value).__name__ == "Command":
        return ("command", normalized(value.update), normalized(value.goto), value.graph)
    if type(value).__name__ == "Send":
        return ("send", value.node, normalized(value.arg))
    return side_by_side.in_containers(value, normalized)


def outcome(run: Callable[[], Any]) -> Any:
    return side_by_side.outcome(run, normalized)


def node_outcome(node: Any, value: Any, config: Any, asynchronous: bool) -> Any:
    if asynchronous:
        return outcome(lambda: asyncio.run(node.ainvoke(value, config)))
    return outcome(lambda: node.invoke(value, config))


def call(name: str, call_id: str = "1", /, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


def ai(*calls: ToolCall) -> AIMessage:
    return AIMessage("", tool_calls=list(calls))


# The tools, built once per side.


@functools.cache
def build_tools(side: Side) -> list[BaseTool | Callable[..., Any]]:
    Command, Send = side.types.Command, side.types.Send
    InjectedState, InjectedStore = side.prebuilt.InjectedState, side.prebuilt.InjectedStore
    ToolRuntime = side.prebuilt.ToolRuntime

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    async def aadd(a: int, b: int) -> int:
        """Add two numbers, asynchronously."""
        return a + b

    def fail(kind: str) -> str:
        """Raise the named error."""
        errors = {"value": ValueError, "tool": ToolException, "key": KeyError}
        raise errors[kind]("boom")

    def as_json(n: int) -> list[dict[str, Any]]:
        """Return a value that is not text."""
        return [{"n": n, "word": "星期一"}]

    def blocks() -> list[dict[str, Any]]:
        """Return content blocks."""
        return [{"type": "text", "text": "a block"}]

    @dec_tool
    def own_handler(x: int) -> NoReturn:
        """A tool that handles its own errors."""
        raise ToolException("inner")

    own_handler.handle_tool_error = "handled by the tool"

    def read_state(
        x: int,
        state: Annotated[dict, InjectedState],
        foo: Annotated[str, InjectedState("foo")],
    ) -> str:
        """Read the state."""
        return f"{x} {foo} {len(state['messages'])}"

    def read_messages(msgs: Annotated[list, InjectedState("messages")]) -> str:
        """Read the messages."""
        return msgs[0].content

    def read_optional(city: Annotated[str | None, InjectedState("city")] = None) -> str:
        """Read an optional field."""
        return f"city={city}"

    def read_store(key: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Read the store."""
        item = store.get(("ns",), key)
        return item.value["v"] if item else "missing"

    @dec_tool
    def read_runtime(x: int, runtime: ToolRuntime) -> str:
        """Read the tool runtime."""
        return (
            f"{x} {runtime.tool_call_id} {sorted(runtime.state)} "
            f"{[t.name for t in runtime.tools][:2]} {runtime.store is not None}"
        )

    @dec_tool
    def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Hand over to bob in the parent graph."""
        answer = ToolMessage("Transferred", tool_call_id=tool_call_id)
        return Command(update={"messages": [answer]}, goto="bob", graph=Command.PARENT)

    @dec_tool
    def set_user(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Set the user name in the state."""
        answer = ToolMessage(f"user is {name}", tool_call_id=tool_call_id)
        return Command(update={"user": name, "messages": [answer]})

    @dec_tool
    def list_update(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Answer with a list update."""
        return Command(update=[ToolMessage("listed", tool_call_id=tool_call_id)])

    @dec_tool
    def no_answer() -> Any:
        """Forget to answer the call."""
        return Command(update={"messages": []})

    @dec_tool
    def wrong_answer() -> Any:
        """Answer another call."""
        return Command(update={"messages": [ToolMessage("?", tool_call_id="other")]})

    @dec_tool
    def parent_only() -> Any:
        """Update the parent graph without answering."""
        return Command(update={"messages": []}, graph=Command.PARENT)

    @dec_tool
    def clear() -> Any:
        """Remove all messages."""
        return Command(update={"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]})

    @dec_tool
    def send_to(node: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Send a packet to a node of the parent graph."""
        return Command(goto=[Send(node, {"from": tool_call_id})], graph=Command.PARENT)

    @dec_tool
    def bubble() -> str:
        """Raise control flow."""
        raise side.bubble_up("stop")

    return [
        add,
        aadd,
        fail,
        as_json,
        blocks,
        own_handler,
        read_state,
        read_messages,
        read_optional,
        read_store,
        read_runtime,
        transfer,
        set_user,
        list_update,
        no_answer,
        wrong_answer,
        parent_only,
        clear,
        send_to,
        bubble,
    ]


def run_both(
    make_input: Callable[[], Any],
    *,
    asynchronous: bool = False,
    with_store: bool = False,
    **node_kwargs: Any,
) -> tuple[Any, Any]:
    results = []
    for side in (ENGINE, ORACLE):
        node = side.prebuilt.ToolNode(build_tools(side), **node_kwargs)
        store = None
        if with_store:
            store = side.store()
            store.put(("ns",), "k", {"v": "stored"})
        results.append(node_outcome(node, make_input(), side.config(store=store), asynchronous))
    return results[0], results[1]


def handle_value_error(e: ValueError) -> str:
    return f"value error: {e}"


def handle_value_or_tool(e: ValueError | ToolException) -> str:
    return "value or tool"


def handle_anything(e):  # unannotated: handles every exception
    return "anything"


PLAIN_CASES = {
    "one call": lambda: {"messages": [ai(call("add", a=1, b=2))]},
    "parallel calls": lambda: {
        "messages": [ai(call("add", "1", a=1, b=2), call("aadd", "2", a=3, b=4))]
    },
    "message list": lambda: [HumanMessage("hi"), ai(call("add", a=1, b=2))],
    "tool call list": lambda: [call("add", "1", a=1, b=2), call("add", "2", a=2, b=2)],
    "json output": lambda: {"messages": [ai(call("as_json", n=3))]},
    "content blocks": lambda: {"messages": [ai(call("blocks"))]},
    "unknown tool": lambda: {"messages": [ai(call("nope"), call("add", "2", a=1, b=1))]},
    "invalid args": lambda: {"messages": [ai(call("add", a="x"))]},
    "missing args": lambda: {"messages": [ai(call("add"))]},
    "raising tool": lambda: {"messages": [ai(call("fail", kind="value"))]},
    "tool exception": lambda: {"messages": [ai(call("fail", kind="tool"))]},
    "tool's own handler": lambda: {"messages": [ai(call("own_handler", x=1))]},
    "state injection": lambda: {
        "messages": [HumanMessage("hi"), ai(call("read_state", x=1))],
        "foo": "bar",
    },
    "state field missing": lambda: {"messages": [ai(call("read_state", x=1))]},
    "messages from a list": lambda: [HumanMessage("first"), ai(call("read_messages"))],
    "state from a list": lambda: [ai(call("read_state", x=1))],
    "optional field missing": lambda: {"messages": [ai(call("read_optional"))]},
    "optional field present": lambda: {
        "messages": [ai(call("read_optional"))],
        "city": "Paris",
    },
    "forged injected arg": lambda: {
        "messages": [ai(call("read_state", x=1, foo="forged"))],
        "foo": "real",
    },
    "tool runtime": lambda: {"messages": [ai(call("read_runtime", x=5))], "extra": 1},
    "with context": lambda: {
        "__type": "tool_call_with_context",
        "tool_call": call("read_state", "c1", x=2),
        "state": {"messages": [HumanMessage("a"), HumanMessage("b")], "foo": "sent"},
    },
    "no ai message": lambda: {"messages": [HumanMessage("hi")]},
    "no messages": lambda: {"messages": []},
    "control flow": lambda: {"messages": [ai(call("bubble"))]},
}

ERROR_HANDLING = {
    "default": {},
    "all": {"handle_tool_errors": True},
    "none": {"handle_tool_errors": False},
    "text": {"handle_tool_errors": "Something failed."},
    "one type": {"handle_tool_errors": ValueError},
    "types": {"handle_tool_errors": (ToolException, KeyError)},
    "typed handler": {"handle_tool_errors": handle_value_error},
    "union handler": {"handle_tool_errors": handle_value_or_tool},
    "untyped handler": {"handle_tool_errors": handle_anything},
}


@pytest.mark.parametrize("errors", list(ERROR_HANDLING), ids=list(ERROR_HANDLING))
@pytest.mark.parametrize("case", list(PLAIN_CASES), ids=list(PLAIN_CASES))
def test_tool_node_matches_oracle(case: str, errors: str) -> None:
    engine, oracle = run_both(PLAIN_CASES[case], **ERROR_HANDLING[errors])
    assert engine == oracle


@pytest.mark.parametrize("case", list(PLAIN_CASES), ids=list(PLAIN_CASES))
def test_tool_node_async_matches_oracle(case: str) -> None:
    engine, oracle = run_both(PLAIN_CASES[case], asynchronous=True, handle_tool_errors=True)
    assert engine == oracle


@pytest.mark.parametrize("asynchronous", [False, True])
def test_tool_node_store_injection_matches_oracle(asynchronous: bool) -> None:
    def make_input() -> Any:
        return {"messages": [ai(call("read_store", "1", key="k"), call("read_runtime", "2", x=1))]}

    engine, oracle = run_both(make_input, asynchronous=asynchronous, with_store=True)
    assert engine == oracle
    assert engine["messages"][0][1] == "stored"
    # Without a store the node refuses the tool rather than passing None.
    assert run_both(make_input) == (("raised", "ValueError"), ("raised", "ValueError"))


COMMAND_CASES = {
    "parent command": lambda: {"messages": [ai(call("transfer"))]},
    "state update": lambda: {"messages": [ai(call("set_user", name="Ann"))]},
    "mixed with plain tools": lambda: {
        "messages": [ai(call("add", "1", a=1, b=2), call("set_user", "2", name="Ann"))]
    },
    "tool call list": lambda: [call("add", "1", a=1, b=2), call("transfer", "2")],
    "list update from a list": lambda: [ai(call("list_update"))],
    "list update from a dict": lambda: {"messages": [ai(call("list_update"))]},
    "dict update from a list": lambda: [ai(call("set_user", name="Ann"))],
    "no answer": lambda: {"messages": [ai(call("no_answer"))]},
    "answer to another call": lambda: {"messages": [ai(call("wrong_answer"))]},
    "parent update needs no answer": lambda: {"messages": [ai(call("parent_only"))]},
    "remove all messages": lambda: {"messages": [ai(call("clear"))]},
    "parent sends are merged": lambda: [
        ai(call("send_to", "1", node="alice"), call("send_to", "2", node="bob"))
    ],
}


@pytest.mark.parametrize("errors", ["default", "all", "none"])
@pytest.mark.parametrize("case", list(COMMAND_CASES), ids=list(COMMAND_CASES))
def test_tool_node_commands_match_oracle(case: str, errors: str) -> None:
    engine, oracle = run_both(COMMAND_CASES[case], **ERROR_HANDLING[errors])
    assert engine == oracle


@pytest.mark.parametrize("case", list(COMMAND_CASES), ids=list(COMMAND_CASES))
def test_tool_node_commands_async_match_oracle(case: str) -> None:
    engine, oracle = run_both(COMMAND_CASES[case], asynchronous=True)
    assert engine == oracle


@pytest.mark.parametrize("asynchronous", [False, True])
def test_tool_call_list_reads_the_graph_state(asynchronous: bool) -> None:
    # Run by `Send("tools", [call, ...])`, the node reads the state through the
    # function the loop puts in its config.
    graph_state = {"messages": [HumanMessage("a"), HumanMessage("b")], "foo": "from graph"}
    results = []
    for side in (ENGINE, ORACLE):
        node = side.prebuilt.ToolNode(build_tools(side))
        config = side.config()
        config["configurable"]["__pregel_read_state"] = lambda: graph_state
        value = [call("read_state", "1", x=1), call("read_runtime", "2", x=2)]
        results.append(node_outcome(node, value, config, asynchronous))
    assert results[0] == results[1]
    assert results[0]["messages"][0][1] == "1 from graph 2"


def test_tool_node_messages_key() -> None:
    def make_input() -> Any:
        return {"chat": [ai(call("add", a=2, b=2))]}

    engine, oracle = run_both(make_input, messages_key="chat")
    assert engine == oracle == {"chat": [("tool", "4", "add", "1", "success", {}, None)]}


# Wrappers (wrap_tool_call / awrap_tool_call).


def wrapper_cases(side: Side) -> dict[str, Callable[..., Any]]:
    def passthrough(request: Any, execute: Callable[[Any], Any]) -> Any:
        return execute(request)

    def doubled_args(request: Any, execute: Callable[[Any], Any]) -> Any:
        args = {k: v * 2 for k, v in request.tool_call["args"].items()}
        return execute(request.override(tool_call={**request.tool_call, "args": args}))

    def short_circuit(request: Any, execute: Callable[[Any], Any]) -> Any:
        return ToolMessage("cached", tool_call_id=request.tool_call["id"])

    def rejecting(request: Any, execute: Callable[[Any], Any]) -> Any:
        execute(request)
        raise TypeError("rejected by the wrapper")

    def swap_tool(request: Any, execute: Callable[[Any], Any]) -> Any:
        @dec_tool
        def dynamic(x: int, runtime: side.prebuilt.ToolRuntime) -> str:
            """Registered by the wrapper only."""
            return f"dynamic {x} {runtime.tool_call_id}"

        return execute(request.override(tool=dynamic))

    def new_state(request: Any, execute: Callable[[Any], Any]) -> Any:
        return execute(request.override(state={**request.state, "foo": "overridden"}))

    return {
        "passthrough": passthrough,
        "doubled args": doubled_args,
        "short circuit": short_circuit,
        "rejecting": rejecting,
        "swap tool": swap_tool,
        "new state": new_state,
    }


WRAPPER_INPUTS = {
    "passthrough": lambda: {"messages": [ai(call("add", a=1, b=2))]},
    "doubled args": lambda: {"messages": [ai(call("add", a=1, b=2))]},
    "short circuit": lambda: {"messages": [ai(call("unregistered"))]},
    "rejecting": lambda: {"messages": [ai(call("add", a=1, b=2))]},
    "swap tool": lambda: {"messages": [ai(call("dynamic", x=3))]},
    "new state": lambda: {"messages": [ai(call("read_state", x=1))], "foo": "old"},
}


@pytest.mark.parametrize("handle", [True, False])
@pytest.mark.parametrize("mode", ["sync", "async with sync wrapper", "async wrapper"])
@pytest.mark.parametrize("case", list(WRAPPER_INPUTS))
def test_tool_node_wrappers_match_oracle(case: str, mode: str, handle: bool) -> None:
    results = []
    for side in (ENGINE, ORACLE):
        wrapper = wrapper_cases(side)[case]
        kwargs: dict[str, Any] = {"handle_tool_errors": handle}
        if mode == "async wrapper":
            kwargs["awrap_tool_call"] = as_async_wrapper(wrapper)
        else:
            kwargs["wrap_tool_call"] = wrapper
        node = side.prebuilt.ToolNode(build_tools(side), **kwargs)
        value = WRAPPER_INPUTS[case]()
        results.append(node_outcome(node, value, side.config(), asynchronous=mode != "sync"))
    assert results[0] == results[1]


def as_async_wrapper(wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """The sync wrapper's decision, with the request it would execute run through the
    async `execute` instead."""

    async def awrapper(request: Any, execute: Callable[[Any], Any]) -> Any:
        chosen: list[Any] = []
        answer = wrapper(request, chosen.append)
        return await execute(chosen[-1]) if chosen else answer

    return awrapper


def test_tool_call_request_override_and_deprecated_setattr() -> None:
    request = tool_node.ToolCallRequest(
        tool_call=call("add", a=1), tool=None, state={"messages": []}, runtime=None
    )
    with pytest.warns(DeprecationWarning, match="Setting attribute 'tool_call'"):
        request.tool_call = call("other")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        changed = request.override(tool_call=call("new"))
    assert changed.tool_call["name"] == "new"
    assert request.tool_call["name"] == "other"


# Module-level helpers whose behaviour LangGraph's own tests pin down.


def test_infer_handled_types_matches_oracle() -> None:
    class Handler:
        def handle(self, e: KeyError) -> str:
            return ""

    def bad_type(e: str) -> str:
        return ""

    def bad_union(e: str | int) -> str:
        return ""

    def generic(e: list[Exception]) -> str:
        return ""

    handlers = [
        handle_anything,
        handle_value_error,
        handle_value_or_tool,
        Handler().handle,
        bad_type,
        bad_union,
        generic,
    ]
    for handler in handlers:
        assert outcome(lambda h=handler: tool_node._infer_handled_types(h)) == outcome(
            lambda h=handler: oracle_tool_node._infer_handled_types(h)
        )


def test_msg_content_output_matches_oracle() -> None:
    values = ["text", [{"type": "text", "text": "x"}], [{"a": 1}], {"k": "é"}, {1, 2}, 3, None]
    for value in values:
        assert tool_node.msg_content_output(value) == oracle_tool_node.msg_content_output(value)


def test_tool_invocation_error_message_matches_oracle() -> None:
    class Args(BaseModel):
        a: int

    with pytest.raises(ValidationError) as raised:
        Args.model_validate({"a": "x"})
    source = raised.value
    for filtered in (None, source.errors()):
        ours = tool_node.ToolInvocationError("t", source, {"a": "x"}, filtered)
        theirs = oracle_tool_node.ToolInvocationError("t", source, {"a": "x"}, filtered)
        assert ours.message == theirs.message
    assert tool_node.TOOL_CALL_ERROR_TEMPLATE == oracle_tool_node.TOOL_CALL_ERROR_TEMPLATE


STATES = [
    [ai(call("add"))],
    [AIMessage("done")],
    {"messages": [ai(call("add"))]},
    {"messages": [HumanMessage("hi")]},
    {"messages": []},
    {"other": [ai(call("add"))]},
]


@pytest.mark.parametrize("state", STATES)
def test_tools_condition_matches_oracle(state: Any) -> None:
    assert outcome(lambda: prebuilt.tools_condition(state)) == outcome(
        lambda: oracle_prebuilt.tools_condition(state)
    )
    assert outcome(lambda: prebuilt.tools_condition(state, messages_key="other")) == outcome(
        lambda: oracle_prebuilt.tools_condition(state, messages_key="other")
    )


def test_tools_condition_reads_pydantic_state() -> None:
    class State(BaseModel):
        messages: list

    assert prebuilt.tools_condition(State(messages=[ai(call("add"))])) == "tools"
    assert prebuilt.tools_condition(State(messages=[AIMessage("done")])) == "__end__"


def test_tool_node_inside_interrupt_reraises() -> None:
    def ask(question: str) -> str:
        """Ask a human."""
        raise GraphInterrupt(())

    node = prebuilt.ToolNode([ask], handle_tool_errors=True)
    with pytest.raises(GraphInterrupt):
        node.invoke({"messages": [ai(call("ask", question="?"))]})


def test_tool_node_runs_outside_a_graph_without_runtime() -> None:
    # No Runtime in the config: the node falls back to an empty one, as a Runnable
    # should work when invoked on its own.
    node = prebuilt.ToolNode(build_tools(ENGINE))
    result = node.invoke({"messages": [ai(call("read_runtime", x=1))]})
    assert result["messages"][0].content.startswith("1 1 ['messages']")


# ValidationNode.


class Point(BaseModel):
    x: int
    y: int


def point_fn(x: int, y: int) -> None:
    """A point."""


@dec_tool
def point_tool(x: int, y: int) -> str:
    """A point."""
    return ""


@pytest.mark.parametrize("schema", [Point, point_fn, point_tool], ids=["model", "fn", "tool"])
@pytest.mark.parametrize("as_dict", [True, False])
def test_validation_node_matches_oracle(schema: Any, as_dict: bool) -> None:
    name = getattr(schema, "name", None) or schema.__name__
    calls = [call(name, "ok", x=1, y=2), call(name, "bad", x="no", y=2)]

    def run(node_class: Any) -> Any:
        messages = [ai(*calls)]
        node = node_class([schema])
        value = {"messages": messages} if as_dict else messages
        return normalized(node.invoke(value)), normalized(asyncio.run(node.ainvoke(value)))

    ours = run(prebuilt.ValidationNode)
    assert ours == run(oracle_prebuilt.ValidationNode)
    messages = ours[0]["messages"] if as_dict else ours[0]
    assert [m[5].get("is_error") for m in messages] == [None, True]


def test_validation_node_refuses_what_it_cannot_check() -> None:
    class NoSchema(BaseTool):
        name: str = "no_schema"
        description: str = "A tool without an args schema."

        def _run(self) -> str:
            return ""

    for bad in (NoSchema(), 42):
        with pytest.raises(ValueError):
            prebuilt.ValidationNode([bad])
    node = prebuilt.ValidationNode([Point])
    for value in ({"messages": []}, [HumanMessage("hi")]):
        with pytest.raises(ValueError):
            node.invoke(value)


def test_validation_node_custom_error_text() -> None:
    node = prebuilt.ValidationNode(
        [Point], format_error=lambda error, call, schema: f"fix {call['id']}"
    )
    [answer] = node.invoke([ai(call("Point", "c", x="no"))])
    assert answer.content == "fix c"


def test_human_interrupt_types_have_the_oracle_keys() -> None:
    from langgraph.prebuilt import interrupt as oracle_interrupt

    for name in ("HumanInterruptConfig", "ActionRequest", "HumanInterrupt", "HumanResponse"):
        ours = getattr(engine_interrupt, name)
        theirs = getattr(oracle_interrupt, name)
        assert ours.__annotations__.keys() == theirs.__annotations__.keys()
        assert ours.__required_keys__ == theirs.__required_keys__
