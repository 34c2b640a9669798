"""LastValue: a plain state key, one writer per step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.channels.base import Channel
from engine.errors import InvalidUpdateError


class LastValue(Channel):
    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) != 1:
            raise InvalidUpdateError(
                f"At key '{self.key}': can receive only one value per step, got {len(values)}. "
                f"Several nodes wrote '{self.key}' in the same step: give the key a reducer "
                f"(Annotated[T, reducer]) so the writes can be combined."
            )
        self.value = values[-1]
        return True
