"""A LangChain Runnable given as a node, run inside the node's callback run as LangGraph
runs one: a sequence's steps are the node's own steps (LangGraph flattens a sequence
into the node's), each a run tagged `seq:step:N` under the node's run; and under a
streaming handler (`astream_events`), the Runnable streams, its chunks added up being
the node's output.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForChainRun
from langchain_core.runnables import Runnable, RunnableSequence

__all__ = ["added_up", "ainvoke_steps", "astream_steps", "invoke_steps", "steps_of"]


def steps_of(runnable: Runnable[Any, Any]) -> Sequence[Runnable[Any, Any]]:
    """The node's steps: a sequence's, or the Runnable alone."""
    return runnable.steps if isinstance(runnable, RunnableSequence) else (runnable,)


def _config(config: dict[str, Any], run: AsyncCallbackManagerForChainRun, step: int) -> Any:
    return {**config, "callbacks": run.get_child(f"seq:step:{step}")}


async def ainvoke_steps(
    steps: Sequence[Runnable[Any, Any]],
    value: Any,
    config: dict[str, Any],
    run: AsyncCallbackManagerForChainRun,
) -> Any:
    for step, runnable in enumerate(steps, start=1):
        value = await runnable.ainvoke(value, _config(config, run, step))
    return value


def invoke_steps(
    steps: Sequence[Runnable[Any, Any]],
    value: Any,
    config: dict[str, Any],
    run: AsyncCallbackManagerForChainRun,
) -> Any:
    for step, runnable in enumerate(steps, start=1):
        value = runnable.invoke(value, _config(config, run, step))
    return value


def astream_steps(
    steps: Sequence[Runnable[Any, Any]],
    value: Any,
    config: dict[str, Any],
    run: AsyncCallbackManagerForChainRun,
) -> AsyncIterator[Any]:
    """The last step's chunks, each step taking the stream of the one before it."""
    stream: AsyncIterator[Any] = _once(value)
    for step, runnable in enumerate(steps, start=1):
        stream = runnable.atransform(stream, _config(config, run, step))
    return stream


async def added_up(chunks: AsyncIterator[Any]) -> Any:
    """A stream's chunks added together (the last one where they cannot be), as a
    LangChain Runnable that takes a stream does with its input."""
    output, started = None, False
    async for chunk in chunks:
        if not started:
            output, started = chunk, True
            continue
        try:
            output = output + chunk
        except TypeError:
            output = chunk
    return output


async def _once(value: Any) -> AsyncIterator[Any]:
    yield value
