"""How LangChain messages are stored: their fields less the ones at their default, and
rebuilt from the message type alone (never from a class path in the stored bytes)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec
from langchain_core import messages as lc
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = [
    "Blueprint",
    "blueprint",
    "MESSAGE_CLASSES",
    "SCALARS",
    "from_fields",
    "is_message_class",
    "message_class",
    "rebuild",
    "stored_fields",
]

MESSAGE_CLASSES: dict[str, type[lc.BaseMessage]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        lc.HumanMessage,
        lc.AIMessage,
        lc.SystemMessage,
        lc.ToolMessage,
        lc.ChatMessage,
        lc.FunctionMessage,
        lc.RemoveMessage,
        lc.AIMessageChunk,
        lc.HumanMessageChunk,
        lc.SystemMessageChunk,
        lc.ToolMessageChunk,
        lc.ChatMessageChunk,
        lc.FunctionMessageChunk,
    )
}
_CLASSES = frozenset(MESSAGE_CLASSES.values())


def _defaults(cls: type[lc.BaseMessage]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name == "type":
            continue
        if info.default is not PydanticUndefined:
            out[name] = info.default
        elif info.default_factory is not None:
            out[name] = info.default_factory()  # type: ignore[call-arg]
    return out


_DEFAULTS = {cls: _defaults(cls) for cls in _CLASSES}
_KNOWN = {cls: frozenset(cls.model_fields) for cls in _CLASSES}


def is_message_class(cls: type) -> bool:
    return cls in _CLASSES


def stored_fields(message: lc.BaseMessage) -> dict[str, Any]:
    """The message's fields in LangChain's dump order, less those at their default:
    most fields of a chat message are empty and would be a third of a short one.
    Nested values are shared, not copied."""
    defaults = _DEFAULTS[type(message)]
    out = {
        key: value
        for key, value in message.__dict__.items()
        if key not in defaults or value != defaults[key]
    }
    if message.__pydantic_extra__:
        out.update(message.__pydantic_extra__)
    return out


def message_class(fields: dict[str, Any]) -> type[lc.BaseMessage] | None:
    """The class of stored `fields` by their "type" (every message class takes extra
    fields, so any known type rebuilds); None if the type is unknown."""
    return MESSAGE_CLASSES.get(fields.get("type"))  # type: ignore[arg-type]


def from_fields(fields: dict[str, Any]) -> lc.BaseMessage:
    """Rebuild a stored message; a dict the caller owns (fresh from a parse)."""
    cls = message_class(fields)
    if cls is None:
        raise ValueError(f"Unknown stored message type {fields.get('type')!r}")
    return rebuild(cls, fields)


def _templates(cls: type[lc.BaseMessage]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Every field at its default, in the class's order, and the fields whose default
    is a new container each time (in the template, one empty container that a built
    message never gets: it is there to compare a message with)."""
    template: dict[str, Any] = {}
    fresh = []
    for name, info in cls.model_fields.items():
        if info.default_factory is not None:
            template[name] = _DEFAULTS[cls][name]
            fresh.append(name)
        else:
            template[name] = None if info.default is PydanticUndefined else info.default
    return template, tuple(fresh)


_TEMPLATES = {cls: _templates(cls) for cls in _CLASSES}
# The JSON scalars: values that hold no container.
SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list})
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_REQUIRED = {
    cls: frozenset(name for name, info in cls.model_fields.items() if info.is_required())
    for cls in _CLASSES
}
_TEXT = frozenset({str, type(None)})
_DICT = frozenset({dict, type(None)})
_ANY = frozenset({str, int, float, bool, list, dict, type(None)})
# The JSON types each stored field may have; anything else is rebuilt by validation.
_SHAPES = {
    "content": frozenset({str, list}),
    "type": frozenset({str}),
    "id": _TEXT,
    "name": _TEXT,
    "tool_call_id": frozenset({str}),
    "role": frozenset({str}),
    "status": _TEXT,
    "chunk_position": _TEXT,
    "additional_kwargs": _DICT,
    "response_metadata": _DICT,
    "usage_metadata": _DICT,
    "tool_calls": frozenset({list}),
    "invalid_tool_calls": frozenset({list}),
    "tool_call_chunks": frozenset({list}),
}


def rebuild(cls: type[lc.BaseMessage], fields: dict[str, Any]) -> lc.BaseMessage:
    """A stored message, rebuilt without validating it again when it has the shape a
    valid message of its class is stored in (reading a long chat rebuilds thousands, at a
    third of what validation costs); anything else goes through the constructor, which
    says what is wrong."""
    found = blueprint(cls, fields)
    return cls(**fields) if found is None else found.build()


def blueprint(
    cls: type[lc.BaseMessage], fields: dict[str, Any], *, kept: bool = False
) -> Blueprint | None:
    """Stored `fields` of a message of `cls` worked out to be built without validation;
    None when they have not the shape a valid message of its class is stored in. A
    blueprint `kept` to be built again and again holds the fields' plain JSON
    containers (tool calls, metadata; finite numbers only) as their JSON too: each
    build decodes its own."""
    types = tuple(map(type, fields.values()))
    shape = _shape(cls, tuple(fields), types)
    if shape is None:
        return None
    template, fresh, names = shape
    copies = ()
    if kept and not SCALARS.issuperset(types):
        copies = tuple(
            (name, _encode(value)) for name, value in fields.items() if type(value) in _CONTAINERS
        )
    return Blueprint(cls, {**template, **fields}, fresh, names, copies)


@functools.lru_cache(maxsize=4096)
def _shape(
    cls: type[lc.BaseMessage], names: tuple[str, ...], types: tuple[type, ...]
) -> tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], frozenset[str]] | None:
    """What the blueprints of a class's messages stored with the same fields (their
    names and the types of their values) share, worked out once for all of them: a
    chat's thousands of messages come in a few such shapes."""
    if cls is lc.RemoveMessage or not _KNOWN[cls].issuperset(names):
        return None
    if not _REQUIRED[cls].issubset(names):
        return None
    if not all(t in _SHAPES.get(name, _ANY) for name, t in zip(names, types, strict=True)):
        return None
    template, fresh = _TEMPLATES[cls]
    defaults = _DEFAULTS[cls]
    makers = tuple((name, defaults[name].copy) for name in fresh if name not in names)
    return template, makers, frozenset(names)


class Blueprint(NamedTuple):
    """A stored message (fields of the shape `blueprint` takes) worked out once, to be
    built again and again: every read of a thread gets messages of its own, and a long
    thread's read builds thousands."""

    cls: type[lc.BaseMessage]
    values: dict[str, Any]  # every field in the class's order, as a built message has them
    fresh: tuple[tuple[str, Callable[[], Any]], ...]  # fields at a new empty container
    names: frozenset[str]  # the fields given (pydantic's "fields set")
    copies: tuple[tuple[str, bytes], ...] = ()  # given fields holding containers, as JSON

    def build(self) -> lc.BaseMessage:
        # A copy, not dict(): a dict of scalars stays out of the garbage collector's sight.
        values = self.values.copy()
        for name, make in self.fresh:
            values[name] = make()
        for name, data in self.copies:
            values[name] = _decode(data)
        message = object.__new__(self.cls)
        _set_dict(message, values)
        _set_fields_set(message, set(self.names))
        _set_extra(message, {})
        _set_private(message, None)
        return message


# Pydantic keeps a model's state in these four slots; setting them directly is what
# building a model without validation amounts to.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
