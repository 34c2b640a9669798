"""A node as the loop sees it: what wakes it, how it reads, runs and writes."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import (
    Runnable,
    RunnableLambda,
    RunnableParallel,
    RunnableSequence,
)
from langchain_core.runnables.utils import get_function_nonlocals

from engine.pregel.runnable import PlainLambda, RunnableCallable
from engine.types import CachePolicy, RetryPolicy, TimeoutPolicy, TracePolicy

if TYPE_CHECKING:
    from engine.pregel.graph import CompiledGraph

Writes = list[tuple[str, Any]]
_NOT_LOOKED_UP = object()
# (channels, step, stop) -> the input of a task woken by its triggers.
Reader = Callable[[dict[str, Any], int, int], Any]


@dataclass(slots=True)
class Node:
    name: str
    triggers: tuple[str, ...]
    # The user's code as a Runnable; None for the engine's own input node, which
    # passes its input through.
    runnable: Runnable[Any, Any] | None
    # Whether the loop awaits `ainvoke` (async code, or a Runnable of unknown kind)
    # rather than calling `invoke` in a worker thread.
    is_async: bool
    # Input of a task woken by its triggers (push tasks get their Send packet instead).
    read: Reader
    # The writes of a finished task: state updates first, then where to go next.
    write: Callable[[Any, dict[str, Any]], Writes]
    # Tried in order against an error: the first whose `retry_on` matches decides.
    retry_policy: tuple[RetryPolicy, ...] = ()
    cache_policy: CachePolicy | None = None
    # Each attempt of the node is cancelled past these limits (async nodes only).
    timeout: TimeoutPolicy | None = None
    # The node that takes this node's failure once its retries are spent.
    error_handler: str | None = None
    # What tracers record of the node's run.
    trace_policy: TracePolicy | None = None
    subgraph: CompiledGraph | None = None
    # Hidden nodes (the input node) do not show in updates, tasks or messages streams.
    hidden: bool = False
    # Whether routers (conditional edges) run in its writes: an input node that routes is
    # a callback run too (hidden, as LangGraph's `__start__` is), and so is an update as a
    # node that routes (`<graph name>UpdateState`), for theirs to nest under.
    routes: bool = False
    # A deferred node runs only once no other node is due (a final summary, a join of
    # branches of different lengths).
    defer: bool = False
    metadata: dict[str, Any] | None = None
    # Tags of the node's runs (a Pregel node's `meta`), inherited by what its code runs.
    tags: list[str] = field(default_factory=list)
    # A graph the node's code runs in its body, found among the names it closes over on
    # first need (finding it reads the code's source): snapshots point at its checkpoints.
    _inner: Any = field(default=_NOT_LOOKED_UP, init=False, repr=False)
    _plain: Any = field(default=_NOT_LOOKED_UP, init=False, repr=False)

    @property
    def plain(self) -> PlainLambda | None:
        """The node's `RunnableLambda` as called without callbacks (`PlainLambda`), if
        it is one that can be."""
        if self._plain is _NOT_LOOKED_UP:
            self._plain = PlainLambda.of(self.runnable)
        return self._plain  # type: ignore[no-any-return]

    @property
    def graph_inside(self) -> CompiledGraph | None:
        """The graph whose checkpoints this node's tasks keep, if any. A subgraph compiled
        with `checkpointer=False` keeps none: as in LangGraph, it is no subgraph to
        `get_subgraphs` and its tasks show no state."""
        if self.subgraph is not None:
            return self.subgraph if self.subgraph.checkpointer is not False else None
        if self._inner is _NOT_LOOKED_UP:
            self._inner = find_inner_graph(self.runnable)
        return self._inner

    @property
    def bound(self) -> Runnable[Any, Any] | None:
        """The node's own code, as LangGraph's compiled nodes expose it."""
        return self.runnable

    def copy(self, update: Mapping[str, Any]) -> Node:
        """This node with the fields `update` names changed, as LangGraph's compiled
        nodes copy; an unknown field is a TypeError."""
        return replace(self, **update)

    def invoke(self, input: Any, config: Any = None) -> Any:
        """Run the node's code alone (outside a graph run), as LangGraph's nodes allow."""
        if self.runnable is None:
            return input
        return self.runnable.invoke(input, config)

    async def ainvoke(self, input: Any, config: Any = None) -> Any:
        if self.runnable is None:
            return input
        return await self.runnable.ainvoke(input, config)


def as_runnable(name: str, action: Any) -> tuple[Runnable[Any, Any], bool]:
    """The user's node as a Runnable, and whether the loop should await it."""
    if isinstance(action, RunnableCallable):
        return action, action.afunc is not None
    if isinstance(action, Runnable):
        return action, True
    if isinstance(action, Mapping):  # each key's Runnable run on the input, as LangChain's
        return RunnableParallel(action), True
    if inspect.isgeneratorfunction(action) or inspect.isasyncgenfunction(action):
        # LangChain's lambda runs a generator and returns what it yielded last.
        return RunnableLambda(action, name=name), True
    if not callable(action):
        raise TypeError(
            f"Node '{name}' must be a function, a Runnable, a dict of Runnables or a "
            f"compiled graph, not {type(action).__name__}."
        )
    call = action if inspect.isfunction(action) or inspect.ismethod(action) else action.__call__
    if inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(action):
        return RunnableCallable(None, action, name=name, trace=False), True
    return RunnableCallable(action, name=name, trace=False), False


def find_inner_graph(runnable: Runnable[Any, Any] | None) -> CompiledGraph | None:
    """A compiled graph (with checkpoints) that a node's code refers to, as LangGraph
    finds one: in a sequence's steps, a lambda's dependencies or a function's nonlocals."""
    from engine.pregel.graph import CompiledGraph

    candidates: list[Any] = [runnable]
    for candidate in candidates:
        if isinstance(candidate, CompiledGraph):
            if candidate.checkpointer is not False:
                return candidate
        elif isinstance(candidate, RunnableSequence):
            candidates.extend(candidate.steps)
        elif isinstance(candidate, RunnableLambda):
            candidates.extend(candidate.deps)
        elif isinstance(candidate, RunnableCallable):
            code = (candidate.source,) if candidate.source else (candidate.func, candidate.afunc)
            for fn in code:
                if fn is not None:
                    candidates.extend(getattr(v, "__self__", v) for v in get_function_nonlocals(fn))
    return None
