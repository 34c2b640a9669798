"""The names of LangGraph's `langgraph.checkpoint.serde.types`: the channels of a
task's saved writes, and the shapes a saver may expect of channels and sends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, Self, TypeVar, runtime_checkable

# LangGraph's names of the channels of saved writes.
from engine.constants import ERROR, INTERRUPT, RESUME, SCHEDULED, TASKS  # noqa: F401

Value = TypeVar("Value", covariant=True)
Update = TypeVar("Update", contravariant=True)
Saved = TypeVar("Saved")


class ChannelProtocol(Protocol[Value, Update, Saved]):
    """What LangGraph's channels offer: read, update, save and rebuild."""

    @property
    def ValueType(self) -> Any: ...  # noqa: N802 (LangGraph's name)

    @property
    def UpdateType(self) -> Any: ...  # noqa: N802 (LangGraph's name)

    def checkpoint(self) -> Saved | None: ...

    def from_checkpoint(self, checkpoint: Saved | None) -> Self: ...

    def update(self, values: Sequence[Update]) -> bool: ...

    def get(self) -> Value: ...

    def consume(self) -> bool: ...


@runtime_checkable
class SendProtocol(Protocol):
    """A packet for one node: `Send` is one."""

    node: str
    arg: Any
