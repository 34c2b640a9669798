"""ToolNode: the graph node that runs the tool calls of a model's last message.

It takes the state (a dict or object with a messages key), a bare list of messages, a
list of tool calls, or one call packed with its state by `Send` (how the v2 ReAct agent
gives each call a task of its own), runs the calls in parallel, and answers each with a
ToolMessage, or with the `Command` a tool returned. Tools may declare parameters that
the model never sees and the node fills in: the graph state (`InjectedState`), the store
(`InjectedStore`), or everything at once (`ToolRuntime`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import warnings
from collections.abc import Awaitable, Callable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field, replace
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    Literal,
    NoReturn,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    RemoveMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_config_list, get_executor_for_config
from langchain_core.tools import BaseTool, InjectedToolArg
from langchain_core.tools import tool as create_tool
from langchain_core.tools.base import (
    TOOL_MESSAGE_BLOCK_TYPES,
    ToolException,
    _DirectlyInjectedToolArg,
    _is_injected_arg_type,
    get_all_basemodel_annotations,
)
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict, TypeVar

from engine.constants import CONFIG_KEY_READ_STATE
from engine.errors import GraphBubbleUp, is_invalid_resume
from engine.graph.message import REMOVE_ALL_MESSAGES
from engine.pregel.runnable import RunnableCallable
from engine.runtime import ExecutionInfo
from engine.store.base import BaseStore
from engine.types import Command, Send

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from engine.runtime import Runtime

__all__ = [
    "InjectedState",
    "InjectedStore",
    "ToolCallRequest",
    "ToolCallWithContext",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "msg_content_output",
    "tools_condition",
]

StateT = TypeVar("StateT", default=dict)
ContextT = TypeVar("ContextT", default=None)

# The texts a model reads when a call fails; LangGraph's wording, so prompts tuned on
# LangGraph agents read the same errors here.
INVALID_TOOL_NAME_ERROR_TEMPLATE = (
    "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
)
TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
TOOL_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)

InputKind = Literal["list", "dict", "tool_calls"]
ErrorHandling = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]
ToolOutput = ToolMessage | Command | list[ToolMessage | Command]


def msg_content_output(output: Any) -> str | list[dict]:
    """A tool's return value as ToolMessage content: text and content blocks as they are,
    anything else as JSON (non-ASCII kept readable), or its `str()` if not JSON-able."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(
        isinstance(block, dict) and block.get("type") in TOOL_MESSAGE_BLOCK_TYPES
        for block in output
    ):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except Exception:
        return str(output)


class ToolInvocationError(ToolException):
    """The model called a tool with arguments its schema rejects.

    Raised by ToolNode only, so an error handler can tell the model's mistakes (which it
    can fix on its next turn) from failures inside the tool.
    """

    def __init__(
        self,
        tool_name: str,
        source: ValidationError,
        tool_kwargs: dict[str, Any],
        filtered_errors: list[ErrorDetails] | None = None,
    ) -> None:
        if filtered_errors is None:
            detail = str(source)
        else:
            detail = "\n".join(
                f"{'.'.join(str(part) for part in error.get('loc', ()))}: "
                f"{error.get('msg', 'Unknown error')}"
                for error in filtered_errors
            )
        self.message = TOOL_INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=tool_kwargs, error=detail
        )
        self.tool_name = tool_name
        self.tool_kwargs = tool_kwargs
        self.source = source
        self.filtered_errors = filtered_errors
        super().__init__(self.message)


def _default_handle_tool_errors(e: Exception) -> str:
    """Answer the model's own mistakes (bad arguments); let failures of the tool raise."""
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def _infer_handled_types(handler: Callable[..., str]) -> tuple[type[Exception], ...]:
    """The exception types an error handler takes, read from its first parameter's
    annotation (`e: ValueError` or `e: ValueError | TypeError`); all when unannotated."""
    params = list(inspect.signature(handler).parameters.values())
    if not params:
        return (Exception,)
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hint = get_type_hints(handler).get(first.name)
    if hint is None:
        return (Exception,)
    if get_origin(hint) in (Union, UnionType):
        members = get_args(hint)
        if all(isinstance(m, type) and issubclass(m, Exception) for m in members):
            return members
        raise ValueError(
            "Every type in the error handler's annotation must be an Exception type, "
            f"e.g. `def handler(e: ValueError | TypeError)`. Got '{hint}'."
        )
    if isinstance(hint, type) and issubclass(hint, Exception):
        return (hint,)
    raise ValueError(
        "Annotate the error handler's parameter with an Exception type or a union of "
        f"them, e.g. `def handler(e: ValueError)`. Got '{hint}'."
    )


def _handled_types(flag: ErrorHandling) -> tuple[type[Exception], ...]:
    if isinstance(flag, type) and issubclass(flag, Exception):
        return (flag,)
    if isinstance(flag, tuple):
        return flag
    if callable(flag):
        return _infer_handled_types(flag)
    return (Exception,)


def _error_content(e: Exception, flag: ErrorHandling) -> str:
    """The ToolMessage text for an error `handle_tool_errors` takes care of."""
    if isinstance(flag, bool | tuple) or (isinstance(flag, type) and issubclass(flag, Exception)):
        return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))
    if isinstance(flag, str):
        return flag
    if callable(flag):
        return flag(e)
    raise ValueError(
        f"handle_tool_errors must be a bool, a str, a callable or exception types; got {flag!r}."
    )


@dataclass
class _Injections:
    """Which parameters of one tool ToolNode fills in, and from where."""

    # parameter -> state field to pass, or None for the whole state
    state: dict[str, str | None]
    # state-field parameters with a default: a missing field leaves the default
    optional_state: set[str]
    store: str | None
    runtime: str | None
    # every parameter the model must not set (also other InjectedToolArg kinds)
    hidden: set[str]

    @property
    def filled(self) -> set[str]:
        """The parameters ToolNode itself supplies: no error about them helps the model."""
        names = set(self.state)
        names.update(name for name in (self.store, self.runtime) if name)
        return names


def _markers(annotation: Any, kind: type) -> list[Any]:
    """The `kind` markers in an annotation, looking inside Annotated and unions."""
    if isinstance(annotation, kind) or (
        isinstance(annotation, type) and issubclass(annotation, kind)
    ):
        return [annotation]
    origin = get_origin(annotation)
    if origin is Annotated or origin in (Union, UnionType):
        return [found for arg in get_args(annotation) for found in _markers(arg, kind)]
    if isinstance(origin, type) and issubclass(origin, kind):
        return [annotation]
    return []


def _marker(annotation: Any, kind: type) -> Any | None:
    found = _markers(annotation, kind)
    if len(found) > 1:
        raise ValueError(
            f"A tool argument may be annotated with {kind.__name__} once; found {found}."
        )
    return found[0] if found else None


def _injections_of(tool: BaseTool) -> _Injections:
    """Read a tool's injected parameters once, from its schema and its function."""
    schema = tool.get_input_schema()
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    annotations = get_type_hints(func, include_extras=True) if func else {}
    annotations.pop("return", None)
    annotations.update(get_all_basemodel_annotations(schema))
    fields = getattr(schema, "model_fields", {})

    found = _Injections(state={}, optional_state=set(), store=None, runtime=None, hidden=set())
    for name, annotation in annotations.items():
        if _is_injected_arg_type(annotation):
            found.hidden.add(name)
        if name == "runtime" or _marker(annotation, ToolRuntime) is not None:
            found.runtime = name
        if _marker(annotation, InjectedStore) is not None:
            found.store = name
        state = _marker(annotation, InjectedState)
        if state is None:
            continue
        state_field = state.field if isinstance(state, InjectedState) else None
        found.state[name] = state_field
        if state_field and name in fields and not fields[name].is_required():
            found.optional_state.add(name)
    return found


def _filter_validation_errors(
    error: ValidationError, injections: _Injections | None
) -> list[ErrorDetails]:
    """The validation errors about arguments the model wrote, with the values ToolNode
    injected left out of the echoed input: the model can only fix its own part."""
    filled = injections.filled if injections else set()
    kept: list[ErrorDetails] = []
    for detail in error.errors():
        if not detail["loc"] or detail["loc"][0] in filled:
            continue
        echoed = detail.get("input")
        if isinstance(echoed, dict):
            detail = {**detail, "input": {k: v for k, v in echoed.items() if k not in filled}}
        kept.append(detail)
    return kept


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """Everything about the run a tool may need, passed to a parameter typed
    `ToolRuntime` (or named `runtime`); the model never sees that parameter.

    It is the node `Runtime` (context, store, stream writer, execution info) plus what
    only a tool call has: the graph state, its config, the call's id and the node's tools.
    """

    state: StateT
    context: ContextT
    config: RunnableConfig
    stream_writer: Callable[[Any], None]
    tool_call_id: str | None
    store: BaseStore | None
    tools: list[BaseTool] = field(default_factory=list)
    execution_info: ExecutionInfo | None = None
    server_info: Any = None


class InjectedState(InjectedToolArg):
    """Marks a tool parameter that receives the graph state, or one of its fields:
    `Annotated[dict, InjectedState]` or `Annotated[str, InjectedState("user")]`."""

    def __init__(self, field: str | None = None) -> None:
        self.field = field


class InjectedStore(InjectedToolArg):
    """Marks a tool parameter that receives the graph's store:
    `Annotated[BaseStore, InjectedStore()]`."""


@dataclass
class ToolCallRequest:
    """One tool call on its way to a tool, as `wrap_tool_call` sees it. `tool` is None
    when no tool of that name is registered: the wrapper may answer it itself."""

    tool_call: ToolCall
    tool: BaseTool | None
    state: Any
    runtime: ToolRuntime

    def __setattr__(self, name: str, value: Any) -> None:
        # Requests are shared with the caller's wrapper: changing one in place is
        # allowed for compatibility but warned about, `override()` is the way.
        if hasattr(self, name):
            warnings.warn(
                f"Setting attribute '{name}' on ToolCallRequest is deprecated. "
                "Use the override() method instead to create a new instance with "
                "modified values.",
                DeprecationWarning,
                stacklevel=2,
            )
        object.__setattr__(self, name, value)

    def override(self, **overrides: Any) -> ToolCallRequest:
        """A copy with some fields replaced; a new `state` reaches `runtime.state` too, so
        InjectedState and ToolRuntime parameters see the same state."""
        request = replace(self, **overrides)
        if "state" in overrides and isinstance(request.runtime, ToolRuntime):
            request = replace(request, runtime=replace(request.runtime, state=request.state))
        return request


ToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], ToolMessage | Command]],
    ToolMessage | Command,
]
"""Runs around each tool call: may change the request, call `execute` (any number of
times: retries), or answer without it."""

AsyncToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]],
    Awaitable[ToolMessage | Command],
]
"""The async form of ToolCallWrapper, used by `ainvoke`."""

# One tool call sent to the node with `Send`, with the state it was made in. The
# functional form keeps the `__type` key from being name-mangled.
ToolCallWithContext = TypedDict(
    "ToolCallWithContext",
    {"tool_call": ToolCall, "__type": Literal["tool_call_with_context"], "state": Any},
)


def _is_call_with_context(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__type") == "tool_call_with_context"


def _is_tool_call_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[-1], dict)
        and value[-1].get("type") == "tool_call"
    )


class ToolNode(RunnableCallable):
    """Runs the tool calls of the last AIMessage, in parallel, and returns their results.

    Input: the state (a dict, or an object, holding `messages_key`), a list of messages,
    a list of tool calls, or a `ToolCallWithContext` sent with `Send`. Output: a list of
    ToolMessages for list input, else `{messages_key: [...]}`; when a tool returned a
    `Command`, a list of such updates and the Commands, which the graph applies in turn.

    `handle_tool_errors` says which exceptions become an error ToolMessage the model can
    react to instead of failing the run: True (all, with a standard text), a str (all,
    with that text), exception types (those), a callable (the types its first parameter
    is annotated with; its return value is the text) or False (none). By default only
    invalid arguments are answered; errors raised by tools propagate. Interrupts and
    commands to a parent graph always propagate.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: ErrorHandling = _default_handle_tool_errors,
        messages_key: str = "messages",
        wrap_tool_call: ToolCallWrapper | None = None,
        awrap_tool_call: AsyncToolCallWrapper | None = None,
    ) -> None:
        super().__init__(self._func, self._afunc, name=name, tags=tags, trace=False)
        self._handle_tool_errors = handle_tool_errors
        self._messages_key = messages_key
        self._wrap_tool_call = wrap_tool_call
        self._awrap_tool_call = awrap_tool_call
        self._tools_by_name: dict[str, BaseTool] = {}
        self._injections: dict[str, _Injections] = {}
        for item in tools:
            tool = item if isinstance(item, BaseTool) else create_tool(item)
            self._tools_by_name[tool.name] = tool
            self._injections[tool.name] = _injections_of(tool)

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        return self._tools_by_name

    # The node.

    def _func(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        calls, kind = self._parse_input(input)
        requests = self._requests(input, calls, config, runtime)
        if len(requests) == 1:
            # One call needs no pool: starting its thread costs more than most tools.
            return self._combine_outputs([self._run_one(requests[0], kind)], kind)
        with get_executor_for_config(config) as executor:
            outputs = list(executor.map(self._run_one, requests, [kind] * len(requests)))
        return self._combine_outputs(outputs, kind)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        calls, kind = self._parse_input(input)
        requests = self._requests(input, calls, config, runtime)
        outputs = await asyncio.gather(*(self._arun_one(r, kind) for r in requests))
        return self._combine_outputs(list(outputs), kind)

    def _parse_input(self, input: Any) -> tuple[list[ToolCall], InputKind]:
        if _is_tool_call_list(input):
            return list(input), "tool_calls"
        if _is_call_with_context(input):
            return [input["tool_call"]], "tool_calls"
        if isinstance(input, list):
            messages, kind = input, "list"
        elif isinstance(input, dict):
            messages, kind = input.get(self._messages_key), "dict"
        else:
            messages, kind = getattr(input, self._messages_key, None), "dict"
        if not messages:
            raise ValueError("No message found in input")
        last_ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last_ai is None:
            raise ValueError("No AIMessage found in input")
        return list(last_ai.tool_calls), kind

    def _state_of(self, input: Any, config: RunnableConfig) -> Any:
        """The graph state the tools see: the input itself, the state a `Send` carried,
        or, for a bare list of calls, the state read from the running graph."""
        if _is_call_with_context(input):
            return input["state"]
        if _is_tool_call_list(input):
            read_state = (config.get("configurable") or {}).get(CONFIG_KEY_READ_STATE)
            return read_state() if read_state is not None else {}
        return input

    def _requests(
        self, input: Any, calls: list[ToolCall], config: RunnableConfig, runtime: Runtime
    ) -> list[ToolCallRequest]:
        state = self._state_of(input, config)
        tools = list(self._tools_by_name.values())
        return [
            ToolCallRequest(
                tool_call=call,
                tool=self._tools_by_name.get(call["name"]),
                state=state,
                runtime=ToolRuntime(
                    state=state,
                    context=runtime.context,
                    config=call_config,
                    stream_writer=runtime.stream_writer,
                    tool_call_id=call["id"],
                    store=runtime.store,
                    tools=tools,
                    execution_info=runtime.execution_info,
                    server_info=runtime.server_info,
                ),
            )
            for call, call_config in zip(calls, get_config_list(config, len(calls)), strict=True)
        ]

    # One call, through the wrapper if there is one.

    def _run_one(self, request: ToolCallRequest, kind: InputKind) -> ToolOutput:
        config = request.runtime.config
        if self._wrap_tool_call is None:
            return self._execute(request, kind, config)
        try:
            return self._wrap_tool_call(request, lambda req: self._execute(req, kind, config))
        except Exception as e:
            return self._on_error(e, request.tool_call, by_type=False)

    async def _arun_one(self, request: ToolCallRequest, kind: InputKind) -> ToolOutput:
        config = request.runtime.config
        try:
            if self._awrap_tool_call is not None:
                return await self._awrap_tool_call(
                    request, lambda req: self._aexecute(req, kind, config)
                )
            if self._wrap_tool_call is not None:
                return self._wrap_tool_call(request, lambda req: self._execute(req, kind, config))
        except Exception as e:
            return self._on_error(e, request.tool_call, by_type=False)
        return await self._aexecute(request, kind, config)

    def _execute(self, request: ToolCallRequest, kind: InputKind, config: RunnableConfig) -> Any:
        tool, tool_input = self._prepare(request)
        if tool is None:
            return tool_input
        try:
            try:
                response = tool.invoke(tool_input, config)
            except ValidationError as e:
                self._raise_invocation_error(e, request.tool_call, tool)
            return self._normalize(response, request.tool_call, kind)
        except Exception as e:
            return self._on_error(e, request.tool_call, by_type=True)

    async def _aexecute(
        self, request: ToolCallRequest, kind: InputKind, config: RunnableConfig
    ) -> Any:
        tool, tool_input = self._prepare(request)
        if tool is None:
            return tool_input
        try:
            try:
                response = await tool.ainvoke(tool_input, config)
            except ValidationError as e:
                self._raise_invocation_error(e, request.tool_call, tool)
            return self._normalize(response, request.tool_call, kind)
        except Exception as e:
            return self._on_error(e, request.tool_call, by_type=True)

    def _prepare(self, request: ToolCallRequest) -> tuple[BaseTool | None, Any]:
        """The tool and its input, injected arguments filled in; for an unknown tool,
        (None, the error ToolMessage that answers the call)."""
        call = request.tool_call
        if request.tool is None:
            if call["name"] in self._tools_by_name:
                raise TypeError(f"The request for '{call['name']}' lost its tool.")
            content = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
                requested_tool=call["name"], available_tools=", ".join(self._tools_by_name)
            )
            return None, ToolMessage(
                content, name=call["name"], tool_call_id=call["id"], status="error"
            )
        injected = self._inject_tool_args(call, request.runtime, request.tool)
        return request.tool, {**injected, "type": "tool_call"}

    def _injections_for(self, tool: BaseTool) -> _Injections:
        # A wrapper may hand in a tool that was not registered: read it on the spot.
        if self._tools_by_name.get(tool.name) is tool:
            return self._injections[tool.name]
        return _injections_of(tool)

    def _inject_tool_args(
        self, tool_call: ToolCall, tool_runtime: ToolRuntime, tool: BaseTool
    ) -> ToolCall:
        """The call with the arguments the tool asks to be injected set from the run.
        Values the model wrote for hidden parameters are dropped first, so a model
        cannot forge them."""
        injections = self._injections_for(tool)
        values: dict[str, Any] = {}
        if injections.state:
            values.update(self._state_values(tool_call["name"], injections, tool_runtime.state))
        if injections.store:
            if tool_runtime.store is None:
                raise ValueError(
                    "Cannot inject store into tools with InjectedStore annotations - "
                    "please compile your graph with a store."
                )
            values[injections.store] = tool_runtime.store
        if injections.runtime:
            values[injections.runtime] = tool_runtime
        args = {k: v for k, v in tool_call["args"].items() if k not in injections.hidden}
        return {**tool_call, "args": {**args, **values}}

    def _state_values(self, tool_name: str, injections: _Injections, state: Any) -> dict[str, Any]:
        if isinstance(state, list):
            # A bare message list stands for the state when the tool asks for the whole
            # state first, or for the messages only (LangGraph's rule, kept as it is).
            fields = list(injections.state.values())
            if fields[0] is not None and fields != [self._messages_key]:
                wanted = ", ".join(f for f in fields if f)
                raise ValueError(
                    f"Invalid input to ToolNode. Tool {tool_name} requires graph state "
                    f"dict as input. State should contain fields {wanted}."
                )
            state = {self._messages_key: state}
        values: dict[str, Any] = {}
        for param, state_field in injections.state.items():
            if state_field is None:
                values[param] = state
            elif isinstance(state, dict):
                if state_field in state:
                    values[param] = state[state_field]
                elif param not in injections.optional_state:
                    raise KeyError(state_field)
            elif hasattr(state, state_field):
                values[param] = getattr(state, state_field)
            elif param not in injections.optional_state:
                raise AttributeError(state_field)
        return values

    def _raise_invocation_error(
        self, e: ValidationError, call: ToolCall, tool: BaseTool
    ) -> NoReturn:
        if is_invalid_resume(e):
            # A bad answer to an interrupt inside the tool: not the model's mistake, so
            # the run fails and the interrupt can be answered again.
            raise e
        filtered = _filter_validation_errors(e, self._injections_for(tool))
        raise ToolInvocationError(call["name"], e, call["args"], filtered) from e

    def _on_error(self, e: Exception, call: ToolCall, *, by_type: bool) -> ToolMessage:
        """The error ToolMessage for an exception `handle_tool_errors` covers; re-raises
        the others. Errors raised by a wrapper are answered whatever their type."""
        flag = self._handle_tool_errors
        if (
            isinstance(e, GraphBubbleUp)
            or is_invalid_resume(e)
            or not flag
            or (by_type and not isinstance(e, _handled_types(flag)))
        ):
            raise e
        return ToolMessage(
            content=_error_content(e, flag),
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )

    # What tools return.

    def _normalize(self, response: Any, call: ToolCall, kind: InputKind) -> ToolOutput:
        if isinstance(response, Command):
            return self._checked_command(response, call, kind)
        if isinstance(response, ToolMessage):
            response.content = cast("str | list", msg_content_output(response.content))
            return response
        if isinstance(response, list):
            if all(isinstance(item, Command | ToolMessage) for item in response):
                return self._checked_list(response, call, kind)
            raise TypeError(
                f"Tool {call['name']} returned a list with invalid element types: "
                "expected all Command or ToolMessage"
            )
        raise TypeError(f"Tool {call['name']} returned unexpected type: {type(response)}")

    def _checked_list(
        self, items: list[ToolMessage | Command], call: ToolCall, kind: InputKind
    ) -> list[ToolMessage | Command]:
        """A list of results for one call must answer it exactly once, in a ToolMessage
        of its own or inside one of its Commands."""
        answers = 0
        for item in items:
            if isinstance(item, Command):
                update = item.update if isinstance(item.update, dict) else {}
                messages = update.get(self._messages_key, [])
            else:
                messages = [item]
            answers += sum(
                isinstance(m, ToolMessage) and m.tool_call_id == call["id"] for m in messages
            )
        if answers != 1:
            raise ValueError(
                f"Tool {call['name']} returned a list with {answers} messages bound to "
                f"tool_call_id {call['id']!r}; expected exactly one terminating ToolMessage."
            )
        return [
            self._checked_command(item, call, kind, needs_answer=False)
            if isinstance(item, Command)
            else self._normalize(item, call, kind)
            for item in items
        ]

    def _checked_command(
        self, command: Command, call: ToolCall, kind: InputKind, *, needs_answer: bool = True
    ) -> Command:
        """A copy of a tool's Command whose update fits the node's input form and, when
        it updates this graph, answers the call: every tool call in the history needs
        its ToolMessage, or the next model call fails."""
        if isinstance(command.update, dict):
            if kind == "list":
                raise ValueError(
                    "Tools can provide a dict in Command.update only when using dict "
                    f"with '{self._messages_key}' key as ToolNode input, "
                    f"got: {command.update} for tool '{call['name']}'"
                )
            command = deepcopy(command)
            messages = convert_to_messages(command.update.get(self._messages_key, []))
        elif isinstance(command.update, list):
            if kind != "list":
                raise ValueError(
                    "Tools can provide a list of messages in Command.update only when "
                    f"using list of messages as ToolNode input, got: {command.update} "
                    f"for tool '{call['name']}'"
                )
            command = deepcopy(command)
            messages = convert_to_messages(command.update)
        else:
            return command
        if messages == [RemoveMessage(id=REMOVE_ALL_MESSAGES)]:
            return command
        answered = False
        for message in messages:
            if isinstance(message, ToolMessage) and message.tool_call_id == call["id"]:
                message.name = call["name"]
                answered = True
        if needs_answer and command.graph is None and not answered:
            # The model reads this text when errors are handled: LangGraph's wording.
            answer = '[ToolMessage("Success", tool_call_id=tool_call_id), ...]'
            update = f'{{"messages": {answer}}}' if kind == "dict" else answer
            expected = f"`Command(update={update}, ...)`"
            raise ValueError(
                "Expected to have a matching ToolMessage in Command.update for tool "
                f"'{call['name']}', got: {messages}. Every tool call (LLM requesting to "
                "call a tool) in the message history MUST have a corresponding "
                f"ToolMessage. You can fix it by modifying the tool to return {expected}."
            )
        return command

    def _combine_outputs(self, outputs: list[ToolOutput], kind: InputKind) -> Any:
        """The node's return value. Without Commands: the messages, as a list for list
        input, else under the messages key. With Commands: a list of updates the graph
        applies in order, with all `Send`s to the parent graph in one Command (a node
        can raise only one command to its parent)."""
        flat: list[ToolMessage | Command] = []
        for output in outputs:
            flat.extend(output if isinstance(output, list) else [output])
        if not any(isinstance(item, Command) for item in flat):
            return flat if kind == "list" else {self._messages_key: flat}

        combined: list[Any] = []
        parent_sends: list[Send] | None = None
        for item in flat:
            if not isinstance(item, Command):
                combined.append([item] if kind == "list" else {self._messages_key: [item]})
            elif (
                item.graph == Command.PARENT
                and isinstance(item.goto, list)
                and all(isinstance(send, Send) for send in item.goto)
            ):
                parent_sends = [*(parent_sends or []), *item.goto]
            else:
                combined.append(item)
        if parent_sends is not None:
            combined.append(Command(graph=Command.PARENT, goto=parent_sends))
        return combined


def tools_condition(
    state: list[AnyMessage] | dict[str, Any] | BaseModel,
    messages_key: str = "messages",
) -> Literal["tools", "__end__"]:
    """Route to "tools" when the last message asks for tool calls, else to the end."""
    if isinstance(state, list):
        messages = state
    elif isinstance(state, dict):
        messages = state.get(messages_key)
    else:
        messages = getattr(state, messages_key, None)
    if not messages:
        raise ValueError(f"No messages found in input state to tool_edge: {state}")
    return "tools" if getattr(messages[-1], "tool_calls", None) else "__end__"
