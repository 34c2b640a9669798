"""Managed values: state keys the loop fills in for each task instead of a channel.

`remaining_steps: RemainingSteps` in a state schema lets a node see how many steps the
recursion limit leaves it, so an agent can wrap up instead of failing at the limit.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, TypeVar

from engine._annotations import unwrapped

__all__ = [
    "IsLastStep",
    "IsLastStepManager",
    "ManagedValue",
    "RemainingSteps",
    "RemainingStepsManager",
    "managed_of",
]

V = TypeVar("V")


class ManagedValue(Generic[V]):
    """A value computed from where the run is: `step` now, `stop` the step at which
    the recursion limit ends it."""

    @staticmethod
    def get(step: int, stop: int) -> Any:
        raise NotImplementedError


class RemainingStepsManager(ManagedValue[int]):
    @staticmethod
    def get(step: int, stop: int) -> int:
        return stop - step


class IsLastStepManager(ManagedValue[bool]):
    @staticmethod
    def get(step: int, stop: int) -> bool:
        return step == stop - 1


RemainingSteps = Annotated[int, RemainingStepsManager]
IsLastStep = Annotated[bool, IsLastStepManager]


def managed_of(annotation: Any) -> type[ManagedValue[Any]] | None:
    """The manager of a `RemainingSteps`-like annotation (also under NotRequired)."""
    for meta in unwrapped(annotation)[1]:
        if isinstance(meta, type) and issubclass(meta, ManagedValue):
            return meta
    return None
