"""The functional API: a plain function as a graph (`@entrypoint`) calling durable
steps (`@task`).

An entrypoint is a one-node graph: its input is the node's input, its return value the
graph's output, and what it saves is handed back as `previous` on the thread's next
call. A task call inside it runs at once (sync functions in a worker thread, async ones
as asyncio tasks) and returns a future; its result is saved with the entrypoint's
writes, so a resumed entrypoint, which runs again from its first line, gets finished
calls' results back instead of redoing them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
import inspect
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar, get_args, get_origin, get_type_hints

from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs, var_child_runnable_config

from engine.cache.base import BaseCache, FullKey
from engine.channels import EphemeralValue, LastValue
from engine.checkpoint.base import BaseCheckpointSaver
from engine.checkpoint.ids import task_id
from engine.checkpoint.serde.jsonplus import allow_schemas
from engine.constants import (
    CALLED_BY,
    END,
    INTERRUPT,
    PREVIOUS,
    PUSH,
    RESUME,
    START,
    TASK_CACHE_NS,
)
from engine.errors import GraphBubbleUp, GraphInterrupt
from engine.foreign import check_engine_object
from engine.pregel import context
from engine.pregel.graph import CompiledGraph
from engine.pregel.messages import show_output
from engine.pregel.node import Node
from engine.pregel.retry import as_policies, retry_delay
from engine.pregel.runnable import RunnableCallable, injected_params, runtime_of, untraced
from engine.pregel.sync import outside_the_loop, running_loop
from engine.pregel.timeouts import TimedAttempt, sync_timeout_error
from engine.store.base import BaseStore
from engine.types import CachePolicy, RetryPolicy, TimeoutPolicy
from engine.warnings import LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10, renamed

__all__ = ["entrypoint", "task"]

R = TypeVar("R")
S = TypeVar("S")
ContextT = TypeVar("ContextT")
_threads = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="engine-task")


@dataclass(frozen=True, slots=True)
class _Call:
    """One call of a task: its id, its place among its caller's calls, its arguments."""

    id: str
    index: int
    args: tuple[Any, ...]
    kw: dict[str, Any]


class _TaskFunction:
    """A `@task`: calling it inside a running entrypoint (or node) returns a future."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None,
        retry_policy: tuple[RetryPolicy, ...],
        cache_policy: CachePolicy | None,
        timeout: TimeoutPolicy | None,
    ) -> None:
        self.cache_policy = cache_policy
        self.func = func
        # The classes its annotations name, which its calls' saved results may hold.
        self.types = list(_hints(func).values())
        self.signature = inspect.signature(func)
        # What its parameters ask the run for by name, as a node's do (`writer`, ...).
        self.injected = injected_params(func)
        self.name = name or _name_of(func)
        self.retry_policy = retry_policy
        if timeout is not None and not _is_async(func):
            raise sync_timeout_error(self.name, kind="Task")
        self.timeout = timeout
        functools.update_wrapper(self, func)
        if name is not None:  # the name given is the task's `__name__`, as in LangGraph
            self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        pad = context.peek()
        if pad is None or pad.loop is None:
            raise RuntimeError(
                f"Task '{self.name}' was called outside of an entrypoint or graph node: "
                "call it from inside one, or call the function directly."
            )
        if self.types and pad.loop.saver is not None:
            allow_schemas(pad.loop.saver, self.types)
        index = pad.call_counter
        pad.call_counter += 1
        call_id = task_id(
            pad.loop.checkpoint_id, context.asking_ns(pad), pad.step, self.name, "call", index
        )
        pad.loop.emit_call_start(pad.node, call_id, self.name, (args, kwargs))
        asynchronous = _is_async(self.func)
        here = running_loop() if asynchronous else None
        if call_id in pad.call_results:
            return _done(pad.call_results[call_id], here)
        run_context = contextvars.copy_context()
        call = self._run(pad, _Call(call_id, index, args, kwargs))
        future: Any
        if asynchronous and here is not None:
            future = here.create_task(call, context=run_context)
        elif asynchronous and pad.events is not None:
            # Sync code in a worker thread (a sync entrypoint under `ainvoke`): the call
            # runs on the run's event loop, where the objects it uses were made.
            future = _Future.following(asyncio.run_coroutine_threadsafe(call, pad.events))
        else:
            future = _Future.following(_threads.submit(run_context.run, asyncio.run, call))
        pad.started.append(future)
        return future

    def clear_cache(self, cache: BaseCache) -> None:
        """Forget this task's cached results."""
        cache.clear([(TASK_CACHE_NS, self.name)])

    async def aclear_cache(self, cache: BaseCache) -> None:
        await cache.aclear([(TASK_CACHE_NS, self.name)])

    def _cache_key(self, pad: context.Scratchpad, call: _Call) -> FullKey | None:
        """Where a result of the call is cached: by the task's name and its arguments'
        key, in the graph's cache; None when the task or the graph has none."""
        if self.cache_policy is None or pad.loop.cache is None:
            return None
        key = self.cache_policy.key_func(*call.args, **call.kw)
        return ((TASK_CACHE_NS, self.name), key.hex() if isinstance(key, bytes) else str(key))

    async def _run(self, pad: context.Scratchpad, call: _Call) -> Any:
        """Call the function (a sync one runs this in its worker thread's own event
        loop) with its retry policy, and keep the result for the task's writes.

        The call asks its own questions: `interrupt()` in it numbers them from its own
        first, and takes the answers saved for this call, so a call whose result was
        saved (and is not run again) takes none of the others'."""
        asking = dataclasses.replace(
            pad,
            task_id=call.id,
            call_path="|".join(filter(None, [pad.call_path, f"{self.name}:{call.id}"])),
            resume=list(pad.call_answers.get(call.id, ())),
            counter=0,
            taken=[],
            handed_down=False,
            call_counter=0,
            call_writes={},
        )
        if pad.config:
            asking.config = self._call_config(pad.config, context.asking_ns(asking), call)
        _write_at_caller(pad, asking)
        # As in LangGraph, the messages a call is given are not news to the `messages`
        # stream when its caller returns them again.
        pad.loop.mark_messages_seen([*call.args, *call.kw.values()])
        cache_key = self._cache_key(pad, call)
        if cache_key is not None:
            found = (await pad.loop.cache.aget([cache_key])).get(cache_key)
            if found is not None:  # kept as [value]: a None result is cached too
                return self._finished(pad, call, found[0], cached=True)
        failures = 0
        while True:
            asking.counter = 0
            token = context.enter(asking)
            try:
                if pad.timer is not None:
                    pad.timer.progress()  # a task call is progress of its caller
                if self.timeout is None:
                    value = await self._attempt(asking, call, None)
                else:
                    timer = TimedAttempt(self.name, self.timeout)
                    value = await timer.run(self._attempt(asking, call, timer.watcher()))
                break
            except GraphBubbleUp as exc:
                _stopped(pad, asking, exc)
                raise
            except Exception as exc:
                failures += 1
                delay = retry_delay(self.retry_policy, exc, failures)
                if delay is None:
                    _stopped(pad, asking, exc)
                    pad.loop.emit_call_end(pad.node, call.id, self.name, exc)
                    raise
                await asyncio.sleep(delay)
            finally:
                context.leave(token)
        pad.call_writes.update(asking.call_writes)
        if cache_key is not None:
            await pad.loop.cache.aset({cache_key: ([value], self.cache_policy.ttl)})  # type: ignore[union-attr]
        return self._finished(pad, call, value, cached=False)

    def _finished(self, pad: context.Scratchpad, call: _Call, value: Any, *, cached: bool) -> Any:
        """Keep the call's result for the task's writes, and show it: its update, then
        (unless cached) its result as a task's, in LangGraph's order."""
        pad.finished_calls.append((call.id, value))
        loop = pad.loop
        if "updates" in loop.modes:
            update = {self.name: value}
            if cached:
                update["__metadata__"] = {"cached": True}
            loop.emit(loop.ns, "updates", update)
        if not cached:
            loop.emit_call_end(pad.node, call.id, self.name, None, value)
        return value

    def _call_config(self, config: RunnableConfig, ns: str, call: _Call) -> RunnableConfig:
        """The config of a call made by the code that `config` is the config of: it names
        the call's namespace (where a graph its code invokes runs), and its metadata is a
        task's (its node name, path and namespace, under its caller's), as LangGraph's
        task calls' configs are."""
        metadata = config.get("metadata") or {}
        metadata = {
            **metadata,
            "langgraph_node": self.name,
            "langgraph_triggers": (PUSH,),
            "langgraph_path": (PUSH, metadata.get("langgraph_path"), call.index, True),
            "langgraph_checkpoint_ns": ns,
        }
        configurable = {**config.get("configurable", {}), "checkpoint_ns": ns}
        return {**config, "metadata": metadata, "configurable": configurable}

    async def _attempt(
        self, pad: context.Scratchpad, call: _Call, watcher: BaseCallbackHandler | None
    ) -> Any:
        """One call of the function; with callbacks, a chain run named after the task
        that the runs of its code nest under, with the call's metadata (see
        `_call_config`), as LangGraph's task runs are.
        `watcher` (of the call's idle timeout) is told of every event under it."""
        config = pad.config
        callbacks = config.get("callbacks")
        if watcher is not None:
            callbacks = merge_configs({"callbacks": callbacks}, {"callbacks": [watcher]})[
                "callbacks"
            ]
        if not callbacks:
            # `get_config()` in the call's code is the call's (naming its namespace).
            config = untraced(config) if config else config
            token = var_child_runnable_config.set(config) if config else None
            try:
                value = self._call_func(call, self._keywords(pad, call, config))
                return await value if inspect.isawaitable(value) else value
            finally:
                if token is not None:
                    var_child_runnable_config.reset(token)
        metadata = config.get("metadata") or {}
        ns = context.asking_ns(pad)
        manager = AsyncCallbackManager.configure(
            callbacks, inheritable_tags=config.get("tags"), inheritable_metadata=metadata
        )
        bound = self.signature.bind_partial(*call.args, **call.kw)
        run = await manager.on_chain_start(None, dict(bound.arguments), name=self.name)
        # What the call's code runs (a chat model) is marked with the call's namespace,
        # the call's own run is not, and is the first step of the call's run (the
        # function is the first of LangGraph's task's steps): as LangGraph marks them.
        child = {
            **config,
            "metadata": {**metadata, "checkpoint_ns": ns},
            "callbacks": run.get_child("seq:step:1"),
        }
        token = var_child_runnable_config.set(child)
        try:
            value = self._call_func(call, self._keywords(pad, call, child))
            if inspect.isawaitable(value):
                value = await value
        except BaseException as exc:
            await run.on_chain_error(exc)
            raise
        finally:
            var_child_runnable_config.reset(token)
        await show_output(run, value)
        await run.on_chain_end(value)
        return value

    def _call_func(self, call: _Call, keywords: dict[str, Any]) -> Any:
        """Call the function; a sync one with its worker thread's event loop set aside,
        as sync code runs: an async task it calls then runs on the run's loop (or a
        loop of its own), where this loop, blocked by the function, could never run it."""
        if _is_async(self.func):
            return self.func(*call.args, **keywords)
        with outside_the_loop():
            return self.func(*call.args, **keywords)

    def _keywords(
        self, pad: context.Scratchpad, call: _Call, config: RunnableConfig
    ) -> dict[str, Any]:
        """The call's keyword arguments, with what its parameters ask the run for and
        the caller did not pass."""
        if not self.injected:
            return call.kw
        passed = self.signature.bind_partial(*call.args, **call.kw).arguments
        runtime = pad.runtime
        values = {
            "config": config,
            "runtime": runtime,
            "store": runtime.store,
            "writer": runtime.stream_writer,
        }
        return {**{n: values[n] for n in self.injected if n not in passed}, **call.kw}


def _write_at_caller(pad: context.Scratchpad, asking: context.Scratchpad) -> None:
    """A call's `custom` parts carry its caller's namespace (the node's task, then the
    calls it is made in), as in LangGraph. A stream without subgraphs drops them in a
    subgraph, as it drops any part of one, but shows those of a call in the top graph
    as parts of the run: they go out as the caller's there."""
    loop = pad.loop
    if "custom" not in loop.modes or not (loop.ns or loop.subgraphs):
        return
    caller = (*pad.task_ns.split("|"), *filter(None, pad.call_path.split("|")))

    def write(chunk: Any) -> None:
        loop.emit(caller, "custom", chunk)

    asking.writer = write if pad.timer is None else pad.timer.guard(write)
    asking.runtime = pad.runtime.override(stream_writer=asking.writer)


def _stopped(pad: context.Scratchpad, asking: context.Scratchpad, exc: BaseException) -> None:
    """What the caller saves under the id of a call that stopped without a result: the
    question it asked (an interrupt stops its callers too, but a resume by that
    question's id is the call's), and the answers it took."""
    writes: list[tuple[str, Any]] = []
    if isinstance(exc, GraphInterrupt):
        writes.append((INTERRUPT, list(exc.interrupts)))
    if asking.taken or asking.handed_down:
        writes.append((RESUME, list(asking.resume)))
    pad.call_writes.update(asking.call_writes)
    if writes:
        pad.call_writes[asking.task_id] = [(CALLED_BY, pad.task_id), *writes]


def _name_of(func: Callable[..., Any]) -> str:
    """A task's default name: its function's (a partial's, the function it wraps)."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


def _is_async(func: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(func)


class _Future(concurrent.futures.Future[Any]):
    """A task call's future where no asyncio task can be: sync code takes its
    `result()`, async code may await it (as LangGraph's futures of sync tasks)."""

    @classmethod
    def following(cls, source: concurrent.futures.Future[Any]) -> _Future:
        future = cls()

        def copy(done: concurrent.futures.Future[Any]) -> None:
            if done.cancelled():  # the run's event loop closed with the call unfinished
                future.cancel()
                return
            error = done.exception()
            if error is None:
                future.set_result(done.result())
            else:
                future.set_exception(error)

        source.add_done_callback(copy)
        return future

    def __await__(self) -> Generator[Any, None, Any]:
        return asyncio.wrap_future(self).__await__()


def _done(value: Any, loop: asyncio.AbstractEventLoop | None) -> Any:
    """A finished future for a result saved by an earlier attempt: an asyncio one for
    an async task called on an event loop, as a new call would give."""
    done: Any = loop.create_future() if loop is not None else _Future()
    done.set_result(value)
    return done


def task(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
    retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
) -> Any:
    """Make `func` a durable step of an entrypoint: `@task` or `@task(retry_policy=...)`.
    `timeout` caps each attempt of an async task's call; with `cache_policy`, a call's
    result is kept in the entrypoint's cache by the task's name and its arguments
    (`retry` is the old name of `retry_policy`)."""
    policy = TimeoutPolicy.coerce(timeout)
    retry_policy = renamed(
        "retry", retry, "retry_policy", retry_policy, LangGraphDeprecatedSinceV05
    )

    def wrap(fn: Callable[..., Any]) -> _TaskFunction:
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise NotImplementedError("Generators are not supported as tasks.")
        return _TaskFunction(
            fn,
            name=name,
            retry_policy=as_policies(retry_policy),
            cache_policy=cache_policy,
            timeout=policy,
        )

    return wrap if func is None else wrap(func)


class entrypoint(Generic[ContextT]):  # noqa: N801  (LangGraph's name, used as a decorator)
    """Turn a function of one input into a graph with a checkpointer, store and cache.

    The function may also take `previous` (what its last call on this thread saved),
    `config`, `runtime`, `store` and `writer`. Return `entrypoint.final(value=...,
    save=...)` to return one thing and save another for the next call.
    """

    def __init__(
        self,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        cache: BaseCache | None = None,
        context_schema: type[ContextT] | None = None,
        cache_policy: CachePolicy | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        config_schema: type[ContextT] | None = None,
        retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
    ) -> None:
        # `config_schema` and `retry`: LangGraph's old names of the schema and policy.
        context_schema = renamed(
            "config_schema",
            config_schema,
            "context_schema",
            context_schema,
            LangGraphDeprecatedSinceV10,
        )
        retry_policy = renamed(
            "retry", retry, "retry_policy", retry_policy, LangGraphDeprecatedSinceV05
        )
        for value, where in ((checkpointer, "checkpointer"), (store, "store")):
            if value is not None:
                check_engine_object(value, where)
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.context_schema = context_schema
        self.cache_policy = cache_policy
        self.retry_policy = as_policies(retry_policy)
        self.timeout = TimeoutPolicy.coerce(timeout)

    @dataclass(frozen=True, slots=True)
    class final(Generic[R, S]):  # noqa: N801
        """What the entrypoint returns (`value`) and what it saves as `previous` (`save`)."""

        value: R
        save: S

    def __call__(self, func: Callable[..., Any]) -> CompiledGraph:
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise NotImplementedError("Generators are not supported as entrypoints.")
        params = inspect.signature(func).parameters
        if not params:
            raise ValueError("An entrypoint function takes at least one parameter: its input.")
        _check_final_annotation(func)
        name = func.__name__
        if self.timeout is not None and not _is_async(func):
            raise sync_timeout_error(name)
        runnable = _bound(func, params)
        hints = _hints(func)

        def write(output: Any, _channels: dict[str, Any]) -> list[tuple[str, Any]]:
            if isinstance(output, entrypoint.final):
                return [(END, output.value), (PREVIOUS, output.save)]
            return [(END, output), (PREVIOUS, output)]

        node = Node(
            name=name,
            triggers=(START,),
            runnable=runnable,
            is_async=_is_async(func),
            read=lambda channels, *_: channels[START].get(),
            write=write,
            retry_policy=self.retry_policy,
            cache_policy=self.cache_policy,
            timeout=self.timeout,
        )
        return CompiledGraph(
            nodes={name: node},
            channels={
                START: lambda: EphemeralValue(key=START),
                END: lambda: LastValue(key=END),
                PREVIOUS: lambda: LastValue(key=PREVIOUS),
            },
            state_keys=(END, PREVIOUS),
            input_keys=(START,),
            output_keys=(END,),
            checkpointer=self.checkpointer,
            interrupt_before=(),
            interrupt_after=(),
            # Named as any unnamed graph is (its node has the function's name), as in LangGraph.
            name="LangGraph",
            builder=None,
            # The classes its annotations name are its state's: the saver restores them.
            state_types=list(hints.values()),
            goto=_no_goto,
            store=self.store,
            cache=self.cache,
            context_schema=self.context_schema,
            output_channel=END,
            value_types=_value_types(func, hints),
            stream_eager=True,
        )


def _no_goto(goto: Any) -> list[tuple[str, Any]]:
    raise ValueError("An entrypoint has one node: there is nowhere to go to.")


def _hints(func: Callable[..., Any]) -> dict[str, Any]:
    """A function's annotations, resolved; none where one does not resolve (it then
    says nothing of the type)."""
    try:
        return get_type_hints(func)
    except Exception:
        return {}


def _value_types(func: Callable[..., Any], hints: dict[str, Any]) -> tuple[Any, Any]:
    """An entrypoint's input and output types: its first parameter's annotation and its
    return annotation (of `entrypoint.final[R, S]`, R); Any where there is none."""
    first = next(iter(inspect.signature(func).parameters))
    returned = hints.get("return", Any)
    if get_origin(returned) is entrypoint.final:
        returned = get_args(returned)[0]
    elif returned is entrypoint.final:  # final without its types: any value
        returned = Any
    return hints.get(first, Any), returned


def _check_final_annotation(func: Callable[..., Any]) -> None:
    hint = inspect.signature(func).return_annotation
    if get_origin(hint) is entrypoint.final and len(get_args(hint)) != 2:
        raise TypeError("Annotate entrypoint.final with both types: entrypoint.final[R, S].")


def _bound(func: Callable[..., Any], params: Any) -> RunnableCallable:
    """The function as a node: its input first, then what its other parameters name."""
    wanted = [*(["previous"] if "previous" in params else []), *injected_params(func)]

    def extras(config: RunnableConfig) -> dict[str, Any]:
        runtime = runtime_of(config)
        values = {
            "previous": runtime.previous,
            "config": config,
            "runtime": runtime,
            "store": runtime.store,
            "writer": runtime.stream_writer,
        }
        return {n: values[n] for n in wanted}

    if _is_async(func):

        async def acall(value: Any, config: RunnableConfig) -> Any:
            return await func(value, **extras(config))

        return RunnableCallable(None, acall, name=func.__name__, trace=False, source=func)

    def call(value: Any, config: RunnableConfig) -> Any:
        return func(value, **extras(config))

    return RunnableCallable(call, name=func.__name__, trace=False, source=func)
