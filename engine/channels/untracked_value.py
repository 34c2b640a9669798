"""UntrackedValue: the last value written, kept for the rest of the run but never saved:
a checkpoint leaves it out, so a resumed or later run starts without it (a client, a
large object, anything not worth or not able to be stored)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.channels.base import MISSING, Channel
from engine.errors import InvalidUpdateError


class UntrackedValue(Channel):
    __slots__ = ("guard",)
    kept = False

    def __init__(self, typ: Any = None, guard: bool = True, *, key: str = "") -> None:
        super().__init__(typ, key)
        self.guard = guard

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) != 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{self.key}': UntrackedValue(guard=True) can receive only one value "
                f"per step, got {len(values)}; UntrackedValue(guard=False) keeps any one."
            )
        self.value = values[-1]
        return True

    def checkpoint(self) -> Any:
        return MISSING

    def restore(self, value: Any) -> None:
        """Nothing was saved; nothing is restored."""
