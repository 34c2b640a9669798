"""LastValue: a plain state key, one writer per step; LastValueAfterFinish: one that shows
its value only once the run would end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.channels.base import MISSING, Channel
from engine.errors import ErrorCode, InvalidUpdateError, create_error_message


class LastValue(Channel):
    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) != 1:
            # LangGraph's wording and troubleshooting link: callers match on them.
            raise InvalidUpdateError(
                create_error_message(
                    message=f"At key '{self.key}': Can receive only one value per step. "
                    "Use an Annotated key to handle multiple values.",
                    error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                )
            )
        self.value = values[-1]
        return True


class LastValueAfterFinish(Channel):
    """The last value written, shown only once the run would end (`finish()`), and gone
    when the node it woke takes it: how LangGraph's low-level graphs defer a node."""

    __slots__ = ("held",)

    def __init__(self, typ: Any = None, key: str = "") -> None:
        super().__init__(typ, key)
        self.held: Any = MISSING

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        self.held, self.value = values[-1], MISSING
        return True

    def finish(self) -> bool:
        if self.held is MISSING or self.value is not MISSING:
            return False
        self.value = self.held
        return True

    def consume(self) -> bool:
        if self.value is MISSING:
            return False
        self.held = self.value = MISSING
        return True

    def checkpoint(self) -> Any:
        return MISSING if self.held is MISSING else (self.held, self.value is not MISSING)

    def restore(self, value: Any) -> None:
        self.held, finished = value
        self.value = self.held if finished else MISSING
