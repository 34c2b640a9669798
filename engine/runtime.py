"""What a node receives as `runtime`: the run's context, store and stream writer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from engine.store.base import BaseStore

__all__ = ["DEFAULT_RUNTIME", "ExecutionInfo", "Runtime", "get_runtime"]

ContextT = TypeVar("ContextT")


def _no_op_stream_writer(_chunk: Any) -> None:
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
    previous: Any = field(default=None)
    execution_info: ExecutionInfo | None = field(default=None)

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """Values set on `other` win; unset ones come from this runtime."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=other.stream_writer
            if other.stream_writer is not _no_op_stream_writer
            else self.stream_writer,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
        )

    def override(self, **overrides: Any) -> Runtime[ContextT]:
        return replace(self, **overrides)


DEFAULT_RUNTIME: Runtime[Any] = Runtime()


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The runtime of the running node; `context_schema` only narrows the type."""
    from engine.pregel.context import current_runtime

    return current_runtime()
