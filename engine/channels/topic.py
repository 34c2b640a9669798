"""Topic: many writes per step kept as a list (the Send packets of the next step)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.channels.base import MISSING, Channel


class Topic(Channel):
    __slots__ = ("accumulate",)
    fades = True

    def __init__(self, typ: Any = None, accumulate: bool = False, *, key: str = "") -> None:
        super().__init__(typ, key)
        self.accumulate = accumulate

    @property
    def ValueType(self) -> Any:  # noqa: N802 (LangGraph's name)
        return Sequence[Any if self.typ is None else self.typ]  # type: ignore[index]

    @property
    def UpdateType(self) -> Any:  # noqa: N802 (LangGraph's name)
        item = Any if self.typ is None else self.typ
        return item | list[item]  # type: ignore[valid-type]

    def update(self, values: Sequence[Any]) -> bool:
        old = self.value if self.value is not MISSING else []
        kept = old if self.accumulate else []
        flat: list[Any] = []
        for value in values:
            if isinstance(value, list):
                flat.extend(value)
            else:
                flat.append(value)
        new = [*kept, *flat]
        self.value = new if new else MISSING
        return bool(flat) or (bool(old) and not self.accumulate)
