"""AnyValue: the last value written, where several writers in one step are known to agree
(so any one of them will do); a step that writes nothing empties it. That is an
ephemeral value that takes several writes."""

from __future__ import annotations

from typing import Any

from engine.channels.ephemeral_value import EphemeralValue


class AnyValue(EphemeralValue):
    __slots__ = ()

    def __init__(self, typ: Any = None, key: str = "") -> None:
        super().__init__(typ, guard=False, key=key)
