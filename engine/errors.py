"""Exceptions a caller of the engine can meet, named as LangGraph names them."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from engine.types import PLACEHOLDER_INTERRUPT_ID, Interrupt
from engine.warnings import LangGraphDeprecatedSinceV10


class ErrorCode(Enum):
    """LangGraph's codes for the errors its troubleshooting pages explain (kept so that
    programs naming them port)."""

    GRAPH_RECURSION_LIMIT = "GRAPH_RECURSION_LIMIT"
    INVALID_CONCURRENT_GRAPH_UPDATE = "INVALID_CONCURRENT_GRAPH_UPDATE"
    INVALID_GRAPH_NODE_RETURN_VALUE = "INVALID_GRAPH_NODE_RETURN_VALUE"
    MULTIPLE_SUBGRAPHS = "MULTIPLE_SUBGRAPHS"
    INVALID_CHAT_HISTORY = "INVALID_CHAT_HISTORY"


# Where LangGraph's troubleshooting pages live; an error with a code ends with a link to
# its page, and users match on the whole text, so the format is LangGraph's.
_TROUBLESHOOTING_URL = "https://docs.langchain.com/oss/python/langgraph/errors/"


def create_error_message(*, message: str, error_code: ErrorCode) -> str:
    """`message` followed by a line pointing at the troubleshooting page for `error_code`."""
    return f"{message}\nFor troubleshooting, visit: {_TROUBLESHOOTING_URL}{error_code.value}"


class TaskNotFound(Exception):
    """A task named by id is not in the run (LangGraph's distributed executor raises it;
    kept as a name)."""


class UnknownInterruptError(Exception):
    """A resume that does not match the pending interrupts, as LangGraph's strict resume
    mode (its server's) names it: `reason` says how, `interrupt_ids` the ids not pending
    and `pending_ids` those still open. The engine refuses such a resume with a
    `RuntimeError` naming the pending ids, as LangGraph's default mode does; this class is
    kept so that programs naming it port."""

    def __init__(
        self,
        message: str,
        *,
        reason: Literal["not_pending", "empty_map", "ambiguous"],
        interrupt_ids: Sequence[str] = (),
        pending_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.interrupt_ids = tuple(interrupt_ids)
        self.pending_ids = tuple(pending_ids)


class EmptyChannelError(Exception):
    """Read of a channel that holds no value yet."""


class InvalidUpdateError(Exception):
    """A node wrote something the state cannot take."""


class GraphRecursionError(RecursionError):
    """The run reached its step limit before the graph finished."""


class GraphBubbleUp(Exception):
    """An exception that is control flow, not failure: it passes through nodes, tool
    error handlers and retries up to the loop (interrupts, commands to a parent)."""


class GraphInterrupt(GraphBubbleUp):
    """Raised inside a node to stop the run until a caller answers."""

    def __init__(self, interrupts: Sequence[Interrupt] = ()) -> None:
        super().__init__(tuple(interrupts))
        self.interrupts = tuple(interrupts)


class NodeInterrupt(GraphInterrupt):
    """LangGraph's old way for a node to stop the run with a value (deprecated: call
    `interrupt()`). The node runs again from its start on resume, as in LangGraph, and
    its interrupt has LangGraph's placeholder id unless given one."""

    def __init__(self, value: Any, id: str | None = None) -> None:
        warnings.warn(
            "NodeInterrupt is deprecated. Please use `engine.types.interrupt` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        super().__init__([Interrupt(value=value, id=id or PLACEHOLDER_INTERRUPT_ID)])


class GraphDrained(GraphBubbleUp):
    """A run stopped at a step boundary because its `RunControl` asked it to drain; the
    checkpoint is saved and the run can be resumed."""

    def __init__(self, reason: str = "shutdown") -> None:
        self.reason = reason
        super().__init__(f"Graph drained: {reason}")


class EmptyInputError(Exception):
    """A run was started with no input on a thread that has nothing to continue."""


class CheckpointNotFoundError(LookupError):
    """The checkpoint named in the config does not exist."""


class ParentCommand(GraphBubbleUp):
    """A subgraph node's Command addressed to the graph that contains the subgraph."""

    def __init__(self, command: object) -> None:
        super().__init__(command)
        self.command = command


class NoParentGraphError(ParentCommand, InvalidUpdateError):
    """A node of the top graph returned `Command(graph=Command.PARENT)`. It escapes as a
    `ParentCommand`, as LangGraph's does, so code that catches that still does; as an
    `InvalidUpdateError` it says what went wrong."""

    def __str__(self) -> str:
        return (
            "Command(graph=Command.PARENT) was returned by a node of the top graph, "
            f"which has no parent: {self.command!r}"
        )


class NodeTimeoutError(Exception):
    """An attempt of a node (or task) ran past its `TimeoutPolicy`: `kind` says which
    timeout fired and `timeout` its length. Not a `TimeoutError` (an `OSError`), so the
    default retry policy retries it."""

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: Literal["idle", "run"],
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        timeout = idle_timeout if kind == "idle" else run_timeout
        if kind not in ("idle", "run") or timeout is None:
            raise ValueError(f"a {kind!r} timeout needs its length and kind 'idle' or 'run'")
        if kind == "idle":
            message = (
                f"Node '{node}' exceeded its idle timeout of {timeout:.3f}s without making "
                f"progress (elapsed: {elapsed:.3f}s)."
            )
        else:
            message = (
                f"Node '{node}' exceeded its run timeout of {timeout:.3f}s "
                f"(elapsed: {elapsed:.3f}s)."
            )
        super().__init__(message)
        self.node = node
        self.elapsed = elapsed
        self.kind = kind
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout


class NodeCancelledError(Exception):
    """A node's own code raised `asyncio.CancelledError`: a failure of the node, not the
    engine stopping it, so it fails the run (and may be retried) like any error."""

    def __init__(self, node: str, message: str | None = None) -> None:
        super().__init__(message or f"Node {node!r} raised asyncio.CancelledError")
        self.node = node


@dataclass(frozen=True, slots=True)
class NodeError:
    """What a node's error handler is told of the failure it handles: a parameter typed
    `NodeError` receives it."""

    node: str
    error: BaseException


_INVALID_RESUME = "__engine_invalid_resume__"


def mark_invalid_resume(error: BaseException) -> None:
    """Tag a validation error raised by `interrupt()` for a resume that did not fit."""
    setattr(error, _INVALID_RESUME, True)


def is_invalid_resume(error: BaseException) -> bool:
    """Whether `error` is a resume value that did not match `interrupt(response_schema=)`:
    `ToolNode` re-raises it rather than reporting bad tool arguments to the model."""
    return getattr(error, _INVALID_RESUME, False) is True
