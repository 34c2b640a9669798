"""Messages in state: LangChain's message objects and the `add_messages` reducer.

State holds `langchain_core` messages, exactly as in LangGraph, so that chat models,
tools and callbacks take what a node reads from state without conversion.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import attrgetter
from typing import Annotated, Any, Literal, cast

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
from typing_extensions import TypedDict

from engine.channels.base import Channel
from engine.channels.binop import _overwrite_of
from engine.channels.delta import DeltaChannel
from engine.pregel.context import push_message
from engine.types import Overwrite

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
        # LangGraph's words; the side it says it received is 'left' only when left is
        # non-empty (an empty list on the left with None on the right names 'right').
        received = "left" if left else "right"
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. "
            f"Only received: '{received}'."
        )
    left_msgs = _as_messages(left)
    right_msgs = _as_messages(right)
    if all(m.id is None for m in right_msgs) and len(set(map(id, right_msgs))) == len(right_msgs):
        # Each gets a new id, which no message has: they are appended, without indexing
        # the whole conversation by id (a user's turn, a reply made without an id).
        if None in map(_id, left_msgs):
            _give_ids(left_msgs)
        _give_ids(right_msgs)
        merged = [*left_msgs, *right_msgs]
        return _openai_format(merged) if format == "langchain-openai" else merged
    index = dict(zip(map(_id, left_msgs), range(len(left_msgs)), strict=True))
    if None in index:
        _give_ids(left_msgs)
        index = dict(zip(map(_id, left_msgs), range(len(left_msgs)), strict=True))
    _give_ids(right_msgs)
    remove_all_at = None
    for i, m in enumerate(right_msgs):
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


def _give_ids(messages: list[BaseMessage]) -> None:
    """As in LangGraph, a message without an id is given one in place."""
    for m in messages:
        if m.id is None:
            m.id = str(uuid.uuid4())


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


# Ready-made state: one `messages` list reduced with `add_messages`. No docstring, as
# LangGraph's has none: a graph's JSON schemas show a state class's docstring as their
# `description`.
class MessagesState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _messages_delta_reducer(state: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """The batch reducer for `Annotated[list[AnyMessage], DeltaChannel(...)]` (experimental
    in LangGraph 1.2, and named as there).

    One pass over a step's writes (a list of messages or one message each): a new id
    appends, a known id replaces, `RemoveMessage` drops its id (an unknown one is
    ignored) and `RemoveMessage(REMOVE_ALL_MESSAGES)` drops what came before. Folding
    writes in one batch or several gives the same list. Unlike `add_messages` it gives
    no ids (the loop gives them when the messages are written) and keeps chunks.
    """
    items: list[Any] = []
    for write in writes:
        if isinstance(write, list):
            items.extend(write)
        else:
            items.append(write)
    current: list[BaseMessage] = (
        state if state and isinstance(state[0], BaseMessage) else convert_to_messages(state)
    )
    new = convert_to_messages(items)
    for i in range(len(new) - 1, -1, -1):
        if isinstance(new[i], RemoveMessage) and new[i].id == REMOVE_ALL_MESSAGES:
            current, new = [], new[i + 1 :]
            break
    merged: list[BaseMessage | None] = list(current)
    where = {m.id: i for i, m in enumerate(current) if m.id is not None}
    for m in new:
        pos = where.get(m.id) if m.id is not None else None
        if isinstance(m, RemoveMessage) and m.id is not None:
            if pos is not None:
                merged[pos] = None
                del where[m.id]
        elif pos is not None:
            merged[pos] = m
        else:
            if m.id is not None:
                where[m.id] = len(merged)
            merged.append(m)
    return [m for m in merged if m is not None]


def with_message_ids(
    channels: Mapping[str, Channel], writes: list[tuple[str, Any]]
) -> list[tuple[str, Any]]:
    """The writes, with every message written to a DeltaChannel given an id, as LangGraph
    gives them when a task's writes are saved: `_messages_delta_reducer` assigns none,
    and an id is what a later edit or `RemoveMessage` names.

    In a channel of that reducer, whatever becomes a message (a dict, a string, a
    `(role, content)` tuple) is turned into one; in other DeltaChannels only message
    objects and message dicts are given ids. Lists and dicts passed in are never changed.
    """
    out = writes
    for i, (key, value) in enumerate(writes):
        channel = channels.get(key)
        if not isinstance(channel, DeltaChannel):
            continue
        messages_only = channel.reducer is _messages_delta_reducer
        new = _ids_in_write(value, messages_only)
        if new is not value:
            if out is writes:
                out = list(writes)
            out[i] = (key, new)
    return out


def _ids_in_write(value: Any, messages_only: bool) -> Any:
    replacement = _overwrite_of(value, _NOT_OVERWRITE)
    if replacement is not _NOT_OVERWRITE:
        if not isinstance(replacement, list | tuple):
            return value
        if messages_only:
            items = _each(replacement, _as_message_with_id)
            return value if items is replacement else Overwrite(items)
        for item in replacement:
            _give_id(item)
        return value
    if messages_only:
        if isinstance(value, list):
            return _each(value, _list_item_as_message)
        return _as_message_with_id(value)
    if isinstance(value, list):
        return _each(value, _list_item_with_id)
    if isinstance(value, dict) and _is_message_dict(value) and not value.get("id"):
        return {**value, "id": str(uuid.uuid4())}
    _give_id(value)
    return value


_NOT_OVERWRITE = object()
_ROLES = frozenset({"user", "human", "assistant", "ai", "tool", "system", "function"})
_TYPES = frozenset({"human", "ai", "tool", "system", "function", "remove"})


def _is_message_dict(item: dict[str, Any]) -> bool:
    return item.get("role") in _ROLES or item.get("type") in _TYPES


def _each(items: Sequence[Any], fn: Callable[[Any], Any]) -> Any:
    """`items` mapped by `fn`, or `items` itself when nothing changed."""
    mapped = [fn(item) for item in items]
    if all(new is old for new, old in zip(mapped, items, strict=True)):
        return items
    return mapped if isinstance(items, list) else tuple(mapped)


def _give_id(item: Any) -> None:
    if isinstance(item, BaseMessage) and item.id is None:
        item.id = str(uuid.uuid4())


def _as_message_with_id(item: Any, *, strict: bool = False) -> Any:
    """A message object, with an id; what cannot become one is left as it is (or, when
    `strict`, raises here)."""
    if isinstance(item, BaseMessage):
        _give_id(item)
        return item
    try:
        message = convert_to_messages([item])[0]
    except Exception:
        if strict:
            raise
        return item
    if not message.id:
        message.id = str(uuid.uuid4())
    return message


def _list_item_as_message(item: Any) -> Any:
    strict = isinstance(item, dict) and _is_message_dict(item)
    return _as_message_with_id(item, strict=strict)


def _list_item_with_id(item: Any) -> Any:
    if isinstance(item, dict) and _is_message_dict(item):
        return _as_message_with_id(item, strict=True)
    _give_id(item)
    return item


def __getattr__(name: str) -> Any:
    # LangGraph keeps MessageGraph here; it is a StateGraph, whose module imports this one.
    if name == "MessageGraph":
        from engine.graph.message_graph import MessageGraph

        return MessageGraph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
