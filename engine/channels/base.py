"""A channel holds one piece of state and decides how a step's writes change it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from engine.errors import EmptyChannelError


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Channel:
    """The contract between the loop and every kind of channel.

    `update` takes all writes of one step at once, so a channel can refuse conflicting
    writes or fold them in a fixed order; it returns whether the value changed, which is
    what bumps the channel's version and so wakes the nodes that listen to it.
    """

    __slots__ = ("key", "value")

    # Whether a step that writes nothing to it may still change it (an ephemeral value
    # empties): the loop hands such channels, while they hold a value, each step's
    # empty update, and no other channel one.
    fades: ClassVar[bool] = False
    # Whether its value and the writes to it are saved (an untracked value's are not).
    kept: ClassVar[bool] = True

    def __init__(self, key: str = "") -> None:
        self.key = key
        self.value: Any = MISSING

    def get(self) -> Any:
        if self.value is MISSING:
            raise EmptyChannelError(self.key)
        return self.value

    def is_available(self) -> bool:
        return self.value is not MISSING

    def update(self, values: Sequence[Any]) -> bool:
        raise NotImplementedError

    def consume(self) -> bool:
        """Called when a task that this channel triggered starts; True if that changed it."""
        return False

    def checkpoint(self) -> Any:
        return self.value

    def restore(self, value: Any) -> None:
        self.value = value

    def copy(self) -> Channel:
        new = object.__new__(type(self))
        for cls in type(self).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                setattr(new, slot, getattr(self, slot))
        return new
