"""NamedBarrierValue: a join that opens when every named source has written;
NamedBarrierValueAfterFinish: one that opens only once the run would end as well."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine.channels.base import Channel
from engine.errors import EmptyChannelError, InvalidUpdateError


class NamedBarrierValue(Channel):
    __slots__ = ("names",)

    def __init__(self, typ: Any, names: Iterable[str], *, key: str = "") -> None:
        super().__init__(typ, key)
        self.names = frozenset(names)
        self.value = self.empty_value()

    def get(self) -> Any:
        if self.value != self.names:
            raise EmptyChannelError(self.key)
        return None

    def is_available(self) -> bool:
        return self.value == self.names

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        unknown = [v for v in values if v not in self.names]
        if unknown:
            raise InvalidUpdateError(f"At key '{self.key}': {unknown[0]!r} is not a join source.")
        seen = self.value | frozenset(values)
        changed = seen != self.value
        self.value = seen
        return changed

    def consume(self) -> bool:
        if self.value == self.names:
            self.value = frozenset()
            return True
        return False

    def checkpoint(self) -> Any:
        return sorted(self.value)

    def restore(self, value: Any) -> None:
        self.value = frozenset(value)

    def empty_value(self) -> Any:
        return frozenset()


class NamedBarrierValueAfterFinish(NamedBarrierValue):
    """A join that opens once every named source has written and the run would end
    (`finish()`): how LangGraph's low-level graphs defer a node that waits on several."""

    __slots__ = ("finished",)

    def __init__(self, typ: Any, names: Iterable[str], *, key: str = "") -> None:
        super().__init__(typ, names, key=key)
        self.finished = False

    def get(self) -> Any:
        if not self.finished:
            raise EmptyChannelError(self.key)
        return super().get()

    def is_available(self) -> bool:
        return self.finished and super().is_available()

    def finish(self) -> bool:
        if self.finished or self.value != self.names:
            return False
        self.finished = True
        return True

    def consume(self) -> bool:
        if not self.finished:
            return False
        self.finished = False
        return super().consume()

    def checkpoint(self) -> Any:
        return (sorted(self.value), self.finished)

    def restore(self, value: Any) -> None:
        seen, self.finished = value
        self.value = frozenset(seen)
