"""The `messages` stream mode: every token of every LangChain chat model a node calls.

A callback handler rides along in the run's config; LangChain hands it each chunk a
chat model streams, with the metadata of the task that called the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, LLMResult
from langchain_core.tracers._streaming import _StreamingCallbackHandler

from engine.constants import TAG_NOSTREAM

__all__ = ["StreamMessagesHandler"]

Emit = Callable[[tuple[str, ...], str, Any], None]


class StreamMessagesHandler(BaseCallbackHandler, _StreamingCallbackHandler):
    """Emits `(message chunk, metadata)` for chat models called inside nodes; a reply
    that was not streamed is emitted whole when the model returns."""

    run_inline = True

    def __init__(self, emit: Emit, owner: tuple[str, ...], subgraphs: bool) -> None:
        self.default_emit = emit
        # The namespace of the call that streams, and whether its consumer sees the
        # parts of subgraphs: a message it does not see is not yet "seen", and is
        # streamed whole when the subgraph's node returns it (as LangGraph does).
        self.owner = owner
        self.subgraphs = subgraphs
        # Each graph of the run (a subgraph, a graph run inside a node) streams through
        # its own loop's emit, so a consumer of that graph's own stream sees its parts.
        self.emitters: dict[tuple[str, ...], Emit] = {}
        # Ids of messages already streamed: a node that returns the model's reply must
        # not show it a second time (shared with every loop of the run).
        self.seen: set[str] = set()
        self.runs: dict[UUID, tuple[tuple[str, ...], dict[str, Any]]] = {}

    def emit(self, ns: tuple[str, ...], mode: str, payload: Any) -> None:
        self.emitters.get(ns, self.default_emit)(ns, mode, payload)

    def visible(self, ns: tuple[str, ...]) -> bool:
        owner = self.owner
        return ns[: len(owner)] == owner and (len(ns) == len(owner) or self.subgraphs)

    def fresh(self, message: BaseMessage, ns: tuple[str, ...]) -> bool:
        """Whether `message` is news to the stream; marks it seen where it is shown."""
        if message.id is None:
            return True
        if message.id in self.seen:
            return False
        if self.visible(ns):
            self.seen.add(message.id)
        return True

    def tap_output_aiter(self, run_id: UUID, output: Any) -> Any:
        return output

    def tap_output_iter(self, run_id: UUID, output: Any) -> Any:
        return output

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        if not metadata or "langgraph_checkpoint_ns" not in metadata:
            return
        if tags and TAG_NOSTREAM in tags:
            return
        ns = tuple(metadata["langgraph_checkpoint_ns"].split("|"))[:-1]
        user_tags = [t for t in tags or () if not t.startswith("seq:step")]
        self.runs[run_id] = (ns, {**metadata, "tags": user_tags} if user_tags else metadata)

    def on_llm_new_token(
        self,
        token: str,
        *,
        chunk: ChatGenerationChunk | Any = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> Any:
        found = self.runs.get(run_id)
        if found is None or not isinstance(chunk, ChatGenerationChunk):
            return
        message = chunk.message
        if message.id is not None and self.visible(found[0]):
            self.seen.add(message.id)
        self.emit(found[0], "messages", (message, found[1]))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> Any:
        found = self.runs.pop(run_id, None)
        if found is None or not response.generations or not response.generations[0]:
            return
        generation = response.generations[0][0]
        if not isinstance(generation, ChatGeneration):
            return
        message = generation.message
        if self.fresh(message, found[0]):
            self.emit(found[0], "messages", (message, found[1]))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        self.runs.pop(run_id, None)
