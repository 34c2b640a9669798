"""The `tools` stream mode: the start and the end (or error) of every LangChain tool a
node calls, as `{"event": "tool-started" | "tool-finished" | "tool-error", ...}` parts."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from engine.errors import GraphDrained, GraphInterrupt
from engine.pregel.messages import Emit, GraphStreamHandler, graph_namespace

__all__ = ["StreamToolsHandler"]


class StreamToolsHandler(GraphStreamHandler):
    """Emits a part when a tool starts and when it ends, keyed by its tool call id (the
    run id for a tool called without one)."""

    def __init__(
        self, emit: Emit, owner: tuple[str, ...], subgraphs: bool, *, observer: bool = False
    ) -> None:
        super().__init__(emit, owner, subgraphs, observer=observer)
        # LangChain names the tool call only at the start: the end is matched by run id.
        self.runs: dict[UUID, tuple[tuple[str, ...], str]] = {}

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        ns = graph_namespace(metadata, tags)
        if ns is None:
            return
        call_id = kwargs.get("tool_call_id") or str(run_id)
        self.runs[run_id] = (ns, call_id)
        payload: dict[str, Any] = {
            "event": "tool-started",
            "tool_call_id": call_id,
            "tool_name": (serialized or {}).get("name") or kwargs.get("name") or "",
        }
        if inputs is not None:
            payload["input"] = inputs
        self.emit(ns, "tools", payload)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> Any:
        found = self.runs.pop(run_id, None)
        if found is not None:
            ns, call_id = found
            payload = {"event": "tool-finished", "tool_call_id": call_id, "output": output}
            self.emit(ns, "tools", payload)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        found = self.runs.pop(run_id, None)
        # A tool that asked a question (or was drained) has not failed: it runs again on
        # resume, and streams its start and end then.
        if found is None or isinstance(error, GraphInterrupt | GraphDrained):
            return
        ns, call_id = found
        payload = {"event": "tool-error", "tool_call_id": call_id, "message": str(error)}
        self.emit(ns, "tools", payload)
