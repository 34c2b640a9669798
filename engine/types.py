"""The small value types that graphs, the loop and savers exchange."""

from __future__ import annotations

import hashlib
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar, Generic, Literal, NamedTuple, NotRequired, TypeVar

from langchain_core.messages.tool import ToolOutputMixin
from typing_extensions import TypeAliasType, TypedDict

from engine.checkpoint.base import BaseCheckpointSaver
from engine.constants import INTERRUPT
from engine.warnings import LangGraphDeprecatedSinceV10, LangGraphDeprecatedSinceV11

Durability = Literal["sync", "async", "exit"]
Checkpointer = TypeAliasType("Checkpointer", BaseCheckpointSaver | bool | None)
"""What a graph is compiled with: a saver; True, a subgraph that keeps its own
checkpoints in its parent's saver; False, none even inside a parent that has one; None,
its parent's."""
StreamMode = Literal["values", "updates", "custom", "tasks", "debug", "messages", "checkpoints"]
StreamWriter = Callable[[Any], None]
All = Literal["*"]
"""`interrupt_before="*"` / `interrupt_after="*"`: every node."""
N = TypeVar("N")


def _seconds(value: float | timedelta | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise ValueError(f"{name} must be a number of seconds or a timedelta, not {value!r}")
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not seconds > 0:
        raise ValueError(f"{name} must be greater than 0")
    return seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeoutPolicy:
    """How long one attempt of an async node may take before it is cancelled with a
    `NodeTimeoutError` (which the retry policy may retry).

    `run_timeout` caps the attempt's wall-clock time. `idle_timeout` caps the time
    without progress: with `refresh_on="auto"` any callback event under the node (a
    model's token, a tool's start), a custom stream write, a `@task` call and
    `runtime.heartbeat()` count; with `"heartbeat"` only `runtime.heartbeat()` does.
    Cancellation is cooperative: code that blocks the event loop is timed out when it
    gives it back."""

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """A policy with both timeouts in seconds (a number or timedelta is a
        `run_timeout`); None when neither is set."""
        if value is None:
            return None
        if not isinstance(value, TimeoutPolicy):
            value = cls(run_timeout=value)
        if value.refresh_on not in ("auto", "heartbeat"):
            raise ValueError("refresh_on must be 'auto' or 'heartbeat'")
        run = _seconds(value.run_timeout, "run_timeout")
        idle = _seconds(value.idle_timeout, "idle_timeout")
        if run is None and idle is None:
            return None
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=value.refresh_on)


@dataclass(frozen=True, slots=True, kw_only=True)
class TracePolicy:
    """What tracers record of a node's own run: `process_inputs` and `process_outputs`
    turn its input and output into what is kept (a summary of a long message history,
    or nothing with `omit_payload`). The node and every other handler see the real
    values; a processor that raises records the value as it is."""

    process_inputs: Callable[[Any], Any] | None = None
    process_outputs: Callable[[Any], Any] | None = None


def omit_payload(_value: Any) -> dict[str, Any]:
    """A `TracePolicy` processor that records nothing of the value: the run's span and
    timing stay, its payload goes."""
    return {}


@dataclass(frozen=True, slots=True, init=False)
class Send:
    """A packet for one task of `node` in the next step; the task sees only `arg`.
    `timeout` replaces the node's own timeout for this task."""

    node: str
    arg: Any
    timeout: TimeoutPolicy | None = field(default=None)

    def __init__(
        self,
        node: str,
        arg: Any,
        *,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> None:
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "arg", arg)
        object.__setattr__(self, "timeout", TimeoutPolicy.coerce(timeout))

    def __repr__(self) -> str:
        if self.timeout is None:
            return f"Send(node={self.node!r}, arg={self.arg!r})"
        return f"Send(node={self.node!r}, arg={self.arg!r}, timeout={self.timeout!r})"


# The id of an Interrupt made without one (by hand, or a `NodeInterrupt`'s), as
# LangGraph gives it.
PLACEHOLDER_INTERRUPT_ID = "placeholder-id"


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A question a node asked with `interrupt()`; `id` is stable across resumes.
    `response_schema` is the JSON Schema of the answer expected, when the node gave one."""

    value: Any
    # LangGraph's default: an Interrupt made by hand (not by `interrupt()`) has this id.
    id: str = PLACEHOLDER_INTERRUPT_ID
    response_schema: dict[str, Any] | None = None

    @classmethod
    def from_ns(
        cls, value: Any, ns: str, *, response_schema: type | dict[str, Any] | None = None
    ) -> Interrupt:
        """The first question the task at namespace `ns` asks, with the id `interrupt()`
        gives it there: a server can make the interrupt a task would raise."""
        from pydantic import TypeAdapter

        from engine.pregel.context import interrupt_id

        schema = (
            response_schema
            if response_schema is None or isinstance(response_schema, dict)
            else TypeAdapter(response_schema).json_schema()
        )
        return cls(value, interrupt_id(ns, 0), schema)

    @property
    def interrupt_id(self) -> str:
        """LangGraph's old name for `id`."""
        warnings.warn(
            "`interrupt_id` is deprecated. Use `id` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.id


@dataclass(slots=True)
class Command(Generic[N], ToolOutputMixin):
    """What a node returns to update state and choose where to go, or what a caller
    sends to answer an interrupt. `Command[Literal["a", "b"]]` as a node's return
    annotation tells the drawing where it may go."""

    graph: str | None = None
    update: Any = None
    resume: Any = None
    goto: Any = ()

    PARENT: ClassVar[str] = "__parent__"

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={value!r}"
            for name, value in (
                ("graph", self.graph),
                ("update", self.update),
                ("resume", self.resume),
                ("goto", self.goto),
            )
            if value not in (None, ())
        )
        return f"Command({shown})"


@dataclass(frozen=True, slots=True)
class Overwrite:
    """A write that replaces a reduced key's value instead of going through its reducer."""

    value: Any
    # Tells an Overwrite that crossed JSON as a plain dict from a write (LangGraph's
    # field, under its name).
    type: Literal["__overwrite__"] = "__overwrite__"


def _default_cache_key(*args: Any, **kwargs: Any) -> str:
    from engine.checkpoint.serde.jsonplus import default_serializer

    return hashlib.blake2b(
        default_serializer.dumps([list(args), kwargs]), digest_size=16
    ).hexdigest()


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """Cache a node's result by its input: `key_func` turns the input into a key (a hash
    of its stored JSON by default), `ttl` is how long an entry lives in seconds (None:
    for as long as the cache keeps it)."""

    key_func: Callable[..., str | bytes] = _default_cache_key
    ttl: int | None = None


def default_retry_on(exc: Exception) -> bool:
    """Whether `RetryPolicy()` retries `exc`: not programming errors (they do not heal
    by waiting), but a connection error or an HTTP error that a server may outgrow."""
    if isinstance(exc, ConnectionError):
        return True
    http = _http_verdict(exc)
    if http is not None:
        return http
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
    )


def _http_verdict(exc: Exception) -> bool | None:
    """LangGraph's rule for the HTTP clients it knows (None for other errors): httpx's
    status errors for a 5xx only; requests' for a 5xx, or when its response is falsy,
    which a `requests.Response` is for no response at all and for any 4xx or 5xx."""
    # Looked up, not imported: an error of a client that was never imported is not one
    # of its errors, and neither client is a dependency of ours.
    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(exc, httpx.HTTPStatusError):
        return 500 <= exc.response.status_code < 600
    requests = sys.modules.get("requests")
    if requests is not None and isinstance(exc, requests.HTTPError):
        response = exc.response
        return 500 <= response.status_code < 600 if response else True
    return None


class RetryPolicy(NamedTuple):
    """How often and how patiently one node is retried when it raises. A NamedTuple, as
    LangGraph's is, so `_replace`, unpacking and tuple equality work on it too."""

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )


class PregelTask(NamedTuple):
    """A task due at a checkpoint, as shown in a `StateSnapshot`."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any = None


def interrupt(value: Any, *, response_schema: type | dict[str, Any] | None = None) -> Any:
    """Stop the run and ask the caller; on resume the node runs again from its first line
    and this returns the answer. Several calls in one node are answered in order.

    `response_schema` (a JSON Schema dict, or a pydantic model, TypedDict or dataclass)
    is shown to clients with the question; a class also validates the answer, and the
    validated object is returned."""
    from engine.pregel.context import interrupt as ask

    return ask(value, response_schema=response_schema)


class StateUpdate(NamedTuple):
    """One update of `bulk_update_state`: values written as if by node `as_node`."""

    values: dict[str, Any] | None
    as_node: str | None = None
    task_id: str | None = None


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


# The parts `stream(..., version="v2")` yields: one dict shape for every mode, told apart
# by `type`, with the namespace of the graph that made it (LangGraph 1.2's format).

StateT = TypeVar("StateT")
OutputT = TypeVar("OutputT")


class TaskPayload(TypedDict):
    """A task's start in the `tasks` stream (and a `debug` part's payload)."""

    id: str
    name: str
    input: Any
    triggers: list[str]
    metadata: NotRequired[dict[str, Any]]


class TaskResultPayload(TypedDict):
    """A task's end in the `tasks` stream: its error (the exception), interrupts and the
    state updates it made."""

    id: str
    name: str
    error: BaseException | None
    interrupts: list[dict[str, Any]]
    result: dict[str, Any]


class CheckpointTask(TypedDict):
    """A task due at a checkpoint of the `checkpoints` stream: with its error, its result
    and interrupts, or its interrupts alone, as it stands."""

    id: str
    name: str
    error: NotRequired[str]
    result: NotRequired[Any]
    interrupts: NotRequired[list[dict[str, Any]]]
    state: Any


class CheckpointPayload(TypedDict, Generic[StateT]):
    """A checkpoint in the `checkpoints` stream (and a `debug` part's payload)."""

    config: dict[str, Any] | None
    metadata: dict[str, Any]
    values: StateT
    next: list[str]
    parent_config: dict[str, Any] | None
    tasks: list[CheckpointTask]


class _DebugCheckpoint(TypedDict, Generic[StateT]):
    step: int
    timestamp: str
    type: Literal["checkpoint"]
    payload: CheckpointPayload[StateT]


class _DebugTask(TypedDict):
    step: int
    timestamp: str
    type: Literal["task"]
    payload: TaskPayload


class _DebugTaskResult(TypedDict):
    step: int
    timestamp: str
    type: Literal["task_result"]
    payload: TaskResultPayload


DebugPayload = TypeAliasType(
    "DebugPayload",
    _DebugCheckpoint[StateT] | _DebugTask | _DebugTaskResult,
    type_params=(StateT,),
)
"""A part of the `debug` stream: a checkpoint, a task's start or its end, by step."""


class ValuesStreamPart(TypedDict, Generic[OutputT]):
    """The state after a step; the interrupts that stopped the run, in a part of their own."""

    type: Literal["values"]
    ns: tuple[str, ...]
    data: OutputT
    interrupts: tuple[Interrupt, ...]


class UpdatesStreamPart(TypedDict):
    type: Literal["updates"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class MessagesStreamPart(TypedDict):
    type: Literal["messages"]
    ns: tuple[str, ...]
    data: tuple[Any, dict[str, Any]]


class CustomStreamPart(TypedDict):
    type: Literal["custom"]
    ns: tuple[str, ...]
    data: Any


class CheckpointStreamPart(TypedDict, Generic[StateT]):
    type: Literal["checkpoints"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class TasksStreamPart(TypedDict):
    type: Literal["tasks"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class DebugStreamPart(TypedDict, Generic[StateT]):
    type: Literal["debug"]
    ns: tuple[str, ...]
    data: dict[str, Any]


StreamPart = TypeAliasType(
    "StreamPart",
    ValuesStreamPart[OutputT]
    | UpdatesStreamPart
    | MessagesStreamPart
    | CustomStreamPart
    | CheckpointStreamPart[StateT]
    | TasksStreamPart
    | DebugStreamPart[StateT],
    type_params=(StateT, OutputT),
)


@dataclass(frozen=True)
class GraphOutput(Generic[OutputT]):
    """What `invoke(..., version="v2")` returns: the output, and the interrupts apart."""

    value: OutputT
    interrupts: tuple[Interrupt, ...] = ()

    def __getitem__(self, key: str) -> Any:
        # The v1 result was a dict; reading it as one still works, with a warning.
        _warn_dict_access("result[key]")
        if key == INTERRUPT:
            return self.interrupts
        if isinstance(self.value, dict):
            return self.value[key]
        try:
            return getattr(self.value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        _warn_dict_access("key in result")
        if key == INTERRUPT:
            return bool(self.interrupts)
        if isinstance(self.value, dict):
            return key in self.value
        return isinstance(key, str) and hasattr(self.value, key)


def _warn_dict_access(how: str) -> None:
    warnings.warn(
        f"Accessing GraphOutput via `{how}` is deprecated: use `result.value` for the "
        "output and `result.interrupts` for the interrupts.",
        LangGraphDeprecatedSinceV11,
        stacklevel=3,
    )
