"""Graph values as JSON for the wire: messages in LangChain's shape, interrupts as
{"value", "id"}, and nothing that a client could not have sent."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import uuid
from decimal import Decimal
from typing import Any

from engine.graph.messages import BaseMessage, message_to_dict
from engine.types import Interrupt, Send


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, BaseMessage):
        return jsonable(message_to_dict(value))
    if isinstance(value, Interrupt):
        return {"value": jsonable(value.value), "id": value.id}
    if isinstance(value, Send):
        return {"node": value.node, "arg": jsonable(value.arg)}
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    return repr(value)
