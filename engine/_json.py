"""What orjson is told of a program's values it does not write itself (it writes dates,
UUIDs, enums, dataclasses and tuples): a pydantic model (a LangChain message) as its
JSON form, a set as a list; anything else is a TypeError naming its type."""

from __future__ import annotations

from typing import Any


def plain_json(value: Any) -> Any:
    """orjson's `default=`."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} cannot be written as JSON")
