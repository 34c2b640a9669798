"""What a running node can reach without being passed it: its task's scratchpad.

`interrupt()` and `get_stream_writer()` are called from deep inside user code, so the
loop puts the current task in a context variable before calling a node.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import convert_to_messages
from langchain_core.runnables.config import var_child_runnable_config
from pydantic import TypeAdapter, ValidationError

from engine.checkpoint.serde.jsonplus import allow_schemas
from engine.constants import CONFIG_KEY_RUNTIME
from engine.errors import GraphInterrupt, mark_invalid_resume
from engine.pregel.timeouts import TimedAttempt
from engine.runtime import DEFAULT_RUNTIME, Runtime
from engine.types import Interrupt

StreamWriter = Callable[[Any], None]
T = TypeVar("T")


@dataclass(slots=True)
class Scratchpad:
    """Per-task state for `interrupt()`: answers so far and the shared resume, if any."""

    # The task's namespace: an interrupt's id is derived from it and its position.
    task_ns: str
    # The task's id (a `@task` call's, for the code of that call).
    task_id: str = ""
    # In the code of a `@task` call: its place in the task ("name:id", a nested call's
    # after its caller's, joined by "|"). Its questions and calls are numbered there.
    call_path: str = ""
    resume: list[Any] = field(default_factory=list)
    # A resume value sent without an interrupt id; the first unanswered interrupt takes it.
    null_resume: Callable[[], Any] | None = None
    counter: int = 0
    writer: StreamWriter = lambda _chunk: None
    # The task's RunnableConfig, and what a node taking `runtime` is given.
    config: dict[str, Any] = field(default_factory=dict)
    runtime: Runtime[Any] = DEFAULT_RUNTIME
    # The step the task runs in and the one the recursion limit stops at.
    step: int = 0
    stop: int = 0
    # Functional API: results of `@task` calls saved by an earlier attempt of this task,
    # by call id; calls finished in this attempt, to be saved with the task's writes.
    call_results: dict[str, Any] = field(default_factory=dict)
    finished_calls: list[tuple[str, Any]] = field(default_factory=list)
    call_counter: int = 0
    # Answers saved by calls that stopped at an interrupt, by call id; what to save
    # under each call's id now (its question, its answers, its caller).
    call_answers: dict[str, list[Any]] = field(default_factory=dict)
    call_writes: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    # The futures of the calls it started: a task's end waits for them, as a step's end
    # waits for its tasks in LangGraph, so a call left running is saved when it ends.
    started: list[Any] = field(default_factory=list)
    # Messages the node sent with `push_message`: streamed at once, written on return.
    pushed: list[tuple[str, Any]] = field(default_factory=list)
    stream_message: StreamWriter = lambda _message: None
    # Channel copies the task's routers folded its writes into (see tasks.apply_writes).
    folded: dict[str, Any] = field(default_factory=dict)
    # Set when the task took the shared resume, so the loop can save it as this task's.
    taken: list[Any] = field(default_factory=list)
    # Set when a graph run inside the task took one of its answers into its own
    # checkpoints: the task's answers are saved without it (see next_answer).
    handed_down: bool = False
    # The loop running this task: a graph invoked inside the node streams and saves
    # through it, as a subgraph of this task.
    loop: Any = None
    # The node the task runs (a `Node`): its `@task` calls show in the `tasks` stream
    # as its own tasks, with its metadata.
    node: Any = None
    # The task's callback run while its node runs and routes, if it has callbacks: its
    # routers run as runs of their own under it, numbered from `router_step` in the
    # node's sequence (its code's steps, its state writes, then its routers).
    node_run: Any = None
    router_step: int = 3
    # The event loop the run is on, unless the task holds it: an async `@task` called
    # from the task's sync code in a worker thread runs there.
    events: asyncio.AbstractEventLoop | None = None
    # Counts the graphs run under each namespace of the task (its own, its calls'), so
    # that each has a namespace of its own; shared by the task and its calls.
    graph_calls: dict[str, int] = field(default_factory=dict)
    # The clocks of the attempt running, for a task with a timeout.
    timer: TimedAttempt | None = None
    # Whether the task runs for a sync call of the graph, where async routers are refused.
    sync_call: bool = False


_current: ContextVar[Scratchpad | None] = ContextVar("threadline_task", default=None)


def current() -> Scratchpad:
    pad = _current.get()
    if pad is None:
        raise RuntimeError("Called outside of a graph node: there is no running task.")
    return pad


def peek() -> Scratchpad | None:
    return _current.get()


def enter(pad: Scratchpad) -> Any:
    # A graph that the task's own code calls is a call of its own: sync only if made so.
    return _current.set(pad), _sync_call.set(False)


def leave(token: Any) -> None:
    current_token, sync_token = token
    _sync_call.reset(sync_token)
    _current.reset(current_token)


# Set by a graph's sync methods for the async code they run (see `as_sync_call`).
_sync_call: ContextVar[bool] = ContextVar("threadline_sync_call", default=False)


async def as_sync_call(call: Awaitable[T]) -> T:
    """Await a graph's async method for one of its sync methods: the call is then a
    sync one, whose async routers are refused, as LangGraph's sync calls refuse them."""
    _sync_call.set(True)
    return await call


def in_sync_call() -> bool:
    """Whether the graph call being made now was made through a sync method."""
    return _sync_call.get()


_NO_VALUE = object()


def next_answer(pad: Scratchpad, *, hand_down: bool = False) -> Any:
    """The answer to the task's next question: saved from an earlier resume, else the
    shared resume of this call (kept as the task's own), else NO_VALUE.

    `hand_down` is for a graph run inside the task that keeps its answers in its own
    checkpoints (it resumes where it stopped rather than re-asking): the answer leaves
    the task's list, or the next run of the task would hand it down again, to the
    subgraph's next question. Of several answers it has not read, the last is handed
    down: the others were given to runs that stopped before the subgraph took them."""
    idx = pad.counter
    if idx < len(pad.resume):
        if hand_down:
            pad.handed_down = True
            answer = pad.resume[-1]
            del pad.resume[idx:]
            return answer
        pad.counter += 1
        return pad.resume[idx]
    if not hand_down:
        pad.counter += 1
    if pad.null_resume is not None:
        answer = pad.null_resume()
        if answer is not _NO_VALUE and not hand_down:
            pad.resume.append(answer)
            pad.taken.append(answer)
        return answer
    return _NO_VALUE


async def calls_settled(pad: Scratchpad) -> None:
    """Wait for the `@task` calls the task started and did not wait for (their failures
    are theirs: a call's caller sees one only by its result)."""
    running = [
        f if isinstance(f, asyncio.Future) else asyncio.wrap_future(f)
        for f in pad.started
        if not f.done()
    ]
    if running:
        await asyncio.gather(*running, return_exceptions=True)


def next_graph_namespace(pad: Scratchpad, at: str | None = None) -> tuple[str, ...]:
    """The namespace of the next graph run by the code running: `at` (the namespace its
    config names), else the task's own (in a `@task` call's code, the call's place in
    it), for the first, then numbered (`node:<task id>|1`, `|2`...), as LangGraph
    numbers them, so that two graphs a node or two calls invoke keep their checkpoints
    apart."""
    base = at or asking_ns(pad)
    n = pad.graph_calls.get(base, 0)
    pad.graph_calls[base] = n + 1
    ns = tuple(base.split("|"))
    return (*ns, str(n)) if n else ns


def interrupt(value: Any, *, response_schema: type | dict[str, Any] | None = None) -> Any:
    """Stop the run and ask the caller; on resume, the node re-runs and this returns the
    answer. Several calls in one node are answered in order, one resume each."""
    pad = current()
    adapter = (
        None
        if response_schema is None or isinstance(response_schema, dict)
        else TypeAdapter(response_schema)
    )
    if adapter is not None and pad.loop is not None and pad.loop.saver is not None:
        # The answer becomes an instance of the schema, which the node may save.
        allow_schemas(pad.loop.saver, [response_schema])
    answer = next_answer(pad)
    if answer is not _NO_VALUE:
        return answer if adapter is None else _validated(pad, adapter, answer)
    schema = adapter.json_schema() if adapter is not None else response_schema
    question = Interrupt(value, interrupt_id(asking_ns(pad), len(pad.resume)), schema)
    raise GraphInterrupt((question,))


def _validated(pad: Scratchpad, adapter: TypeAdapter[Any], answer: Any) -> Any:
    """The answer as the schema's type; an invalid one is not kept, so the question can
    be answered again."""
    try:
        return adapter.validate_python(answer)
    except ValidationError as exc:
        if pad.taken and pad.taken[-1] is answer:
            pad.taken.pop()
            pad.resume.pop()
        mark_invalid_resume(exc)
        raise


def asking_ns(pad: Scratchpad) -> str:
    """Where the questions and `@task` calls of the code running are numbered: the
    task's namespace, and in a call's code, the call's place in it."""
    return f"{pad.task_ns}|{pad.call_path}" if pad.call_path else pad.task_ns


def interrupt_id(task_ns: str, index: int) -> str:
    """Stable across re-runs of the task, distinct for each question it asks."""
    return hashlib.blake2b(f"{task_ns}|{index}".encode(), digest_size=16).hexdigest()


_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")


def is_interrupt_id(key: object) -> bool:
    """Whether `key` has the form of an interrupt's id: a resume whose keys all do is a
    map of answers by id, as LangGraph reads it, even when an id is no longer waiting."""
    return isinstance(key, str) and _INTERRUPT_ID.fullmatch(key) is not None


def get_stream_writer() -> StreamWriter:
    """The writer for `custom` stream parts of the running node."""
    return current().writer


def get_config() -> dict[str, Any]:
    """The running node's config; inside a Runnable that a node called, that one's."""
    config = var_child_runnable_config.get()
    if config is not None:
        return config  # type: ignore[return-value]
    pad = _current.get()
    if pad is None:
        raise RuntimeError("Called outside of a runnable context: there is no running task.")
    return pad.config


def push_message(message: Any, *, state_key: str | None = "messages") -> Any:
    """Stream a finished message now and write it to `state_key` (unless None) when the
    node returns. The message needs an id: the stream and the state name it by it."""
    (message,) = convert_to_messages([message])
    if message.id is None:
        raise ValueError("Message ID is required to push a message.")
    pad = current()
    pad.stream_message(message)
    if state_key:
        pad.pushed.append((state_key, message))
    return message


def current_runtime() -> Runtime[Any]:
    """The runtime of the running node (or of the Runnable config it runs under)."""
    pad = _current.get()
    if pad is not None:
        return pad.runtime
    config = var_child_runnable_config.get()
    runtime = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_RUNTIME)
    if runtime is None:
        raise RuntimeError("Called outside of a graph node: there is no runtime.")
    return runtime


NO_VALUE = _NO_VALUE
