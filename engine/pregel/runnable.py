"""Functions as LangChain Runnables, with the run's config, runtime, store and writer
passed to the parameters that ask for them.

Nodes, routers and prebuilt nodes are all called through this, so that a node written
as `def node(state, config: RunnableConfig, runtime: Runtime[Ctx])` gets what LangGraph
would give it, and a chat model called inside it sees the run's callbacks and tags.
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Awaitable, Callable
from contextvars import Context, copy_context
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from langchain_core.callbacks.manager import AsyncCallbackManager, CallbackManager
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import (
    DEFAULT_RECURSION_LIMIT,
    ensure_config,
    run_in_executor,
    var_child_runnable_config,
)
from langchain_core.runnables.utils import accepts_config, accepts_run_manager

from engine._weak_cache import weakly_cached
from engine.constants import CONFIG_KEY_NODE_ERROR, CONFIG_KEY_RUNTIME
from engine.runtime import DEFAULT_RUNTIME, Runtime

__all__ = [
    "PlainLambda",
    "RunnableCallable",
    "injected",
    "injected_params",
    "runtime_of",
]

_EMPTY = inspect.Parameter.empty
# Parameter names a node may declare to be handed a part of the run, with the
# annotations that ask for it (LangGraph's rule: a `store: Any` is the user's own).
_INJECTED: dict[str, tuple[Any, ...] | None] = {
    "config": (_EMPTY, RunnableConfig, "RunnableConfig", RunnableConfig | None,
               "Optional[RunnableConfig]", "RunnableConfig | None"),
    "runtime": None,
    "store": (_EMPTY, "BaseStore", "Optional[BaseStore]", "BaseStore | None"),
    "writer": (_EMPTY, "StreamWriter"),
    # An error handler's failure: only by its annotation, as "error" is a common name.
    "error": ("NodeError",),
}  # fmt: skip


def _asks_for(name: str, annotation: Any) -> bool:
    wanted = _INJECTED[name]
    if wanted is None or annotation in wanted:
        return True
    from engine.errors import NodeError
    from engine.store.base import BaseStore
    from engine.types import StreamWriter

    typed = {
        "store": (BaseStore, BaseStore | None),
        "writer": (StreamWriter,),
        "error": (NodeError,),
    }
    return annotation in typed.get(name, ())


def injected_params(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Which of config/runtime/store/writer `fn` asks for by a parameter of that name
    (and, but for `runtime`, an annotation of that kind or none). Worked out once per
    function (a method's, once for its class): every compile wraps each node again, and
    reading a signature was a third of a small graph's compile."""
    return _cached_injected_params(getattr(fn, "__func__", fn))


@weakly_cached
def _cached_injected_params(fn: Callable[..., Any]) -> tuple[str, ...]:
    return _injected_params(fn)


def _injected_params(fn: Callable[..., Any]) -> tuple[str, ...]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    wanted = tuple(
        name
        for name in _INJECTED
        if name in params
        and params[name].kind in kinds
        and _asks_for(name, params[name].annotation)
    )
    config = params.get("config")
    if config is not None and config.kind in kinds and "config" not in wanted:
        # Other annotations were once given the config too: say why it no longer comes.
        warnings.warn(
            "The 'config' parameter should be typed as 'RunnableConfig' or "
            f"'RunnableConfig | None', not '{config.annotation}'. As it is, "
            f"{getattr(fn, '__qualname__', fn)!s} is not handed the run's config.",
            UserWarning,
            stacklevel=6,
        )
    return wanted


def runtime_of(config: RunnableConfig) -> Runtime[Any]:
    return (config.get("configurable") or {}).get(CONFIG_KEY_RUNTIME) or DEFAULT_RUNTIME


# The keys `ensure_config` fills in, but for `tags` and `recursion_limit`: a config that
# has them all (as the loop's task configs do) is used as it is, saving a copy per node
# call. A task config has no `tags` when the run has none, and no `recursion_limit` when
# the caller set none (LangGraph's nodes see neither), and ensuring it would also copy
# the task's namespace into its metadata.
_ENSURED = frozenset({"metadata", "callbacks", "configurable"})


def _ensured(config: RunnableConfig | None) -> RunnableConfig:
    if config is not None and config.keys() >= _ENSURED:
        return config
    return ensure_config(config)


class _NoHandlers(AsyncCallbackManager):
    """A callback manager with no handlers whose parent run id is made when first read:
    most calls never read it."""

    _parent: UUID | None

    @property  # type: ignore[override]
    def parent_run_id(self) -> UUID:
        if self._parent is None:
            self._parent = uuid4()
        return self._parent

    @parent_run_id.setter
    def parent_run_id(self, value: UUID | None) -> None:
        self._parent = value


def untraced(config: RunnableConfig) -> RunnableConfig:
    """The config user code runs with when its call has no callbacks: a callback manager
    with no handlers, as LangChain's own calls make one, so that code dispatching custom
    events (`adispatch_custom_event`, which refuses to without a parent run) runs as in
    LangGraph, where every node call is a run."""
    return {**config, "callbacks": _NoHandlers([])}


def injected(names: tuple[str, ...], config: RunnableConfig) -> dict[str, Any]:
    """The keyword arguments for the parts of the run `names` asks for."""
    if not names:
        return {}
    runtime = runtime_of(config)
    values = {
        "config": config,
        "runtime": runtime,
        "store": runtime.store,
        "writer": runtime.stream_writer,
        "error": (config.get("configurable") or {}).get(CONFIG_KEY_NODE_ERROR),
    }
    return {name: values[name] for name in names}


def no_sync_function(name: str | None) -> str:
    """LangGraph's words for async-only code called from a sync path."""
    return (
        f'No synchronous function provided to "{name}".\nEither initialize with a '
        "synchronous function or invoke via the async API (ainvoke, astream, etc.)"
    )


class RunnableCallable(Runnable[Any, Any]):
    """A sync and/or async function as a Runnable.

    With `trace`, a call is a chain run of its own under the caller's callbacks (what
    tracers and `astream_events` see); the function runs with its config as the
    current child config, so Runnables it calls inherit callbacks, tags and metadata.
    A function that returns a Runnable has it invoked on the same input (`recurse`).
    """

    def __init__(
        self,
        func: Callable[..., Any] | None,
        afunc: Callable[..., Awaitable[Any]] | None = None,
        *,
        name: str | None = None,
        tags: list[str] | None = None,
        trace: bool = True,
        recurse: bool = True,
        source: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if func is None and afunc is None:
            raise ValueError("RunnableCallable needs a function or an async function.")
        if afunc is None and func is not None and inspect.iscoroutinefunction(func):
            func, afunc = None, func
        self.func = func
        self.afunc = afunc
        self.name: str | None = name or _own_name(func, afunc)
        self.tags = tags
        self.trace = trace
        self.recurse = recurse
        # The user's function, when `func` only wraps it: the code read for the graphs
        # it calls (its subgraphs' state), as LangGraph reads the user's own function.
        self.source = source
        self.kwargs = kwargs
        self.func_params = injected_params(func) if func is not None else ()
        self.afunc_params = injected_params(afunc) if afunc is not None else ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.name}>"

    def _configure(self, manager: Any, config: RunnableConfig) -> Any:
        return manager.configure(
            config.get("callbacks"),
            inheritable_tags=config.get("tags"),
            local_tags=self.tags,
            inheritable_metadata=config.get("metadata"),
        )

    def _run_start(self, input: Any, config: RunnableConfig, name: str | None) -> dict[str, Any]:
        return {
            "serialized": None,
            "inputs": input,
            "name": config.get("run_name") or name,
            "run_id": config.get("run_id"),
        }

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.func is None:
            raise TypeError(no_sync_function(self.name))
        config = _ensured(config)
        traced = self.trace and config["callbacks"]
        if not config["callbacks"]:
            config = untraced(config)
        if self.kwargs or self.func_params or kwargs:
            kwargs = {**self.kwargs, **injected(self.func_params, config), **kwargs}
        if not traced:
            token = var_child_runnable_config.set(config)
            try:
                output = self.func(input, **kwargs)
            finally:
                var_child_runnable_config.reset(token)
        else:
            run = self._configure(CallbackManager, config).on_chain_start(
                **self._run_start(input, config, self.get_name())
            )
            try:
                output = _child_context(config, run).run(self.func, input, **kwargs)
            except BaseException as exc:
                run.on_chain_error(exc)
                raise
            run.on_chain_end(output)
        if self.recurse and isinstance(output, Runnable):
            return output.invoke(input, config)
        return output

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.afunc is None:
            return await run_in_executor(config, self.invoke, input, config, **kwargs)
        config = _ensured(config)
        traced = self.trace and config.get("callbacks")
        if not config.get("callbacks"):
            config = untraced(config)
        kwargs = {**self.kwargs, **injected(self.afunc_params, config), **kwargs}
        if not traced:
            token = var_child_runnable_config.set(config)
            try:
                output = await self.afunc(input, **kwargs)
            finally:
                var_child_runnable_config.reset(token)
        else:
            # Unnamed (None) here where a sync call names the run after the class:
            # LangGraph's two sides differ so, and tracers show the async one "Unnamed".
            run = await self._configure(AsyncCallbackManager, config).on_chain_start(
                **self._run_start(input, config, self.name)
            )
            context = _child_context(config, run)
            try:
                output = await asyncio.create_task(self.afunc(input, **kwargs), context=context)
            except BaseException as exc:
                await run.on_chain_error(exc)
                raise
            await run.on_chain_end(output)
        if self.recurse and isinstance(output, Runnable):
            return await output.ainvoke(input, config)
        return output


def _own_name(
    func: Callable[..., Any] | None, afunc: Callable[..., Awaitable[Any]] | None
) -> str | None:
    """LangGraph's default name: the sync function's, but none for a lambda; else the
    async function's (a lambda's too)."""
    if func is not None:
        name = getattr(func, "__name__", None)
        return None if name == "<lambda>" else name
    return getattr(afunc, "__name__", None)


def _child_context(config: RunnableConfig, run: Any) -> Context:
    """A context in which Runnables the function calls run as children of `run`.

    The config is the task's as it is, not re-ensured: `ensure_config` would copy the
    task's namespace into the metadata as `checkpoint_ns`, where a graph run inside the
    node on a thread of its own would inherit it, which LangGraph's does not."""
    child = {**config, "callbacks": run.get_child()}
    child.pop("run_name", None)
    child.pop("run_id", None)
    context = copy_context()
    context.run(var_child_runnable_config.set, child)
    return context


@dataclass(frozen=True, slots=True)
class PlainLambda:
    """A `RunnableLambda` node called as LangChain calls it when the call has no
    callbacks, without its per-call work (the config ensured, a callback manager with no
    handlers, its function's signature read again): the function gets the input (and
    the task's config, if it takes one) with that config as the current one, and a
    Runnable it returns is invoked in turn, one level deeper."""

    func: Callable[..., Any]
    afunc: Callable[..., Awaitable[Any]] | None
    func_config: bool
    afunc_config: bool

    @classmethod
    def of(cls, runnable: Runnable[Any, Any] | None) -> PlainLambda | None:
        """None for anything but a plain `RunnableLambda` of a function (and, or, of a
        coroutine function) that takes no run manager: LangChain's call is needed."""
        if type(runnable) is not RunnableLambda:
            return None
        func, afunc = getattr(runnable, "func", None), getattr(runnable, "afunc", None)
        if func is None or inspect.isgeneratorfunction(func):
            return None
        if afunc is not None and not inspect.iscoroutinefunction(afunc):
            return None
        if any(accepts_run_manager(f) for f in (func, afunc) if f is not None):
            return None
        return cls(func, afunc, accepts_config(func), afunc is not None and accepts_config(afunc))

    def invoke(self, input: Any, config: dict[str, Any]) -> Any:
        config = untraced(config)  # type: ignore[arg-type,assignment]
        token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
        try:
            output = self.func(input, config=config) if self.func_config else self.func(input)
        finally:
            var_child_runnable_config.reset(token)
        if isinstance(output, Runnable):
            return output.invoke(input, _deeper(config, output))
        return output

    async def ainvoke(self, input: Any, config: dict[str, Any]) -> Any:
        if self.afunc is None:  # a sync function runs in a worker thread, as LangChain's
            return await asyncio.to_thread(self.invoke, input, config)
        # A task of its own, as LangChain runs it: the run gives the event loop up there,
        # so a reader of its stream is woken between nodes that never wait.
        config = untraced(config)  # type: ignore[arg-type,assignment]
        context = copy_context()
        context.run(var_child_runnable_config.set, config)  # type: ignore[arg-type]
        call = self.afunc(input, config=config) if self.afunc_config else self.afunc(input)
        output = await asyncio.create_task(call, context=context)  # type: ignore[arg-type]
        if isinstance(output, Runnable):
            return await output.ainvoke(input, _deeper(config, output))
        return output


def _deeper(config: dict[str, Any], runnable: Runnable[Any, Any]) -> Any:
    limit = config.get("recursion_limit", DEFAULT_RECURSION_LIMIT)
    if limit <= 0:
        raise RecursionError(f"Recursion limit reached when invoking {runnable}.")
    return {**config, "recursion_limit": limit - 1}
