"""What a node receives as `runtime`: the run's context, store and stream writer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from engine.store.base import BaseStore

__all__ = [
    "DEFAULT_RUNTIME",
    "BaseUser",
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
    "get_runtime",
]

ContextT = TypeVar("ContextT")


def _no_op_stream_writer(_chunk: Any) -> None:
    return None


def _no_op_heartbeat() -> None:
    return None


@dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Where the running node is: its checkpoint, namespace, task and attempt."""

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    run_id: str | None = None
    node_attempt: int = 1
    # When the first attempt started (seconds since the epoch), for retry budgets.
    node_first_attempt_time: float | None = None

    def patch(self, **overrides: Any) -> ExecutionInfo:
        return replace(self, **overrides)


@runtime_checkable
class BaseUser(Protocol):
    """The user a server runs a graph for, read as attributes or as keys
    (`user.identity`, `user["identity"]`), as LangGraph's servers hand it over."""

    @property
    def identity(self) -> str: ...

    @property
    def display_name(self) -> str: ...

    @property
    def is_authenticated(self) -> bool: ...

    @property
    def permissions(self) -> Sequence[str]: ...

    def __getitem__(self, key: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Which assistant and graph the server runs, and for whom (None outside a server)."""

    assistant_id: str
    graph_id: str
    user: BaseUser | None = None


class RunControl:
    """Lets another thread ask a run to stop at its next step boundary (a drain)."""

    __slots__ = ("_drain_reason",)

    def __init__(self) -> None:
        self._drain_reason: str | None = None

    def request_drain(self, reason: str = "shutdown") -> None:
        self._drain_reason = reason

    @property
    def drain_requested(self) -> bool:
        return self._drain_reason is not None

    @property
    def drain_reason(self) -> str | None:
        return self._drain_reason


@dataclass(frozen=True, slots=True)
class Runtime(Generic[ContextT]):
    """Run dependencies handed to nodes that take a `runtime` parameter.

    `context` is what the caller passed as `context=` (validated against the graph's
    `context_schema`), `store` the graph's store, `previous` the entrypoint's last return
    value on this thread (functional API).
    """

    context: ContextT = field(default=None)  # type: ignore[assignment]
    store: BaseStore | None = field(default=None)
    stream_writer: Callable[[Any], None] = field(default=_no_op_stream_writer)
    # Tells a node's idle timeout that it is making progress; a no-op without one.
    heartbeat: Callable[[], None] = field(default=_no_op_heartbeat)
    previous: Any = field(default=None)
    execution_info: ExecutionInfo | None = field(default=None)
    server_info: ServerInfo | None = field(default=None)
    control: RunControl | None = field(default=None)

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """Values set on `other` win; unset ones come from this runtime."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=other.stream_writer
            if other.stream_writer is not _no_op_stream_writer
            else self.stream_writer,
            heartbeat=other.heartbeat
            if other.heartbeat is not _no_op_heartbeat
            else self.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def override(self, **overrides: Any) -> Runtime[ContextT]:
        return replace(self, **overrides)

    @property
    def drain_requested(self) -> bool:
        return self.control is not None and self.control.drain_requested

    @property
    def drain_reason(self) -> str | None:
        return self.control.drain_reason if self.control is not None else None


DEFAULT_RUNTIME: Runtime[Any] = Runtime()


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The runtime of the running node; `context_schema` only narrows the type."""
    from engine.pregel.context import current_runtime

    return current_runtime()
