"""What tracers record of a node's run, under its `TracePolicy`.

A policy transforms the input and output that tracers (LangSmith's, a console tracer)
keep of the node's own run, to keep large payloads (a long message history) out of
them. Every other handler (`astream_events`, the stream modes) and the node itself see
the real values.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManager, AsyncCallbackManagerForChainRun
from langchain_core.tracers._streaming import _StreamingCallbackHandler
from langchain_core.tracers.base import BaseTracer

from engine.types import TracePolicy

log = logging.getLogger(__name__)
M = TypeVar("M", AsyncCallbackManager, AsyncCallbackManagerForChainRun)


async def start_run(
    manager: AsyncCallbackManager, value: Any, name: str, policy: TracePolicy | None
) -> AsyncCallbackManagerForChainRun:
    """The node's run, started with `value` as its input (tracers get it processed)."""
    recorded = _processed(value, policy and policy.process_inputs)
    if recorded is value:
        return await manager.on_chain_start(None, value, name=name)
    others, tracers = _split(manager)
    run = await others.on_chain_start(None, value, name=name)
    await tracers.on_chain_start(None, recorded, name=name, run_id=run.run_id)
    run.handlers = manager.handlers
    return run


async def end_run(
    run: AsyncCallbackManagerForChainRun, output: Any, policy: TracePolicy | None
) -> None:
    recorded = _processed(output, policy and policy.process_outputs)
    if recorded is output:
        await run.on_chain_end(output)
        return
    others, tracers = _split(run)
    await tracers.on_chain_end(recorded)
    await others.on_chain_end(output)


def _processed(value: Any, process: Callable[[Any], Any] | None) -> Any:
    """What tracers record of `value`: the value itself if there is no processor, or if
    it fails (a processor never fails the node)."""
    if process is None:
        return value
    try:
        return process(value)
    except Exception:
        log.exception("A trace policy's processor raised; the value is recorded as it is")
        return value


def _split(manager: M) -> tuple[M, M]:
    """The manager's other handlers, and its tracers (less those that feed a stream,
    as `astream_log`'s does)."""
    others, tracers = copy.copy(manager), copy.copy(manager)
    tracers.handlers = [
        h
        for h in manager.handlers
        # By inheritance: any handler with the tap methods matches the protocol.
        if isinstance(h, BaseTracer) and _StreamingCallbackHandler not in type(h).__mro__
    ]
    others.handlers = [h for h in manager.handlers if h not in tracers.handlers]
    return others, tracers
