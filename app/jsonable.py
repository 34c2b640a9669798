"""Graph values as JSON for the wire: messages in LangChain's shape, interrupts as
{"value", "id"}, NaN and infinities as null (as LangGraph's server writes them: JSON has
no such numbers, and a client's parser refuses them), and nothing that a client could not
have sent."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import math
import pathlib
import re
import uuid
import zoneinfo
from collections import deque
from decimal import Decimal
from typing import Any

import orjson
from langchain_core.messages import BaseMessage

from engine.checkpoint.messages import is_message_class
from engine.types import Interrupt, Send


def jsonable(value: Any) -> Any:
    """`value` as plain JSON types (dict keys as strings)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return jsonable(_plain(value))


def to_json(value: Any) -> str:
    """`value` as compact JSON text, like `json.dumps(jsonable(value))`. orjson walks the
    containers in C and calls back only for other objects: a stream event or a run's
    answer (a state of thousands of messages) costs no Python walk of its own, and a
    message of LangChain's own classes is its fields as they are."""
    text = _in_c(value)
    return _encoded(jsonable(value)) if text is None else text


def json_and_text(value: Any) -> tuple[Any, str]:
    """`value` as plain JSON types and as JSON text, made in C (`to_json`, then read
    back), unless it holds what orjson cannot write (an int beyond 64 bits), which it
    would also read back as a float: then made in Python, exactly."""
    text = _in_c(value)
    if text is None:
        plain = jsonable(value)
        return plain, _encoded(plain)
    return orjson.loads(text), text


def _in_c(value: Any) -> str | None:
    """`value` as JSON text by orjson; None for what it cannot write (a key it cannot,
    an int beyond 64 bits, a lone surrogate)."""
    try:
        return _dumps(value, default=_plain, option=_OPTIONS).decode()
    except TypeError:
        return None


def with_keys(values: Any, keys: dict[str, Any]) -> Any:
    """A run's answer: its state's values with `keys` (its interrupts) added, as
    LangGraph's last `values` event shows them; a pydantic or dataclass state as JSON
    types. Values that are no mapping (an entrypoint's text, number or list) are the
    answer as they are, or, with keys to add, the keys alone (that event is theirs)."""
    plain = values if isinstance(values, dict) else jsonable(values)
    if plain is None:
        return dict(keys)
    if isinstance(plain, dict):
        return {**plain, **keys}
    return dict(keys) if keys else plain


def _plain(value: Any) -> Any:
    """One object that is not a JSON type, as something nearer to one."""
    if isinstance(value, float):  # a subclass, which orjson leaves to us
        return float(value)
    if is_message_class(type(value)):
        # LangChain's own classes: `model_dump` gives the fields as kept (extra fields
        # last), at ten times the cost.
        extra = value.__pydantic_extra__
        return {**value.__dict__, **extra} if extra else value.__dict__
    if isinstance(value, BaseMessage):
        return value.model_dump()
    if isinstance(value, Interrupt):
        return {"value": value.value, "id": value.id, "response_schema": value.response_schema}
    if isinstance(value, Send):
        return {"node": value.node, "arg": value.arg}
    if isinstance(value, set | frozenset | deque):
        return list(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, datetime.timezone):
        return value.tzname(None)
    if isinstance(value, _AS_TEXT) or type(value).__module__ == "ipaddress":
        return str(value)
    if isinstance(value, re.Pattern):
        return value.pattern
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


# Values LangGraph's server writes as their text: a path, a time zone's key (and an IP
# address, interface or network: `_plain`).
_AS_TEXT = (pathlib.PurePath, zoneinfo.ZoneInfo)
# Built once: json.dumps with options builds an encoder on every call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_encode_ascii = json.JSONEncoder(separators=(",", ":")).encode


def _encoded(plain: Any) -> str:
    """JSON text of plain values, in Python. A lone surrogate (which a graph's code may
    make) cannot be written as UTF-8, which every response and stream is: such text is
    written with escapes (`\\ud800`), as JSON allows."""
    text = _encode(plain)
    try:
        text.encode()
    except UnicodeEncodeError:
        return _encode_ascii(plain)
    return text


_dumps = orjson.dumps
# What orjson writes its own way, written as `jsonable` writes it; NumPy's numbers and
# arrays as numbers and lists, as LangGraph's server writes them.
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_SERIALIZE_NUMPY
)
