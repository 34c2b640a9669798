"""Sync calls of a graph (`invoke`, `stream`, `get_state`, ...) run its async code on
an event loop of the calling thread's own, kept for the thread's next sync call: making
and closing a loop per call (`asyncio.run`) cost about 100 us, more than a small graph's
whole run. A call made while that loop is busy (a sync stream still being read, or a
sync node's code: it runs with the loop set aside, `outside_the_loop`) gets a loop of
its own, and a call from async code, which runs on a loop that cannot be entered again,
runs in a thread of its own."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
# A run that hands each part it makes to the first argument, and awaits the second
# (when given) before each step.
Start = Callable[
    [Callable[[T], None], Callable[[], Awaitable[None]] | None], Coroutine[Any, Any, Any]
]


class _Loop:
    """A thread's loop for its sync calls; closed when the thread ends (its locals go)."""

    def __init__(self) -> None:
        self.loop = _new_loop()
        self.busy = False

    def __del__(self) -> None:
        if not self.loop.is_closed():
            self.loop.close()


_here = threading.local()


@contextlib.contextmanager
def _sync_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """This thread's loop for one sync call (or a loop of the call's own, while this
    thread's serves another call). A call that ends in an exception (a graph's error, a
    KeyboardInterrupt) may leave tasks half done: their loop is closed, and the next
    call makes a new one."""
    kept: _Loop | None = getattr(_here, "kept", None)
    if kept is None or kept.loop.is_closed():
        kept = _here.kept = _Loop()
    if kept.busy:
        loop = _new_loop()
        try:
            yield loop
        finally:
            _close(loop)
        return
    kept.busy = True
    try:
        yield kept.loop
        _cancel_leftovers(kept.loop)
    except GeneratorExit:
        # A reader that stopped reading a stream: the stream stopped its run first, so
        # the loop is as any call leaves it, and stays this thread's.
        _cancel_leftovers(kept.loop)
        raise
    except BaseException:
        _here.kept = None
        _close(kept.loop)
        raise
    finally:
        kept.busy = False


def _new_loop() -> asyncio.AbstractEventLoop:
    """A loop made in an empty context: it keeps the context it was made in (its wake-up
    handle's), and a thread's kept loop made during a run, inside a node, would keep
    that run's loop and state alive as long as the thread."""
    return contextvars.Context().run(asyncio.new_event_loop)


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what a call left running, as `asyncio.run` does at its end, so that it
    cannot run during the thread's next call."""
    tasks = asyncio.all_tasks(loop)
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does after its coroutine: cancel what is left, finish async
    generators and the default executor, close."""
    try:
        _cancel_leftovers(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


@contextlib.contextmanager
def outside_the_loop() -> Iterator[None]:
    """Run a sync node inline as LangGraph's sync calls run it, with no event loop: its
    code may call `asyncio.run`, or a checkpointer's sync methods, and a sync call of a
    graph it makes runs here on a loop of its own (see `_sync_loop`)."""
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(loop)


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code, also when this thread already has a loop."""
    if running_loop() is None:
        # Outside the `except` of the probe, so that an error of the run is not shown
        # as raised "during handling of" the probe's RuntimeError.
        with _sync_loop() as loop:
            return loop.run_until_complete(make())
    result: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(make()))
        except BaseException as exc:
            failure.append(exc)

    # The running node's context goes along, so a graph invoked there finds its parent.
    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,))
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def iterate_sync(start: Start[T]) -> Iterator[T]:
    """Iterate, from sync code, the parts a run hands to `deliver` as it makes them
    (`start(deliver, pause)` is the run), also when this thread has a loop. The run
    awaits `pause()` before each step: there it waits until the reader has taken the
    parts so far and asks for more, so that a reader that stops early stops the run at
    the step it read."""
    if running_loop() is None:
        return _iterate_here(start)
    # Called from sync code that runs on an event loop (a node of a graph run with
    # `invoke`): this thread's loop is busy, so the run goes in a thread of its own.
    return iter(run_sync(lambda: _collect(start)))


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _collect(start: Start[T]) -> list[T]:
    parts: list[T] = []
    await start(parts.append, None)
    return parts


def _iterate_here(start: Start[T]) -> Iterator[T]:
    """The run as a task on this thread's loop, which the reader runs until a part
    arrives: two turns of the loop a part, where reading an async iterator made a task
    for each part and woke it, and the run, through events (four turns)."""
    with _sync_loop() as loop:
        parts: deque[T] = deque()
        arrived: asyncio.Future[None] = loop.create_future()
        asked: asyncio.Future[None] = loop.create_future()

        def deliver(part: T) -> None:
            parts.append(part)
            _resolve(arrived)

        async def pause() -> None:
            nonlocal asked
            if parts:
                asked = loop.create_future()
                await asked

        runner = loop.create_task(start(deliver, pause))
        runner.add_done_callback(lambda _: _resolve(arrived))
        try:
            while True:
                while parts:
                    yield parts.popleft()
                if runner.done():
                    break
                arrived = loop.create_future()
                _resolve(asked)
                loop.run_until_complete(arrived)
            runner.result()
        finally:
            if not runner.done():
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    loop.run_until_complete(runner)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
