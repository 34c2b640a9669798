"""What a running node can reach without being passed it: its task's scratchpad.

`interrupt()` and `get_stream_writer()` are called from deep inside user code, so the
loop puts the current task in a context variable before calling a node.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from engine.errors import GraphInterrupt
from engine.types import Interrupt

StreamWriter = Callable[[Any], None]


@dataclass(slots=True)
class Scratchpad:
    """Per-task state for `interrupt()`: answers so far and the shared resume, if any."""

    # The task's namespace: an interrupt's id is derived from it and its position.
    task_ns: str
    resume: list[Any] = field(default_factory=list)
    # A resume value sent without an interrupt id; the first unanswered interrupt takes it.
    null_resume: Callable[[], Any] | None = None
    counter: int = 0
    writer: StreamWriter = lambda _chunk: None
    # Where a chat model sends the chunks it streams (the `messages` stream mode).
    messages: StreamWriter = lambda _chunk: None
    # Built on first use: most nodes never look at their config.
    make_config: Callable[[], dict[str, Any]] = dict
    config: dict[str, Any] | None = None
    # Set when the task took the shared resume, so the loop can save it as this task's.
    taken: list[Any] = field(default_factory=list)
    # The loop running this task: a graph invoked inside the node streams and saves
    # through it, as a subgraph of this task.
    loop: Any = None


_current: ContextVar[Scratchpad | None] = ContextVar("threadline_task", default=None)


def current() -> Scratchpad:
    pad = _current.get()
    if pad is None:
        raise RuntimeError("Called outside of a graph node: there is no running task.")
    return pad


def peek() -> Scratchpad | None:
    return _current.get()


def enter(pad: Scratchpad) -> Any:
    return _current.set(pad)


def leave(token: Any) -> None:
    _current.reset(token)


_NO_VALUE = object()


def next_answer(pad: Scratchpad) -> Any:
    """The answer to the task's next question: saved from an earlier resume, else the
    shared resume of this call (kept as the task's own), else NO_VALUE."""
    idx = pad.counter
    pad.counter += 1
    if idx < len(pad.resume):
        return pad.resume[idx]
    if pad.null_resume is not None:
        answer = pad.null_resume()
        if answer is not _NO_VALUE:
            pad.resume.append(answer)
            pad.taken.append(answer)
            return answer
    return _NO_VALUE


def interrupt(value: Any) -> Any:
    """Stop the run and ask the caller; on resume, the node re-runs and this returns the
    answer. Several calls in one node are answered in order, one resume each."""
    pad = current()
    answer = next_answer(pad)
    if answer is not _NO_VALUE:
        return answer
    raise GraphInterrupt((Interrupt(value=value, id=interrupt_id(pad.task_ns, len(pad.resume))),))


def interrupt_id(task_ns: str, index: int) -> str:
    """Stable across re-runs of the task, distinct for each question it asks."""
    return hashlib.blake2b(f"{task_ns}|{index}".encode(), digest_size=16).hexdigest()


def get_stream_writer() -> StreamWriter:
    """The writer for `custom` stream parts of the running node."""
    return current().writer


def get_message_writer() -> StreamWriter:
    """Where a chat model inside a node sends each chunk it streams; a no-op outside a
    run, so models work the same when called directly."""
    pad = _current.get()
    return pad.messages if pad is not None else (lambda _chunk: None)


def get_config() -> dict[str, Any]:
    pad = current()
    if pad.config is None:
        pad.config = pad.make_config()
    return pad.config


NO_VALUE = _NO_VALUE
