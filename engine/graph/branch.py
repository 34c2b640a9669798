"""Conditional edges: a router picks the next nodes after its source node ran."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin, get_type_hints

from langchain_core.runnables.config import var_child_runnable_config

from engine.constants import END
from engine.errors import InvalidUpdateError
from engine.pregel.runnable import RunnableCallable, injected, injected_params, no_sync_function
from engine.types import Send


@dataclass(slots=True)
class Branch:
    path: Callable[..., Any]
    path_map: dict[Hashable, str] | None
    # What of the run the router asks for (config, runtime, store, writer): a router is
    # handed them as a node is.
    params: tuple[str, ...]
    # The schema class the router is typed with: it reads those keys, as a node typed so
    # does. An untyped router reads the state, and what its node returned outside the
    # state's keys, as in LangGraph.
    schema: Any = None
    # The router as a traced Runnable, made on first need (a run with callbacks).
    _traced: RunnableCallable | None = field(default=None, init=False, repr=False)

    @classmethod
    def create(
        cls,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | Sequence[str] | None,
        *,
        schema: Any = None,
    ) -> Branch:
        if isinstance(path_map, dict):
            mapping: dict[Hashable, str] | None = dict(path_map)
        elif path_map is not None:
            mapping = {name: name for name in path_map}
        else:
            mapping = _literal_targets(path)
        return cls(path, mapping, injected_params(path), schema)

    def choose(
        self, state: Any, config: dict[str, Any], run: Any, step: int, sync_call: bool = False
    ) -> Any:
        """What the router returns for `state` (an awaitable, for an async router). Inside
        a node's callback run (`run`), it is a chain run of its own under it, tagged with
        its place in the node's sequence (`seq:step:N`), as LangGraph's routers are.

        In a sync call (`invoke`, `stream`, `update_state`) an async router is refused,
        as LangGraph refuses to run async code there."""
        if sync_call and inspect.iscoroutinefunction(self.path):
            name = getattr(self.path, "__name__", None) or type(self.path).__name__
            raise TypeError(no_sync_function(name))
        if run is None:
            return _called_under(
                config,
                lambda: (
                    self.path(state, **injected(self.params, config))
                    if self.params
                    else self.path(state)
                ),
            )
        if self._traced is None:
            self._traced = _traced_router(self.path)
        traced = {**config, "callbacks": run.get_child(f"seq:step:{step}")}
        if sync_call:
            return self._traced.invoke(state, traced)
        return self._traced.ainvoke(state, traced)

    def destinations(self) -> list[str] | None:
        """Possible targets for drawing; None when any node may be chosen."""
        return None if self.path_map is None else list(dict.fromkeys(self.path_map.values()))

    def resolve(self, result: Any) -> list[str | Send]:
        """Map what the router returned to node names and Send packets."""
        items = result if isinstance(result, list | tuple) else [result]
        out: list[str | Send] = []
        for item in items:
            if isinstance(item, Send):
                out.append(item)
            elif self.path_map is not None:
                # A KeyError naming the key, as LangGraph's lookup raises.
                out.append(self.path_map[item])
            elif item is None:
                raise ValueError("Branch did not return a valid destination")
            else:
                out.append(item)
        # A packet can only go to a node: LangGraph fails the router's task here, while a
        # Command's Send to END is only dropped later with a warning (see `_destinations`).
        if any(isinstance(d, Send) and d.node == END for d in out):
            raise InvalidUpdateError("Cannot send a packet to the END node")
        return out


def _called_under(config: dict[str, Any], call: Callable[[], Any]) -> Any:
    """`call()` with `config` as the Runnable context's, as a traced router runs: its
    `get_config()` is its task's even in a graph a node invoked, while the Runnable
    context still holds that node's config."""
    if not config:
        return call()
    token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
    try:
        result = call()
    finally:
        var_child_runnable_config.reset(token)
    return _awaited_under(config, result) if inspect.isawaitable(result) else result


async def _awaited_under(config: dict[str, Any], awaitable: Any) -> Any:
    """An async router's body runs when awaited: under its task's config too."""
    token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
    try:
        return await awaitable
    finally:
        var_child_runnable_config.reset(token)


def _traced_router(path: Callable[..., Any]) -> RunnableCallable:
    """The router as a traced Runnable. A sync one gets an async side that calls it
    inline, so that in an async run it is called as LangGraph calls it, through that
    side: a lambda's run is then unnamed, and named after the class in a sync run."""
    if inspect.iscoroutinefunction(path):
        return RunnableCallable(path)

    @functools.wraps(path)
    async def inline(*args: Any, **kwargs: Any) -> Any:
        return path(*args, **kwargs)

    return RunnableCallable(path, inline)


def _literal_targets(path: Callable[..., Any]) -> dict[Hashable, str] | None:
    """Read `-> Literal["a", "b"]` off a router so the drawing knows its targets."""
    fn = path if inspect.isfunction(path) else getattr(path, "__call__", path)  # noqa: B004
    try:
        hint = get_type_hints(fn).get("return")
    except Exception:
        return None
    if get_origin(hint) is Literal:
        return {name: name for name in get_args(hint)}
    return None
