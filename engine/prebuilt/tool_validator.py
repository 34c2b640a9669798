"""ValidationNode: checks a model's tool calls against their schemas without running
any tool, for graphs that only want well-formed structured output from the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_executor_for_config
from langchain_core.tools import BaseTool, create_schema_from_function
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel, ValidationError
from pydantic.v1 import BaseModel as BaseModelV1
from pydantic.v1 import ValidationError as ValidationErrorV1

from engine.pregel.runnable import RunnableCallable

__all__ = ["ValidationNode"]

Schema = type[BaseModel] | type[BaseModelV1]


def _default_format_error(error: BaseException, call: ToolCall, schema: Schema) -> str:
    return f"{error!r}\n\nRespond after fixing all validation errors."


class ValidationNode(RunnableCallable):
    """Validates every tool call of the last AIMessage and answers each with a
    ToolMessage: the validated arguments as JSON, or the errors (marked with
    `additional_kwargs["is_error"]`) so that the model can retry.

    Schemas are pydantic models (v2 or v1), tools with a pydantic `args_schema`, or
    functions (their signature is the schema); a call is matched by the schema's name.
    """

    def __init__(
        self,
        schemas: Sequence[BaseTool | type[BaseModel] | Callable[..., Any]],
        *,
        format_error: Callable[[BaseException, ToolCall, type[BaseModel]], str] | None = None,
        name: str = "validation",
        tags: list[str] | None = None,
    ) -> None:
        super().__init__(self._func, None, name=name, tags=tags, trace=False)
        self._format_error = format_error or _default_format_error
        self.schemas_by_name: dict[str, Schema] = {}
        for schema in schemas:
            name_, model = _named_schema(schema)
            self.schemas_by_name[name_] = model

    def _func(self, input: list[AnyMessage] | dict[str, Any], config: RunnableConfig) -> Any:
        kind, message = _last_ai_message(input)
        with get_executor_for_config(config) as executor:
            outputs = list(executor.map(self._validate, message.tool_calls))
        return outputs if kind == "list" else {"messages": outputs}

    def _validate(self, call: ToolCall) -> ToolMessage:
        schema = self.schemas_by_name[call["name"]]
        try:
            if issubclass(schema, BaseModel):
                content = schema.model_validate(call["args"]).model_dump_json()
            else:
                content = schema.validate(call["args"]).json()
        except (ValidationError, ValidationErrorV1) as e:
            return ToolMessage(
                content=self._format_error(e, call, schema),
                name=call["name"],
                tool_call_id=str(call["id"]),
                additional_kwargs={"is_error": True},
            )
        return ToolMessage(content=content, name=call["name"], tool_call_id=str(call["id"]))


def _named_schema(schema: Any) -> tuple[str, Schema]:
    if isinstance(schema, BaseTool):
        args_schema = schema.args_schema
        if args_schema is None:
            raise ValueError(f"Tool {schema.name} does not have an args_schema defined.")
        if not isinstance(args_schema, type) or not is_basemodel_subclass(args_schema):
            raise ValueError(
                "Validation node only works with tools that have a pydantic BaseModel "
                f"args_schema. Got {schema.name} with args_schema: {args_schema}."
            )
        return schema.name, args_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel | BaseModelV1):
        return schema.__name__, schema
    if callable(schema):
        return schema.__name__, create_schema_from_function("Validation", schema)
    raise ValueError(
        "Unsupported input to ValidationNode. Expected BaseModel, tool or function. "
        f"Got: {type(schema)}."
    )


def _last_ai_message(
    input: list[AnyMessage] | dict[str, Any],
) -> tuple[Literal["list", "dict"], AIMessage]:
    if isinstance(input, list):
        kind: Literal["list", "dict"] = "list"
        messages = input
    else:
        kind, messages = "dict", input.get("messages", [])
    if not messages:
        raise ValueError("No message found in input")
    message = messages[-1]
    if not isinstance(message, AIMessage):
        raise ValueError("Last message is not an AIMessage")
    return kind, message
