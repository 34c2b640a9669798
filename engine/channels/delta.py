"""DeltaChannel: a key whose writes are folded by a reducer that takes a whole batch.

LangGraph 1.2 stores such a key as the writes that made it and rebuilds it by replaying
them. Our savers store its value like any other: the SQL saver already stores only the
new elements of a list (docs/storage.md), which is the saving LangGraph's design is for.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from engine._annotations import unwrapped
from engine.channels.base import MISSING, Channel
from engine.channels.binop import _overwrite_of, initial_value
from engine.errors import ErrorCode, InvalidUpdateError, create_error_message

__all__ = ("DeltaChannel",)

Reducer = Callable[[Any, Sequence[Any]], Any]


class DeltaChannel(Channel):
    """`reducer(state, [write, ...]) -> new state`, called once per step with all its
    writes. As in LangGraph the reducer must give the same state whether writes come in
    one batch or several, and `Overwrite` replaces the value.

    Used as `Annotated[list[AnyMessage], DeltaChannel(reducer)]`: the key's type comes
    from the annotation. `snapshot_frequency` is accepted for LangGraph programs; it
    changes nothing here, since the value itself is what is saved.
    """

    __slots__ = ("reducer", "snapshot_frequency")

    def __init__(
        self,
        reducer: Reducer,
        typ: Any = None,
        *,
        snapshot_frequency: int = 100,
    ) -> None:
        if snapshot_frequency <= 0:
            raise ValueError(
                f"snapshot_frequency must be a positive int, got {snapshot_frequency!r}"
            )
        super().__init__()
        self.reducer = reducer
        self.snapshot_frequency = snapshot_frequency
        self.value = _empty(list if typ is None else typ)
        self.typ: type = type(self.value)

    def bound(self, key: str, annotation: Any) -> DeltaChannel:
        """A fresh channel for the state key `key` declared as `annotation`."""
        new = DeltaChannel(
            self.reducer, _value_type(annotation), snapshot_frequency=self.snapshot_frequency
        )
        new.key = key
        return new

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        replacements = [r for r in (_overwrite_of(v, MISSING) for v in values) if r is not MISSING]
        if len(replacements) > 1:
            raise InvalidUpdateError(
                create_error_message(
                    message="Can receive only one Overwrite value per super-step.",
                    error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                )
            )
        if replacements:
            # As in LangGraph, an Overwrite sets the value and the step's other writes
            # to the key are dropped.
            replacement = replacements[0]
            self.value = self.typ() if replacement is None else copy.copy(replacement)
            return True
        # A shallow copy: a reducer that extends its state in place must not change the
        # value a saved checkpoint still holds.
        self.value = self.reducer(copy.copy(self.value), list(values))
        return True

    def restore(self, value: Any) -> None:
        self.value = self.typ() if value is None else value

    def empty_value(self) -> Any:
        return self.typ()


def _value_type(annotation: Any) -> Any:
    """The class the value is an instance of: `list` for `list[AnyMessage]`."""
    return unwrapped(annotation)[0]


def _empty(typ: Any) -> Any:
    value = initial_value(typ)
    if value is MISSING:
        raise ValueError(
            f"DeltaChannel needs a value type it can start empty from (list, dict, set...); "
            f"got {typ!r}."
        )
    return value
