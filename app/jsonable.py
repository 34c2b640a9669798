"""Graph values as JSON for the wire: messages in LangChain's shape, interrupts as
{"value", "id"}, and nothing that a client could not have sent."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import uuid
from decimal import Decimal
from typing import Any

from langchain_core.messages import BaseMessage

from engine.types import Interrupt, Send


def jsonable(value: Any) -> Any:
    """`value` as plain JSON types (dict keys as strings)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return jsonable(_plain(value))


def to_json(value: Any) -> str:
    """`value` as compact JSON text, like `json.dumps(jsonable(value))`. The C encoder
    walks the containers and calls back only for other objects: a stream event (a
    token's metadata, a state of many messages) costs no Python walk of its own."""
    try:
        return _encode_objects(value)
    except TypeError:  # a dict key that is not a string or a number
        return _encode(jsonable(value))


def answer_json(value: Any) -> str:
    """`value` as the JSON text of an answer (a run's result): `to_json`, except that a
    NaN or an infinity is refused, as a JSON response refuses it. A run's answer is the
    thread's whole state, so the Python walk of `jsonable` was most of a long chat's
    turn; the C encoder calls back only for the messages."""
    try:
        return _encode_answer(value)
    except TypeError:  # a dict key that is not a string or a number
        return _encode_strict(jsonable(value))


def as_dict(value: Any) -> dict[str, Any]:
    """A state's values as a dict to add keys to: as they are, or (a pydantic or
    dataclass state) as JSON types; {} for None or values that are no mapping."""
    if not isinstance(value, dict):
        value = jsonable(value)
    return value if isinstance(value, dict) else {}


def _plain(value: Any) -> Any:
    """One object that is not a JSON type, as something nearer to one."""
    if isinstance(value, BaseMessage):
        return value.model_dump()
    if isinstance(value, Interrupt):
        return {"value": value.value, "id": value.id}
    if isinstance(value, Send):
        return {"node": value.node, "arg": value.arg}
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    return repr(value)


# Built once: json.dumps with options builds an encoder on every call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_encode_objects = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_plain).encode
_encode_strict = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_encode_answer = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_plain
).encode
