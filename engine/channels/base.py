"""A channel holds one piece of state and decides how a step's writes change it."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Self, TypeVar

from engine.errors import EmptyChannelError

Value = TypeVar("Value")
Update = TypeVar("Update")
Saved = TypeVar("Saved")


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

    __slots__ = ("key", "value", "typ")

    # Whether a step that writes nothing to it may still change it (an ephemeral value
    # empties): the loop hands such channels, while they hold a value, each step's
    # empty update, and no other channel one.
    fades: ClassVar[bool] = False
    # Whether its value and the writes to it are saved (an untracked value's are not).
    kept: ClassVar[bool] = True

    def __init__(self, typ: Any = None, key: str = "") -> None:
        # LangGraph's channels take their value's type first: the engine checks no
        # value against it, a low-level graph's JSON schemas show it.
        self.key = key
        self.value: Any = MISSING
        self.typ = typ

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

    def finish(self) -> bool:
        """Told when a step wakes no node, so the run would end there (as LangGraph tells
        it): True if that changed the channel, which may then wake the nodes that read it."""
        return False

    def checkpoint(self) -> Any:
        return self.value

    def restore(self, value: Any) -> None:
        self.value = value

    def empty_value(self) -> Any:
        """What the channel holds before any write: MISSING, or an empty value to fold
        writes into."""
        return MISSING

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new channel of this kind and options, holding what `checkpoint()` returned
        (MISSING: empty): LangGraph's way of making a channel for a run."""
        new = self.copy()
        new.value = new.empty_value()
        if checkpoint is not MISSING:
            new.restore(checkpoint)
        return new

    @property
    def ValueType(self) -> Any:  # noqa: N802 (LangGraph's name)
        """The type of what the channel holds (Any when it was made without one)."""
        return Any if self.typ is None else self.typ

    @property
    def UpdateType(self) -> Any:  # noqa: N802 (LangGraph's name)
        """The type of a write to the channel."""
        return self.ValueType

    def copy(self) -> Self:
        new = object.__new__(type(self))
        for cls in type(self).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                setattr(new, slot, getattr(self, slot))
        return new


class BaseChannel(Channel, Generic[Value, Update, Saved], metaclass=ABCMeta):
    """LangGraph's contract for a channel, so that a channel written for LangGraph runs
    on the engine: made with its value's type first (`MyChannel(int)`), read through
    `get()`, saved with `checkpoint()` and rebuilt by `from_checkpoint()`.

    The engine reads a channel's `value`; here that is what `get()` returns, so a
    subclass keeps its value under another name. After a step that wrote to it, the
    channel is handed the next step's empty update, so an ephemeral channel clears on
    it (LangGraph hands every channel one in every step).
    """

    fades = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "value" in vars(cls) or "value" in _own_slots(cls):
            raise TypeError(
                f"{cls.__name__} defines 'value': the engine reads a BaseChannel's value "
                "through get(), so keep it under another name."
            )

    def __init__(self, typ: Any, key: str = "") -> None:
        self.typ = typ
        self.key = key

    @property
    def value(self) -> Any:
        try:
            return self.get()
        except EmptyChannelError:
            return MISSING

    @value.setter
    def value(self, _value: Any) -> None:
        raise AttributeError(
            f"{type(self).__name__}: a BaseChannel's value is what get() returns; keep "
            "it under another name than 'value'."
        )

    @abstractmethod
    def get(self) -> Value: ...

    @abstractmethod
    def update(self, values: Sequence[Update]) -> bool: ...

    @abstractmethod
    def from_checkpoint(self, checkpoint: Saved | Any) -> Self: ...

    def restore(self, value: Any) -> None:
        # The engine restores a channel in place: take what from_checkpoint built.
        saved = self.from_checkpoint(value)
        for cls in type(saved).__mro__:
            for name in _own_slots(cls):
                if name not in ("key", "value") and hasattr(saved, name):
                    setattr(self, name, getattr(saved, name))
        vars(self).update(vars(saved))

    def copy(self) -> Self:
        return self.from_checkpoint(self.checkpoint())


def _own_slots(cls: type) -> tuple[str, ...]:
    slots = vars(cls).get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)
