"""Node timeouts: one attempt of an async node raced against its `TimeoutPolicy`.

The node's code runs in a task of its own, so that the attempt can be given up the
moment a clock runs out, whatever the code does with the cancellation: a node that
swallows `CancelledError` is left to finish in the background, and what it streams or
returns after that is dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import weakref
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any, Literal, TypeVar

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableLambda,
    RunnableParallel,
    RunnableSequence,
)

from engine.errors import NodeTimeoutError
from engine.pregel.runnable import RunnableCallable
from engine.types import TimeoutPolicy

T = TypeVar("T")

_SYNC = (
    "Node timeouts are only supported for async nodes because sync Python execution "
    "cannot be safely cancelled in-process."
)


def sync_timeout_error(name: str, *, kind: Literal["Node", "Task"] = "Node") -> ValueError:
    """The error for a timeout given to code that cannot be cancelled."""
    return ValueError(f"{_SYNC} {kind} {name!r} is sync.")


def natively_async(action: Any) -> bool:
    """Whether a node's code is async all the way, so that an attempt of it can be
    cancelled: a coroutine function, a Runnable with async code of its own (a lambda
    given `afunc`, a compiled graph), or a chain or parallel of such Runnables."""
    while isinstance(action, RunnableBinding):
        action = action.bound
    if isinstance(action, RunnableSequence):
        return all(natively_async(step) for step in action.steps)
    if isinstance(action, RunnableParallel):
        return all(natively_async(step) for step in action.steps__.values())
    if isinstance(action, RunnableLambda):
        return getattr(action, "afunc", None) is not None
    if isinstance(action, RunnableCallable):
        return action.afunc is not None
    if isinstance(action, Runnable):
        return type(action).ainvoke is not Runnable.ainvoke
    call = action if inspect.isfunction(action) or inspect.ismethod(action) else action.__call__
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(action)


class TimedAttempt:
    """The clocks of one attempt: its start and its last sign of progress."""

    def __init__(self, name: str, policy: TimeoutPolicy) -> None:
        self.name = name
        self.policy = policy
        self.auto = policy.refresh_on == "auto"
        self.open = True
        self.last = time.monotonic()

    def heartbeat(self) -> None:
        """Progress the code reports itself (`runtime.heartbeat()`), in either mode."""
        self.last = time.monotonic()

    def progress(self) -> None:
        """Progress the engine sees (a stream write, a callback event, a task call);
        counts only under `refresh_on="auto"`."""
        if self.auto:
            self.last = time.monotonic()

    def guard(self, writer: Callable[[Any], None]) -> Callable[[Any], None]:
        """`writer` counting as progress, and dropping what is written once the
        attempt has been given up."""

        def write(chunk: Any) -> None:
            if self.open:
                self.progress()
                writer(chunk)

        return write

    def watcher(self) -> BaseCallbackHandler | None:
        """A callback handler that counts every event under the node as progress, when
        such events count."""
        if self.auto and self.policy.idle_timeout is not None:
            return _ProgressHandler(self)
        return None

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """`work`'s result, or NodeTimeoutError once a clock runs out."""
        start = self.last = time.monotonic()
        job = asyncio.ensure_future(work)
        clock = asyncio.ensure_future(self._expiry(start))
        try:
            await asyncio.wait({job, clock}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._abandon(job)
            raise
        finally:
            clock.cancel()
        if job.done():  # finished in time, even if the clock ran out as it did
            return job.result()
        kind = clock.result()
        self._abandon(job)
        raise NodeTimeoutError(
            self.name,
            time.monotonic() - start,
            kind=kind,
            idle_timeout=_float(self.policy.idle_timeout),
            run_timeout=_float(self.policy.run_timeout),
        )

    def _abandon(self, job: asyncio.Future[Any]) -> None:
        self.open = False
        job.cancel()
        job.add_done_callback(_retrieve)

    async def _expiry(self, start: float) -> Literal["idle", "run"]:
        run = _float(self.policy.run_timeout)
        idle = _float(self.policy.idle_timeout)
        while True:
            due: list[tuple[float, Literal["idle", "run"]]] = []
            if run is not None:
                due.append((start + run, "run"))
            if idle is not None:
                due.append((self.last + idle, "idle"))
            when, kind = min(due)
            left = when - time.monotonic()
            if left <= 0:
                return kind
            await asyncio.sleep(left)


def _float(value: Any) -> float | None:
    # Policies reach the loop coerced to seconds (TimeoutPolicy.coerce).
    return None if value is None else float(value)


def _retrieve(job: asyncio.Future[Any]) -> None:
    """Mark an abandoned attempt's outcome as seen, so asyncio does not log it."""
    with suppress(asyncio.CancelledError, Exception):
        job.exception()


class _ProgressHandler(BaseCallbackHandler):
    """Counts any LangChain event under the node's run (a token, a tool's start, a
    nested node's run) as progress. Inherited by the runs below the node only, and
    holding its attempt weakly: a manager kept after the attempt does not keep it."""

    run_inline = True

    def __init__(self, attempt: TimedAttempt) -> None:
        self._attempt = weakref.ref(attempt)

    def _progress(self, *_args: Any, **_kwargs: Any) -> None:
        attempt = self._attempt()
        if attempt is not None:
            attempt.progress()

    on_llm_start = on_chat_model_start = on_llm_new_token = on_llm_end = on_llm_error = _progress
    on_chain_start = on_chain_end = on_chain_error = _progress
    on_tool_start = on_tool_end = on_tool_error = _progress
    on_retriever_start = on_retriever_end = on_retriever_error = _progress
    on_agent_action = on_agent_finish = on_text = on_retry = on_custom_event = _progress
