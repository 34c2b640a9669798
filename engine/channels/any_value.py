"""AnyValue: the last value written, where several writers in one step are known to agree
(so any one of them will do); a step that writes nothing empties it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.channels.base import MISSING, Channel


class AnyValue(Channel):
    __slots__ = ()
    fades = True

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            if self.value is MISSING:
                return False
            self.value = MISSING
            return True
        self.value = values[-1]
        return True
