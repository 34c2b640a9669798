"""How LangChain messages are stored: their fields less the ones at their default, and
rebuilt from the message type alone (never from a class path in the stored bytes)."""

from __future__ import annotations

from typing import Any

from langchain_core import messages as lc
from pydantic_core import PydanticUndefined

__all__ = ["MESSAGE_CLASSES", "is_message_class", "message_class", "stored_fields"]

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
    """The class that rebuilds stored `fields` (with their "type"), None if unknown."""
    cls = MESSAGE_CLASSES.get(fields.get("type"))  # type: ignore[arg-type]
    if cls is None or not _KNOWN[cls].issuperset(fields):
        return cls if cls is not None and cls.model_config.get("extra") == "allow" else None
    return cls


def from_fields(fields: dict[str, Any]) -> lc.BaseMessage:
    """Rebuild a stored message; a dict the caller owns (fresh from a parse)."""
    cls = MESSAGE_CLASSES.get(fields.get("type"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"Unknown stored message type {fields.get('type')!r}")
    return cls(**fields)
