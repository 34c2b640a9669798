"""create_react_agent: the tool-calling agent loop as a ready-made graph.

The model is called with the conversation; while its reply asks for tools, a ToolNode
runs them and the model is called again with their results. Options add a prompt, hooks
before and after each model call, a final structured-output step, and a step budget that
ends the loop with an apology instead of a recursion error.
"""

# No `from __future__ import annotations` here: the TypedDict states below must keep real
# annotations, or `NotRequired` would not be seen and `remaining_steps` would be required.

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NotRequired,
    TypeVar,
    cast,
    get_type_hints,
)

from langchain_core.language_models import (
    BaseChatModel,
    LanguageModelInput,
    LanguageModelLike,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig, RunnableSequence
from langchain_core.tools import BaseTool
from pydantic import BaseModel, create_model
from typing_extensions import TypedDict

from engine.graph import END, CompiledStateGraph, StateGraph
from engine.graph.message import add_messages
from engine.managed import RemainingSteps
from engine.prebuilt.tool_node import ToolCallWithContext, ToolNode
from engine.pregel.runnable import RunnableCallable
from engine.runtime import Runtime
from engine.types import Send
from engine.warnings import LangGraphDeprecatedSinceV10, renamed

if TYPE_CHECKING:
    from engine.checkpoint.base import BaseCheckpointSaver
    from engine.store.base import BaseStore

__all__ = [
    "AgentState",
    "AgentStatePydantic",
    "AgentStateWithStructuredResponse",
    "AgentStateWithStructuredResponsePydantic",
    "create_react_agent",
    "create_tool_calling_executor",
]

StructuredResponse = dict | BaseModel
StructuredResponseSchema = dict | type[BaseModel]


class AgentState(TypedDict):
    """The state of the agent: its conversation, and how many steps the recursion limit
    still allows (filled in by the engine)."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    remaining_steps: NotRequired[RemainingSteps]


class AgentStatePydantic(BaseModel):
    """AgentState as a pydantic model."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    remaining_steps: RemainingSteps = 25


class AgentStateWithStructuredResponse(AgentState):
    """AgentState with the final structured answer (`response_format`)."""

    structured_response: StructuredResponse


class AgentStateWithStructuredResponsePydantic(AgentStatePydantic):
    """AgentStatePydantic with the final structured answer (`response_format`)."""

    structured_response: StructuredResponse


StateSchema = TypeVar("StateSchema", bound=AgentState | AgentStatePydantic)
StateSchemaType = type[StateSchema]

PROMPT_RUNNABLE_NAME = "Prompt"

Prompt = (
    SystemMessage
    | str
    | Callable[[StateSchema], LanguageModelInput]
    | Runnable[StateSchema, LanguageModelInput]
)

REMAINING_STEPS_REPLY = "Sorry, need more steps to process this request."


def _state_value(state: Any, key: str, default: Any = None) -> Any:
    if isinstance(state, dict):
        return state.get(key, default)
    return getattr(state, key, default)


def _inline(pick: Callable[[Any], Any]) -> Runnable:
    """A prompt of ours: it only picks messages, so an async call runs it in place rather
    than in a worker thread (a hop per model call)."""

    async def apick(state: Any) -> Any:
        return pick(state)

    return RunnableCallable(pick, apick, name=PROMPT_RUNNABLE_NAME)


def _get_prompt_runnable(prompt: Prompt | None) -> Runnable:
    """The prompt as a Runnable from the state to the model's input messages."""
    if isinstance(prompt, Runnable):
        return prompt
    if prompt is None:
        return _inline(lambda state: _state_value(state, "messages"))
    if isinstance(prompt, str | SystemMessage):
        system = SystemMessage(content=prompt) if isinstance(prompt, str) else prompt
        return _inline(lambda state: [system, *_state_value(state, "messages")])
    if inspect.iscoroutinefunction(prompt):
        return RunnableCallable(None, prompt, name=PROMPT_RUNNABLE_NAME)
    if callable(prompt):
        return RunnableCallable(prompt, name=PROMPT_RUNNABLE_NAME)
    raise ValueError(f"Got unexpected type for `prompt`: {type(prompt)}")


def _chat_step(model: LanguageModelLike) -> LanguageModelLike:
    """The model inside `model | parser`-like sequences: where bound tools live."""
    if isinstance(model, RunnableSequence):
        return next(
            (step for step in model.steps if isinstance(step, RunnableBinding | BaseChatModel)),
            model,
        )
    return model


def _should_bind_tools(
    model: LanguageModelLike, tools: Sequence[BaseTool], num_builtin: int = 0
) -> bool:
    """Whether the agent must bind its tools to the model: not when the model comes with
    tools bound already, which must then be the agent's (plus `num_builtin` provider
    tools given as dicts)."""
    model = _chat_step(model)
    if not isinstance(model, RunnableBinding) or "tools" not in model.kwargs:
        return True
    bound = model.kwargs["tools"]
    if len(tools) != len(bound) - num_builtin:
        raise ValueError(
            "Number of tools in the model.bind_tools() and tools passed to "
            f"create_react_agent must match. Got {len(tools)} tools, expected "
            f"{len(bound) - num_builtin}"
        )
    bound_names = set()
    for spec in bound:
        if spec.get("type") == "function":  # OpenAI style
            bound_names.add(spec["function"]["name"])
        elif spec.get("name"):  # Anthropic style
            bound_names.add(spec["name"])
    if missing := {tool.name for tool in tools} - bound_names:
        raise ValueError(f"Missing tools '{missing}' in the model.bind_tools()")
    return False


def _get_model(model: LanguageModelLike) -> BaseChatModel:
    """The chat model itself, without bound tools or steps around it: what
    `with_structured_output` is called on."""
    model = _chat_step(model)
    if isinstance(model, RunnableBinding):
        model = model.bound
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            "Expected `model` to be a ChatModel or RunnableBinding "
            f"(e.g. model.bind_tools(...)), got {type(model)}"
        )
    return model


def _validate_chat_history(messages: Sequence[BaseMessage]) -> None:
    """Refuse a history with unanswered tool calls: providers reject it, with an error
    far from its cause (often an interrupted tools step that was never resumed)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    unanswered = [
        call
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]
    if unanswered:
        raise ValueError(
            "Found AIMessages with tool_calls that do not have a corresponding "
            f"ToolMessage. Here are the first few of those tool calls: {unanswered[:3]}.\n\n"
            "Every tool call (LLM requesting to call a tool) in the message history MUST "
            "have a corresponding ToolMessage (result of a tool invocation to return to "
            "the LLM) - this is required by most LLM providers."
        )


def _with_messages(state: Any, messages: Sequence[BaseMessage]) -> Any:
    """A copy of the state whose `messages` are the ones the prompt should see."""
    if isinstance(state, BaseModel):
        return state.model_copy(update={"messages": messages})
    return {**state, "messages": messages}


DynamicModel = Callable[[Any, Runtime], Any]
Hook = Callable[..., Any] | Runnable


class _ModelCall:
    """The agent's model call and its structured-output call, as node functions.

    The model is fixed (already piped after the prompt), or chosen on each call by
    `dynamic(state, runtime)`, a function that may be async.
    """

    def __init__(
        self,
        *,
        static: Runnable | None,
        dynamic: DynamicModel | None,
        prompt: Prompt | None,
        name: str | None,
        return_direct: set[str],
        reads_llm_input: bool,
        response_format: StructuredResponseSchema | tuple[str, StructuredResponseSchema] | None,
    ) -> None:
        self.static = static
        self.dynamic = dynamic
        self.async_dynamic = dynamic is not None and inspect.iscoroutinefunction(dynamic)
        self.prompt = prompt
        self.name = name
        self.return_direct = return_direct
        self.reads_llm_input = reads_llm_input
        self.response_format = response_format

    def _resolve(self, state: Any, runtime: Runtime) -> Runnable:
        if self.dynamic is None:
            return cast(Runnable, self.static)
        if self.async_dynamic:
            raise RuntimeError(
                "Async model callable provided but agent invoked synchronously. "
                "Use agent.ainvoke() or agent.astream(), or provide a sync model callable."
            )
        return _get_prompt_runnable(self.prompt) | self.dynamic(state, runtime)

    async def _aresolve(self, state: Any, runtime: Runtime) -> Runnable:
        if self.async_dynamic:
            model = await cast(Callable[..., Awaitable[Any]], self.dynamic)(state, runtime)
            return _get_prompt_runnable(self.prompt) | model
        return self._resolve(state, runtime)

    def _model_input(self, state: Any) -> Any:
        """The state the prompt sees: `messages` are the pre-model hook's
        `llm_input_messages` when it set them, checked for unanswered tool calls."""
        messages = _state_value(state, "messages")
        if self.reads_llm_input:
            messages = _state_value(state, "llm_input_messages") or messages
        if messages is None:
            expected = (
                "'llm_input_messages' or 'messages' key"
                if self.reads_llm_input
                else "'messages' key"
            )
            raise ValueError(f"Expected input to call_model to have {expected}, but got {state}")
        _validate_chat_history(messages)
        return _with_messages(state, messages)

    def _update(self, state: Any, response: BaseMessage) -> dict[str, Any]:
        response.name = self.name
        if self._out_of_steps(state, response):
            response = AIMessage(id=response.id, content=REMAINING_STEPS_REPLY)
        return {"messages": [response]}

    def _out_of_steps(self, state: Any, response: BaseMessage) -> bool:
        """Whether the step budget ends here: running the requested tools and calling the
        model again would pass the recursion limit (tools that return directly need one
        step fewer)."""
        remaining = _state_value(state, "remaining_steps")
        if remaining is None or not isinstance(response, AIMessage):
            return False
        calls = response.tool_calls
        if remaining < 1 and all(call["name"] in self.return_direct for call in calls):
            return True
        return remaining < 2 and bool(calls)

    def call_model(self, state: Any, runtime: Runtime, config: RunnableConfig) -> dict[str, Any]:
        model_input = self._model_input(state)
        response = self._resolve(state, runtime).invoke(model_input, config)
        return self._update(state, response)

    async def acall_model(
        self, state: Any, runtime: Runtime, config: RunnableConfig
    ) -> dict[str, Any]:
        model_input = self._model_input(state)
        model = await self._aresolve(state, runtime)
        response = await model.ainvoke(model_input, config)
        return self._update(state, response)

    def _structured_request(self, state: Any) -> tuple[list[Any], Any]:
        messages = list(_state_value(state, "messages"))
        if isinstance(self.response_format, tuple):
            system_prompt, schema = self.response_format
            return [SystemMessage(content=system_prompt), *messages], schema
        return messages, self.response_format

    def generate_structured_response(
        self, state: Any, runtime: Runtime, config: RunnableConfig
    ) -> dict[str, Any]:
        messages, schema = self._structured_request(state)
        model = _get_model(self._resolve(state, runtime)).with_structured_output(schema)
        return {"structured_response": model.invoke(messages, config)}

    async def agenerate_structured_response(
        self, state: Any, runtime: Runtime, config: RunnableConfig
    ) -> dict[str, Any]:
        messages, schema = self._structured_request(state)
        model = _get_model(await self._aresolve(state, runtime)).with_structured_output(schema)
        return {"structured_response": await model.ainvoke(messages, config)}


def _llm_input_schema(state_schema: type) -> type:
    """The model node's input: the state plus the pre-model hook's `llm_input_messages`."""
    if issubclass(state_schema, BaseModel):
        return create_model(
            "CallModelInputSchema",
            llm_input_messages=(list[AnyMessage], ...),
            __base__=state_schema,
        )

    class CallModelInputSchema(state_schema):  # type: ignore[misc, valid-type]
        llm_input_messages: list[AnyMessage]

    return CallModelInputSchema


def _check_state_schema(state_schema: type, with_structured_response: bool) -> None:
    required = {"messages", "remaining_steps"}
    if with_structured_response:
        required.add("structured_response")
    if missing := required - set(get_type_hints(state_schema)):
        raise ValueError(f"Missing required key(s) {missing} in state_schema")


def _tool_sends(calls: Sequence[Any], state: Any) -> list[Send]:
    """One `tools` task per call (v2), each with the state the call was made in."""
    return [
        Send(
            "tools",
            ToolCallWithContext(__type="tool_call_with_context", tool_call=call, state=state),
        )
        for call in calls
    ]


def create_react_agent(
    model: str | LanguageModelLike | DynamicModel,
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: Prompt | None = None,
    response_format: StructuredResponseSchema | tuple[str, StructuredResponseSchema] | None = None,
    pre_model_hook: Hook | None = None,
    post_model_hook: Hook | None = None,
    state_schema: StateSchemaType | None = None,
    context_schema: type[Any] | None = None,
    checkpointer: "BaseCheckpointSaver | bool | None" = None,
    store: "BaseStore | None" = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
    **deprecated_kwargs: Any,
) -> CompiledStateGraph:
    """A graph that calls `model` in a loop, running the tools it asks for, until it
    answers without tool calls.

    `model`: a chat model (its tools are bound here unless it comes with them bound), a
    "provider:model" string for `langchain.chat_models.init_chat_model`, or a function
    `(state, runtime) -> model` (sync or async) that picks the model on each call.
    `tools`: tools, functions, provider tool dicts, or a ready ToolNode.
    `prompt`: a system prompt (str or SystemMessage), or a function or Runnable from the
    state to the model's input.
    `response_format`: a schema (or `(system prompt, schema)`) for a last model call
    with structured output, saved as `structured_response`.
    `pre_model_hook` / `post_model_hook`: nodes run before / after each model call; the
    pre hook may set `llm_input_messages` to give the model other messages than the
    state's.
    `version`: "v1" runs all tool calls of a reply in one tools task; "v2" gives each
    call a task of its own (with `Send`), so one call's interrupt does not hold the others;
    after a `post_model_hook`, calls always get a task each (LangGraph fails there in v1).
    """
    context_schema = renamed(
        "config_schema",
        deprecated_kwargs.pop("config_schema", None),
        "context_schema",
        context_schema,
        LangGraphDeprecatedSinceV10,
    )
    if deprecated_kwargs:
        raise TypeError(
            f"create_react_agent() got unexpected keyword arguments: {deprecated_kwargs}"
        )
    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    if state_schema is None:
        state_schema = (
            AgentStateWithStructuredResponse if response_format is not None else AgentState
        )
    else:
        _check_state_schema(state_schema, response_format is not None)

    builtin_tools: list[dict[str, Any]] = []
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        builtin_tools = [t for t in tools if isinstance(t, dict)]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    tool_classes = list(tool_node.tools_by_name.values())

    dynamic = None
    static = None
    if not isinstance(model, str | Runnable) and callable(model):
        dynamic = model
    else:
        if isinstance(model, str):
            model = _init_chat_model(model)
        # Checked even without tools: a model bound to tools the agent lacks is refused.
        if _should_bind_tools(model, tool_classes, num_builtin=len(builtin_tools)) and (
            tool_classes or builtin_tools
        ):
            model = cast(BaseChatModel, model).bind_tools([*tool_classes, *builtin_tools])
        static = _get_prompt_runnable(prompt) | model

    model_call = _ModelCall(
        static=static,
        dynamic=dynamic,
        prompt=prompt,
        name=name,
        return_direct={t.name for t in tool_classes if t.return_direct},
        reads_llm_input=pre_model_hook is not None,
        response_format=response_format,
    )
    workflow = StateGraph(state_schema=state_schema, context_schema=context_schema)
    if response_format is not None:
        # `structured_response` is typed loosely, so the state's schema names no class
        # of the answer: name it here, or a saver would refuse to store the answer.
        schema = response_format[1] if isinstance(response_format, tuple) else response_format
        if isinstance(schema, type):  # a JSON schema dict answers with a plain dict
            workflow._held_types.append(schema)
    workflow.add_node(
        "agent",
        RunnableCallable(model_call.call_model, model_call.acall_model),
        input_schema=state_schema if pre_model_hook is None else _llm_input_schema(state_schema),
    )
    if tool_classes:
        workflow.add_node("tools", tool_node)
    entrypoint = "agent"
    if pre_model_hook is not None:
        workflow.add_node("pre_model_hook", pre_model_hook)
        workflow.add_edge("pre_model_hook", "agent")
        entrypoint = "pre_model_hook"
    workflow.set_entry_point(entrypoint)
    if post_model_hook is not None:
        workflow.add_node("post_model_hook", post_model_hook)
        workflow.add_edge("agent", "post_model_hook")
    if response_format is not None:
        workflow.add_node(
            "generate_structured_response",
            RunnableCallable(
                model_call.generate_structured_response,
                model_call.agenerate_structured_response,
            ),
        )

    if tool_classes:
        _add_tool_routes(
            workflow,
            entrypoint=entrypoint,
            version=version,
            has_post_hook=post_model_hook is not None,
            has_response_format=response_format is not None,
            return_direct=model_call.return_direct,
        )
    elif response_format is not None:
        last = "post_model_hook" if post_model_hook is not None else "agent"
        workflow.add_edge(last, "generate_structured_response")

    return workflow.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        name=name,
    )


def _init_chat_model(model: str) -> BaseChatModel:
    try:
        from langchain.chat_models import init_chat_model  # type: ignore[import-not-found]
    except ImportError:
        raise ImportError(
            "Please install langchain (`pip install langchain`) to use "
            "'<provider>:<model>' string syntax for `model` parameter."
        ) from None
    return cast(BaseChatModel, init_chat_model(model))


def _add_tool_routes(
    workflow: StateGraph,
    *,
    entrypoint: str,
    version: Literal["v1", "v2"],
    has_post_hook: bool,
    has_response_format: bool,
    return_direct: set[str],
) -> None:
    """The routes of the loop: model -> (post hook ->) tools -> (pre hook ->) model, and
    out of it when the model stops asking for tools (or a return-direct tool ran)."""
    finish = "generate_structured_response" if has_response_format else END

    def should_continue(state: Any) -> str | list[Send]:
        last = _state_value(state, "messages")[-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return finish
        return "tools" if version == "v1" else _tool_sends(last.tool_calls, state)

    def post_model_hook_router(state: Any) -> str | list[Send]:
        # The hook may have answered some calls itself (or dropped the reply): send what
        # is left to the tools (one task per call, whatever the version), else go back
        # to the model after tool results, else finish.
        messages = _state_value(state, "messages")
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        last_ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
        pending = [call for call in last_ai.tool_calls if call["id"] not in answered]
        if pending:
            return _tool_sends(pending, state)
        if isinstance(messages[-1], ToolMessage):
            return entrypoint
        return finish

    def route_tool_responses(state: Any) -> str:
        # End when a return-direct tool answered this turn, in this task or, for
        # parallel v2 calls, in another one.
        for message in reversed(_state_value(state, "messages")):
            if not isinstance(message, ToolMessage):
                break
            if message.name in return_direct:
                return END
        if isinstance(message, AIMessage) and any(
            call["name"] in return_direct for call in message.tool_calls
        ):
            return END
        return entrypoint

    if has_post_hook:
        # The model always goes on to the post hook (a plain edge): the hook routes.
        workflow.add_conditional_edges(
            "post_model_hook", post_model_hook_router, path_map=[entrypoint, "tools", finish]
        )
    else:
        workflow.add_conditional_edges("agent", should_continue, path_map=["tools", finish])
    if return_direct:
        workflow.add_conditional_edges("tools", route_tool_responses, path_map=[entrypoint, END])
    else:
        workflow.add_edge("tools", entrypoint)


create_tool_calling_executor = create_react_agent
"""The agent's older name."""
