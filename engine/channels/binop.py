"""BinaryOperatorAggregate: a key whose writes are folded into it by a reducer."""

from __future__ import annotations

import collections.abc
import inspect
from collections.abc import Callable, Sequence
from typing import Any, get_origin

from engine.channels.base import MISSING, Channel
from engine.errors import ErrorCode, InvalidUpdateError, create_error_message
from engine.types import Overwrite

# Abstract collection annotations start as their concrete counterpart.
_CONCRETE: dict[Any, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


def initial_value(typ: Any) -> Any:
    """An empty value of `typ` (`[]` for a list, `0` for an int), or MISSING."""
    typ = get_origin(typ) or typ
    typ = _CONCRETE.get(typ, typ)
    if not isinstance(typ, type) or typ.__module__ == "typing":
        return MISSING
    try:
        return typ()
    except Exception:
        return MISSING


def check_reducer(reducer: Callable[..., Any]) -> None:
    """Refuse a reducer that does not take (current, update) before any node runs, as
    LangGraph does: exactly two positional parameters, counting defaulted ones (a third
    optional one would be a reducer the graph never fills) and none for `*args`."""
    try:
        sig = inspect.signature(reducer)
    except (TypeError, ValueError):
        # A builtin without a readable signature (`max`): LangGraph's build fails on the
        # lookup; we let it run, as it may well take two arguments.
        return
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) != 2:
        raise ValueError(f"Invalid reducer signature. Expected (a, b) -> c. Got {sig}")


class BinaryOperatorAggregate(Channel):
    __slots__ = ("reducer",)

    def __init__(self, typ: Any, operator: Callable[[Any, Any], Any], *, key: str = "") -> None:
        super().__init__(typ, key)
        self.reducer = operator
        self.value = self.empty_value()

    def empty_value(self) -> Any:
        return initial_value(self.typ)

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        start = 0
        if self.value is MISSING:
            self.value = _overwrite_of(values[0], values[0])
            start = 1
        reducer = self.reducer
        overwritten = False
        for value in values[start:]:
            replacement = _overwrite_of(value, MISSING)
            if replacement is not MISSING:
                if overwritten:
                    raise InvalidUpdateError(
                        create_error_message(
                            message="Can receive only one Overwrite value per super-step.",
                            error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                        )
                    )
                self.value = replacement
                overwritten = True
            elif not overwritten:
                self.value = reducer(self.value, value)
        return True


def _overwrite_of(value: Any, default: Any) -> Any:
    """The value an `Overwrite` write replaces the key with (also in the dict forms it
    takes once it crossed JSON: `{"__overwrite__": v}` or `{"type": "__overwrite__",
    "value": v}`), else `default`."""
    if isinstance(value, Overwrite):
        return value.value
    if type(value) is dict:
        if len(value) == 1 and "__overwrite__" in value:
            return value["__overwrite__"]
        if len(value) == 2 and value.get("type") == "__overwrite__" and "value" in value:
            return value["value"]
    return default
