"""The small value types that graphs, the loop and savers exchange."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

START = "__start__"
END = "__end__"

Durability = Literal["sync", "async", "exit"]
StreamMode = Literal["values", "updates", "custom", "tasks", "debug", "messages", "checkpoints"]


@dataclass(frozen=True, slots=True)
class Send:
    """A packet for one task of `node` in the next step; the task sees only `arg`."""

    node: str
    arg: Any

    def __repr__(self) -> str:
        return f"Send(node={self.node!r}, arg={self.arg!r})"


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A question a node asked with `interrupt()`; `id` is stable across resumes."""

    value: Any
    id: str = ""


@dataclass(slots=True)
class Command:
    """What a node returns to update state and choose where to go, or what a caller
    sends to answer an interrupt."""

    update: Any = None
    goto: str | Send | Sequence[str | Send] = ()
    resume: Any = None
    graph: str | None = None

    PARENT = "__parent__"


def _default_retry_on(exc: Exception) -> bool:
    # Programming errors do not heal by waiting, so they are not retried by default.
    return not isinstance(
        exc,
        ValueError
        | TypeError
        | ArithmeticError
        | ImportError
        | LookupError
        | NameError
        | SyntaxError
        | RuntimeError
        | ReferenceError
        | StopIteration
        | StopAsyncIteration
        | OSError,
    ) or _is_transient_http(exc)


def _is_transient_http(exc: Exception) -> bool:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(exc, ConnectionError) or (isinstance(status, int) and status >= 500)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently one node is retried when it raises."""

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        _default_retry_on
    )

    def should_retry(self, exc: Exception) -> bool:
        retry_on = self.retry_on
        if isinstance(retry_on, type):
            return isinstance(exc, retry_on)
        if isinstance(retry_on, Sequence):
            return isinstance(exc, tuple(retry_on))
        return bool(retry_on(exc))


class PregelTask(NamedTuple):
    """A task due at a checkpoint, as shown in a `StateSnapshot`."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any = None


class StateSnapshot(NamedTuple):
    """A thread's state at one checkpoint."""

    values: Any
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...] = ()
