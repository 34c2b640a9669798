"""A LangChain Runnable given as a node, run inside the node's callback run as LangGraph
runs one: a sequence's steps are the node's own steps (LangGraph flattens a sequence
into the node's), each a run tagged `seq:step:N` under the node's run; and under a
streaming handler (`astream_events`), the Runnable streams, its chunks added up being
the node's output.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForChainRun
from langchain_core.runnables import Runnable, RunnableSequence

__all__ = ["NodeChain", "added_up", "once", "steps_of"]


def steps_of(runnable: Runnable[Any, Any]) -> Sequence[Runnable[Any, Any]]:
    """The node's steps: a sequence's, or the Runnable alone."""
    return runnable.steps if isinstance(runnable, RunnableSequence) else (runnable,)


@dataclass(frozen=True, slots=True)
class NodeChain:
    """A Runnable given as a node, run in the node's callback run `run` with the task's
    `config`: each step a run of its own under it, tagged with its place."""

    steps: Sequence[Runnable[Any, Any]]
    config: dict[str, Any]
    run: AsyncCallbackManagerForChainRun

    def _config(self, step: int) -> Any:
        return {**self.config, "callbacks": self.run.get_child(f"seq:step:{step}")}

    def invoke(self, value: Any) -> Any:
        for step, runnable in enumerate(self.steps, start=1):
            value = runnable.invoke(value, self._config(step))
        return value

    async def ainvoke(self, value: Any) -> Any:
        for step, runnable in enumerate(self.steps, start=1):
            value = await runnable.ainvoke(value, self._config(step))
        return value

    def astream(self, value: Any) -> AsyncIterator[Any]:
        """The last step's chunks, each step taking the stream of the one before it."""
        stream: AsyncIterator[Any] = once(value)
        for step, runnable in enumerate(self.steps, start=1):
            stream = runnable.atransform(stream, self._config(step))
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


async def once(value: Any) -> AsyncIterator[Any]:
    """`value` as a stream of one chunk."""
    yield value
