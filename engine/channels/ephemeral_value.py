"""EphemeralValue: a value seen by the step after it was written, then gone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.channels.base import MISSING, Channel
from engine.errors import InvalidUpdateError


class EphemeralValue(Channel):
    __slots__ = ("guard",)
    fades = True

    def __init__(self, typ: Any = None, guard: bool = True, *, key: str = "") -> None:
        # Channel.__init__'s two fields set here: every run makes one of these a node,
        # and the call to the base class was a third of the cost.
        self.key = key
        self.value = MISSING
        self.typ = typ
        self.guard = guard

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            if self.value is MISSING:
                return False
            self.value = MISSING
            return True
        if len(values) != 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{self.key}': EphemeralValue(guard=True) can receive only one value "
                "per step. Use guard=False if you want to store any one of multiple values."
            )
        self.value = values[-1]
        return True


class HeldValue(Channel):
    """The trigger of a deferred node: a value written stays, through steps that run
    other tasks first, until the node starts; then it is gone."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        self.value = values[-1]
        return True

    def consume(self) -> bool:
        if self.value is MISSING:
            return False
        self.value = MISSING
        return True
