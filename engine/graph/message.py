"""Messages in state: LangChain's message objects and the `add_messages` reducer.

State holds `langchain_core` messages, exactly as in LangGraph, so that chat models,
tools and callbacks take what a node reads from state without conversion.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import partial
from operator import attrgetter
from typing import Annotated, Any, Literal, TypedDict, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    message_chunk_to_message,
)

from engine.pregel.context import push_message

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "MessagesState",
    "add_messages",
    "push_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""Id of a `RemoveMessage` that drops every message before it in the merged list."""

Messages = list[AnyMessage] | AnyMessage | Sequence[Any] | Any


# Classes taken as they are: whole (not chunk) messages of LangChain's own kinds.
_WHOLE = frozenset(
    {
        HumanMessage,
        AIMessage,
        ToolMessage,
        SystemMessage,
        RemoveMessage,
        ChatMessage,
        FunctionMessage,
    }
)
_id = attrgetter("id")


def _as_messages(value: Any) -> list[BaseMessage]:
    """One side of an update as non-chunk messages; a list of whole messages is kept
    (checked in one C-level pass: the left side is the whole conversation)."""
    items = value if type(value) is list else [value]
    if _WHOLE.issuperset(map(type, items)):
        return items
    for item in items:
        if not isinstance(item, BaseMessage) or isinstance(item, BaseMessageChunk):
            break
    else:
        return items
    return [message_chunk_to_message(cast(BaseMessageChunk, m)) for m in convert_to_messages(items)]


def _add_messages(left: Messages, right: Messages, format: str | None = None) -> Messages:
    if left is None or right is None:
        which = "left" if left is None else "right"
        raise ValueError(f"add_messages needs both 'left' and 'right'; '{which}' is None.")
    left_msgs = _as_messages(left)
    right_msgs = _as_messages(right)
    index = dict(zip(map(_id, left_msgs), range(len(left_msgs)), strict=True))
    if None in index:
        # As in LangGraph, a message without an id is given one in place.
        for m in left_msgs:
            if m.id is None:
                m.id = str(uuid.uuid4())
        index = dict(zip(map(_id, left_msgs), range(len(left_msgs)), strict=True))
    remove_all_at = None
    for i, m in enumerate(right_msgs):
        if m.id is None:
            m.id = str(uuid.uuid4())
        if m.id == REMOVE_ALL_MESSAGES and isinstance(m, RemoveMessage):
            remove_all_at = i
    if remove_all_at is not None:
        return right_msgs[remove_all_at + 1 :]

    merged = list(left_msgs)
    removed: set[str] = set()
    for m in right_msgs:
        pos = index.get(m.id)
        if pos is None:
            if isinstance(m, RemoveMessage):
                raise ValueError(
                    f"Attempting to delete a message with an ID that doesn't exist ('{m.id}')"
                )
            index[m.id] = len(merged)
            merged.append(m)
        elif isinstance(m, RemoveMessage):
            removed.add(cast(str, m.id))
        else:
            removed.discard(cast(str, m.id))
            merged[pos] = m
    if removed:
        merged = [m for m in merged if m.id not in removed]
    if format == "langchain-openai":
        return _openai_format(merged)
    return merged


def _openai_format(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The messages as OpenAI would take them (content blocks, tool calls), rebuilt."""
    return convert_to_messages(convert_to_openai_messages(messages))


def add_messages(
    left: Messages | None = None,
    right: Messages | None = None,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> Any:
    """Merge a message update into a message list, as LangGraph's reducer does.

    New ids are appended, a known id replaces that message in place, `RemoveMessage(id)`
    deletes one (a `ValueError` when no message has it) and
    `RemoveMessage(REMOVE_ALL_MESSAGES)` drops everything before it. Dicts
    (`role`/`type`), `(role, content)` tuples and strings become messages; chunks become
    whole messages. Called with only `format=`, it returns the reducer with that format.
    """
    if format not in (None, "langchain-openai"):
        raise ValueError(
            f"Unrecognized format={format!r}; the one supported is 'langchain-openai'."
        )
    if left is None and right is None:
        return partial(_add_messages, format=format)
    return _add_messages(cast(Messages, left), cast(Messages, right), format)


class MessagesState(TypedDict):
    """Ready-made state: one `messages` list reduced with `add_messages`."""

    messages: Annotated[list[AnyMessage], add_messages]
