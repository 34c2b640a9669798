"""The `messages` stream mode: every token of every LangChain chat model a node calls.

A callback handler rides along in the run's config; LangChain hands it each chunk a
chat model streams, with the metadata of the task that called the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid4

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, LLMResult
from langchain_core.tracers._streaming import _StreamingCallbackHandler

from engine.constants import PUSH, TAG_NOSTREAM
from engine.pregel.chains import once

__all__ = ["GraphStreamHandler", "StreamMessagesHandler", "show_output", "streaming_handlers"]

Emit = Callable[[tuple[str, ...], str, Any], None]


class GraphStreamHandler(BaseCallbackHandler, _StreamingCallbackHandler):
    """A stream mode fed by LangChain callbacks (`messages`, `tools`): one handler per
    run and mode, shared by the run's subgraphs, that routes each part to the loop of
    the graph the callback's run belongs to."""

    # Called in the thread that fires the callback, so parts keep the order they happen.
    run_inline = True

    def __init__(
        self, emit: Emit, owner: tuple[str, ...], subgraphs: bool, *, observer: bool = False
    ) -> None:
        self.default_emit = emit
        # The namespace of the call that made the handler, and whether that call streams
        # the parts of subgraphs.
        self.owner = owner
        self.subgraphs = subgraphs
        # An observer hands a caller's stream the parts of a graph run as a root of its
        # own inside the caller's node; that graph's loops stream through handlers of
        # their own, so none joins it.
        self.observer = observer
        # Each graph of the run (a subgraph, a graph run inside a node) streams through
        # its own loop's emit, so a consumer of that graph's own stream sees its parts.
        self.emitters: dict[tuple[str, ...], Emit] = {}

    def emit(self, ns: tuple[str, ...], mode: str, payload: Any) -> None:
        self.emitters.get(ns, self.default_emit)(ns, mode, payload)

    def tap_output_aiter(self, run_id: UUID, output: Any) -> Any:
        return output

    def tap_output_iter(self, run_id: UUID, output: Any) -> Any:
        return output


def graph_namespace(
    metadata: dict[str, Any] | None, tags: list[str] | None
) -> tuple[str, ...] | None:
    """The namespace of the graph whose task made a callback's run, or None when the run
    is not to be streamed: it is outside any graph, or tagged `nostream`."""
    if not metadata or "langgraph_checkpoint_ns" not in metadata:
        return None
    if tags and TAG_NOSTREAM in tags:
        return None
    # A task's namespace ends with its own segment; a `@task` call's with its caller's
    # and its own (a nested call's path wraps its caller's): what it streams is the
    # graph's that runs the task the calls are made in.
    ns = tuple(metadata["langgraph_checkpoint_ns"].split("|"))
    path = metadata.get("langgraph_path")
    own = 1
    while path and path[0] == PUSH and len(path) == 4 and path[-1] is True:
        own, path = own + 1, path[1]
    return ns[:-own]


class StreamMessagesHandler(GraphStreamHandler):
    """Emits `(message chunk, metadata)` for chat models called inside nodes; a reply
    that was not streamed is emitted whole when the model returns."""

    def __init__(
        self, emit: Emit, owner: tuple[str, ...], subgraphs: bool, *, observer: bool = False
    ) -> None:
        super().__init__(emit, owner, subgraphs, observer=observer)
        # Who is shown the run's messages: the call that made the handler, and each
        # graph streamed with messages inside a node of the run. Each keeps the ids of
        # the messages it was shown, its namespace and whether it sees subgraphs: a node
        # that returns the model's reply must not show it a second time, and a message a
        # consumer was not shown (a subgraph's, without subgraphs) is shown whole when a
        # node it does see returns it, as LangGraph does.
        self.consumers: list[tuple[tuple[str, ...], bool, set[str]]] = []
        self.watch(owner, subgraphs)
        self.runs: dict[UUID, tuple[tuple[str, ...], dict[str, Any]]] = {}

    def watch(self, owner: tuple[str, ...], subgraphs: bool) -> None:
        """Add a consumer: a graph run inside a node of this run, streamed with messages."""
        self.consumers.append((owner, subgraphs, set()))

    def _shown(self, ns: tuple[str, ...]) -> list[set[str]]:
        """The seen ids of each consumer shown the parts made in namespace `ns`."""
        return [
            seen
            for owner, subgraphs, seen in self.consumers
            if ns[: len(owner)] == owner and (len(ns) == len(owner) or subgraphs)
        ]

    def mark_seen(self, message_id: str, ns: tuple[str, ...]) -> None:
        for seen in self._shown(ns):
            seen.add(message_id)

    def fresh(self, message: BaseMessage, ns: tuple[str, ...]) -> bool:
        """Whether `message`, made in `ns`, is news to a consumer shown it there; marks
        it seen by them. A message without an id gets one here, as in LangGraph, so that
        it is not shown again when an enclosing graph's node returns it."""
        if message.id is None:
            message.id = str(uuid4())
        shown = self._shown(ns)
        if shown and all(message.id in seen for seen in shown):
            return False
        for seen in shown:
            seen.add(message.id)
        return True

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
        ns = graph_namespace(metadata, tags)
        if ns is None or metadata is None:
            return
        shown = user_tags(tags)
        self.runs[run_id] = (ns, {**metadata, "tags": shown} if shown else metadata)

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
        if message.id is not None:
            self.mark_seen(message.id, found[0])
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


def user_tags(tags: list[str] | None) -> list[str]:
    """A run's tags less the engine's own step bookkeeping (`seq:step:N`), as the
    `messages` and `tasks` streams show them."""
    return [t for t in tags or () if not t.startswith("seq:step")]


def streaming_handlers(run: AsyncCallbackManagerForChainRun) -> list[_StreamingCallbackHandler]:
    """The run's streaming handlers other than the graph's own (`astream_events`'): when
    one listens, LangGraph's async runs stream their nodes."""
    return [
        handler
        for handler in run.handlers
        if isinstance(handler, _StreamingCallbackHandler)
        and not isinstance(handler, GraphStreamHandler)
    ]


async def show_output(run: AsyncCallbackManagerForChainRun, output: Any) -> None:
    """A node's (or task's) output as the one chunk of its run, for the streaming
    handlers (`astream_events` shows it as `on_chain_stream`)."""
    for handler in streaming_handlers(run):
        async for _ in handler.tap_output_aiter(run.run_id, once(output)):
            pass
