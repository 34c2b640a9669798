"""A node as the loop sees it: what wakes it, how it reads, runs and writes."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.channels import Channel
from engine.types import RetryPolicy

if TYPE_CHECKING:
    from engine.pregel.graph import CompiledGraph

Writes = list[tuple[str, Any]]


@dataclass(slots=True)
class Node:
    name: str
    triggers: tuple[str, ...]
    # (input, config, writer) -> output; sync or async as `is_async` says.
    call: Callable[[Any, dict[str, Any], Callable[[Any], None]], Any]
    is_async: bool
    # Input of a task woken by its triggers (push tasks get their Send packet instead).
    read: Callable[[dict[str, Channel]], Any]
    # The writes of a finished task: state updates first, then where to go next.
    write: Callable[[Any, dict[str, Channel]], Writes]
    retry_policy: RetryPolicy | None = None
    subgraph: CompiledGraph | None = None
    # Hidden nodes (the input node) do not show in updates, tasks or messages streams.
    hidden: bool = False
    # Whether `call` uses its config argument; otherwise the loop passes None.
    wants_config: bool = False
    # A sync `call` made by the engine, running no user code: the loop calls it in place
    # rather than in a worker thread, whose hop cost a turn's first token several
    # milliseconds on a busy process (the thread waits for the GIL).
    inline: bool = False


def adapt(fn: Callable[..., Any]) -> tuple[Callable[..., Any], bool, bool]:
    """Wrap a user function so the loop can always call it as (input, config, writer)."""
    target = fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and callable(fn):
        target = getattr(fn, "__call__", fn)  # noqa: B004
    is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(fn)
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    wants_config = "config" in params
    wants_writer = "writer" in params
    if not wants_config and not wants_writer:
        return (lambda value, _config, _writer: fn(value)), is_async, False
    if wants_config and not wants_writer:
        return (lambda value, config, _writer: fn(value, config=config)), is_async, True
    if wants_writer and not wants_config:
        return (lambda value, _config, writer: fn(value, writer=writer)), is_async, False
    return (lambda value, config, writer: fn(value, config=config, writer=writer)), is_async, True
