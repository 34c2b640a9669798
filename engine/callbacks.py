"""Callbacks for what is particular to a graph's run: it stopping at interrupts, and it
resuming from a saved checkpoint.

A `GraphCallbackHandler` in `config["callbacks"]` is told of both, besides the chain,
model and tool events every LangChain handler gets. Subgraphs that resume tell it too;
only the top graph tells it of its interrupts (a subgraph's stop the top graph's run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.callbacks.manager import ahandle_event

from engine.types import Interrupt

__all__ = (
    "GraphCallbackHandler",
    "GraphInterruptEvent",
    "GraphLifecycleEvent",
    "GraphLifecycleStatus",
    "GraphResumeEvent",
)

GraphLifecycleStatus: TypeAlias = Literal[
    "input", "pending", "done", "interrupt_before", "interrupt_after", "out_of_steps"
]
"""Where the run was when the event happened: `pending` with tasks to run (a node's
`interrupt()`, a resume), or at a breakpoint before or after a node."""


@dataclass(frozen=True)
class GraphInterruptEvent:
    """The run stopped: at a node's `interrupt()` calls, or at a breakpoint (no
    interrupts then)."""

    run_id: UUID | None
    status: GraphLifecycleStatus
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]


@dataclass(frozen=True)
class GraphResumeEvent:
    """A run (or a subgraph's) goes on from the thread's saved checkpoint."""

    run_id: UUID | None
    status: GraphLifecycleStatus
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]


GraphLifecycleEvent: TypeAlias = GraphInterruptEvent | GraphResumeEvent


class GraphCallbackHandler(BaseCallbackHandler):
    """Subclass and override either method (sync or async) to be told of a graph's
    lifecycle; pass an instance in `config["callbacks"]`."""

    def on_interrupt(self, event: GraphInterruptEvent) -> Any:
        """The run stopped at interrupts or a breakpoint."""

    def on_resume(self, event: GraphResumeEvent) -> Any:
        """The run goes on from a saved checkpoint."""


def graph_handlers(callbacks: Any) -> list[GraphCallbackHandler]:
    """The lifecycle handlers among a config's callbacks (a list or a manager)."""
    if isinstance(callbacks, BaseCallbackManager):
        callbacks = callbacks.handlers
    if isinstance(callbacks, GraphCallbackHandler):
        return [callbacks]
    if not isinstance(callbacks, Sequence):
        return []
    return [h for h in callbacks if isinstance(h, GraphCallbackHandler)]


async def notify(handlers: list[GraphCallbackHandler], event: GraphLifecycleEvent) -> None:
    """Tell each handler of `event`, as LangChain tells handlers of any event: an error
    in one is logged (unless it says to raise), a sync one runs off the event loop
    unless it runs inline."""
    name = "on_interrupt" if isinstance(event, GraphInterruptEvent) else "on_resume"
    await ahandle_event(handlers, name, None, event)  # type: ignore[arg-type]
