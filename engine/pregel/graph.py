"""CompiledGraph: what `StateGraph.compile()` returns, and what callers run."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import threading
import typing
import warnings
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, Self, TypeVar, cast, get_args

import pydantic
from langchain_core.callbacks.manager import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
)
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.utils.pydantic import create_model_v2
from typing_extensions import TypedDict, Unpack, is_typeddict

from engine._annotations import unwrapped
from engine.cache.base import BaseCache
from engine.callbacks import GraphInterruptEvent, GraphResumeEvent, graph_handlers, notify
from engine.channels import Channel
from engine.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, checkpoint_config
from engine.checkpoint.ids import task_id
from engine.checkpoint.serde.jsonplus import allow_schemas
from engine.constants import (
    CACHE_NS,
    CONFIG_KEY_RUNTIME,
    COPY,
    END,
    INPUT,
    INTERRUPT,
    NO_WRITES,
    NULL_TASK,
    START,
)
from engine.errors import CheckpointNotFoundError, GraphInterrupt, InvalidUpdateError
from engine.pregel import context
from engine.pregel.config import (
    coerce_context,
    ensure_configurable,
    layered,
    loose_keys,
    merge_configs,
)
from engine.pregel.loop import (
    Loop,
    error_text,
    own_config,
    own_namespace,
    task_result,
    with_checkpoint_map,
    with_interrupts,
)
from engine.pregel.node import Node, Writes
from engine.pregel.sync import iterate_sync, run_sync
from engine.pregel.tasks import Task, TaskStatus, task_statuses
from engine.runtime import RunControl
from engine.store.base import BaseStore
from engine.types import (
    CachePolicy,
    Durability,
    GraphOutput,
    PregelTask,
    RetryPolicy,
    StateSnapshot,
    StateUpdate,
)
from engine.warnings import LangGraphDeprecatedSinceV10, warn_renamed

T = TypeVar("T")
_ALL_MODES = frozenset(
    {"values", "updates", "custom", "tasks", "debug", "messages", "checkpoints", "tools"}
)


class RunOptions(TypedDict, total=False):
    """What a call of a graph may set besides its input, config and stream shape."""

    durability: Durability | None
    interrupt_before: Sequence[str] | str | None
    interrupt_after: Sequence[str] | str | None
    context: Any
    debug: bool | None
    print_mode: str | Sequence[str]
    control: RunControl | None
    output_keys: str | Sequence[str] | None
    # LangGraph's old name for durability: True is "async", False "exit".
    checkpoint_during: bool | None


class CompiledGraph(Runnable[Any, Any]):
    """A runnable graph: nodes, channel factories and the checkpointer they save to.

    It is a LangChain Runnable, as LangGraph's compiled graphs are: it composes with
    other Runnables and can be a node, a tool's body or a chain's step."""

    # What `stream()` shows when no mode is named.
    stream_mode: str = "updates"

    def __init__(
        self,
        *,
        nodes: dict[str, Node],
        channels: dict[str, Callable[[], Channel]],
        state_keys: tuple[str, ...],
        input_keys: tuple[str, ...],
        output_keys: tuple[str, ...],
        checkpointer: BaseCheckpointSaver | None | bool,
        interrupt_before: tuple[str, ...],
        interrupt_after: tuple[str, ...],
        name: str,
        builder: Any,
        state_types: Sequence[Any],
        goto: Callable[[Any], Writes],
        store: BaseStore | None = None,
        cache: BaseCache | None = None,
        context_schema: Any = None,
        output_channel: str | None = None,
        value_types: tuple[Any, Any] | None = None,
        stream_eager: bool = False,
        debug: bool = False,
    ) -> None:
        # Print every run's debug parts (compile(debug=True)), unless a call says not to.
        self.debug = debug
        # What every run's config starts from (`with_config`), the call's merged over it.
        self.config: RunnableConfig | None = None
        # The policies of nodes that have none of their own (a Pregel's, given to it).
        self.retry_policy: RetryPolicy | Sequence[RetryPolicy] = ()
        self.cache_policy: CachePolicy | None = None
        # Seconds a step of a run may take (None: no limit), set on the compiled graph as
        # LangGraph's attribute is: a slower step raises TimeoutError.
        self.step_timeout: float | None = None
        self.nodes = nodes
        # A graph whose output is one channel's value, not a dict (an entrypoint's).
        self.output_channel = output_channel
        # Its input's and output's types, for a graph that takes and gives one value (an
        # entrypoint's, from its function's annotations): its JSON schemas follow them.
        self.value_types = value_types
        # Whether a sync stream hands over every part while its node runs (an
        # entrypoint's task calls' updates), not only custom and messages parts.
        self.stream_eager = stream_eager
        self.store = store
        self.cache = cache
        self.context_schema = context_schema
        # What makes each of a run's channels, fresh: every run has its own.
        self.channel_makers = channels
        self.state_keys = state_keys
        self.state_key_set = frozenset(state_keys)
        self.input_keys = input_keys
        self.output_keys = output_keys
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.name = name
        self.builder = builder
        self.state_types = list(state_types)
        self._goto = goto
        self.trigger_to_nodes: dict[str, list[str]] = {}
        for node in nodes.values():
            for chan in node.triggers:
                self.trigger_to_nodes.setdefault(chan, []).append(node.name)
        self.deferred = tuple(name for name, node in nodes.items() if node.defer)
        self._checkpointer: BaseCheckpointSaver | None | bool = None
        self.checkpointer = checkpointer

    @property
    def checkpointer(self) -> BaseCheckpointSaver | None | bool:
        return self._checkpointer

    @checkpointer.setter
    def checkpointer(self, saver: BaseCheckpointSaver | None | bool) -> None:
        self._checkpointer = saver
        if isinstance(saver, BaseCheckpointSaver):
            allow_types(saver, self)

    def _saver(self) -> BaseCheckpointSaver | None:
        saver = self._checkpointer
        return saver if isinstance(saver, BaseCheckpointSaver) else None

    def goto_writes(self, goto: Any) -> Writes:
        return self._goto(goto)

    def input_writes(self, input: Any) -> Writes:
        """What a run's input writes: the input node's channel, which it reads."""
        return [(START, input)]

    @functools.cached_property
    def channels(self) -> dict[str, Channel]:
        """The graph's channels, empty, as LangGraph's compiled graphs show them: to look
        at (their kinds, their types). A run never uses these: it makes its own."""
        return {key: make() for key, make in self.channel_makers.items()}

    def read_output(self, channels: dict[str, Channel]) -> Any:
        if self.output_channel is not None:
            channel = channels[self.output_channel]
            return channel.value if channel.is_available() else None
        return {
            key: channels[key].value for key in self.output_keys if channels[key].is_available()
        }

    def read_state(self, channels: dict[str, Channel]) -> Any:
        if self.output_channel is not None:
            return self.read_output(channels)
        return {key: channels[key].value for key in self.state_keys if channels[key].is_available()}

    def _v2_part(self, ns: tuple[str, ...], mode: str, payload: Any) -> dict[str, Any]:
        """A stream part in LangGraph 1.2's v2 format: a dict whose `type` is the mode.
        Values come without the interrupts, which get a key of their own, and as the
        output schema's class when it is a pydantic model or a dataclass; so do the
        values in checkpoint parts, but those of the input's (not all keys are set yet).
        As in LangGraph, the schemas are this graph's for the parts of subgraphs too."""
        builder = self.builder
        if mode == "values":
            interrupts: tuple[Any, ...] = ()
            if isinstance(payload, dict):
                payload = dict(payload)
                interrupts = tuple(payload.pop(INTERRUPT, ()))
                if builder is not None:
                    payload = _as_schema(builder.output_schema, payload)
            return {"type": mode, "ns": ns, "data": payload, "interrupts": interrupts}
        if mode in ("checkpoints", "debug") and builder is not None:
            payload = _checkpoint_as_schema(builder.state_schema, payload)
        return {"type": mode, "ns": ns, "data": payload}

    # Running.

    def _loop(
        self,
        config: dict[str, Any] | None,
        *,
        emit: Callable[[tuple[str, ...], str, Any], None],
        modes: frozenset[str],
        inline_sync: bool,
        subgraphs: bool = False,
        print_line: Callable[[str], None] | None = None,
        shown_keys: str | tuple[str, ...] | None = None,
        **options: Unpack[RunOptions],
    ) -> Loop:
        """The loop of one call; `shown_keys` are the channels its parts show when the
        call names no `output_keys` (all of the state when None)."""
        unknown = sorted(options.keys() - RunOptions.__annotations__.keys())
        if unknown:
            name = unknown[0]
            where = (
                f"; set it in the config: config={{{name!r}: ...}}"
                if name in RunnableConfig.__annotations__
                else " (LangGraph ignores options it does not know; the engine refuses them)"
            )
            raise TypeError(f"Unknown option {name!r} for a graph run{where}.")
        options = _durability_of_old(options)
        durability = options.get("durability")
        output_keys = self._output_keys(options.get("output_keys"))
        if output_keys is None:
            output_keys = shown_keys or self._streamed_keys()
        run_context = options.get("context")
        control = options.get("control")
        debug = options.get("debug")
        print_modes = _print_modes(
            options.get("print_mode", ()), self.debug if debug is None else debug
        )
        # A key no RunnableConfig has is a configurable value, as in LangGraph (LangChain's
        # merge moves those of a `with_config`'d graph). Whether a call from a node is a
        # subgraph of its task is told by the `configurable` it brought (`given`'s).
        call = config
        given = layered(self.config, config) if self.config else config or {}
        config = merge_configs(given if self.config else ensure_configurable(given))
        # A server (or any caller) may seed the run's runtime: its context and store
        # stand in for what the call and the graph do not give.
        seeded = (config.get("configurable") or {}).get(CONFIG_KEY_RUNTIME)
        if run_context is None:
            run_context = getattr(seeded, "context", None)
        store = self.store or getattr(seeded, "store", None)
        # Every run has a control, as in LangGraph: a node may ask its own run to drain.
        control = control or getattr(seeded, "control", None) or RunControl()
        if print_modes:
            emit, modes = _printing(emit, modes, print_modes, subgraphs, print_line or _print_now)
        saver = self._saver()
        run_context = coerce_context(self.context_schema, run_context)
        before = _names(options.get("interrupt_before"), self.interrupt_before, self.nodes)
        after = _names(options.get("interrupt_after"), self.interrupt_after, self.nodes)
        pad = context.peek()
        parent: Loop | None = pad.loop if pad is not None and _in_task(given, pad) else None
        if parent is not None and pad is not None:
            # Invoked from inside a node: this run is a subgraph of that node's task.
            local = emit

            def emit(ns: tuple[str, ...], mode: str, payload: Any) -> None:
                if mode in modes:
                    local(ns[len(child_ns) :], mode, payload)
                if mode in parent.modes:
                    parent.emit(ns, mode, payload)

            at = (config.get("configurable") or {}).get("checkpoint_ns")
            inherited = _inherited(parent, pad, self, at)
            child_ns = inherited["ns"]
            loop = Loop(
                self,
                {
                    **config,
                    "configurable": {
                        **parent.config.get("configurable", {}),
                        **loose_keys(self.config),
                        **loose_keys(call),
                    },
                },
                emit=emit,
                modes=modes | parent.modes,
                durability=durability or parent.durability,
                interrupt_before=before,
                interrupt_after=after,
                inline_sync=inline_sync,
                context=parent.context if run_context is None else run_context,
                subgraphs=subgraphs,
                output_keys=output_keys,
                **inherited,
            )
            if "messages" in modes and "messages" in parent.modes and loop._messages:
                # The caller streams messages too, through the run's handler: a consumer
                # of its own, which keeps track of what it was shown.
                loop._messages.watch(child_ns, subgraphs)
            return loop
        _refuse_stateful_root(self)
        _refuse_other_loops(saver, store)
        configurable = config.get("configurable", {})
        if saver is not None and "thread_id" not in configurable:
            if "checkpoint_ns" in configurable or "checkpoint_id" in configurable:
                # LangGraph takes any of the three keys here, then fails on the thread.
                raise KeyError("thread_id")
            raise ValueError(
                "Checkpointer requires one or more of the following 'configurable' "
                "keys: thread_id, checkpoint_ns, checkpoint_id"
            )
        loop = Loop(
            self,
            config,
            emit=emit,
            modes=modes,
            checkpointer=saver,
            durability=durability or "async",
            interrupt_before=before,
            interrupt_after=after,
            inline_sync=inline_sync,
            context=run_context,
            store=store,
            cache=self.cache,
            control=control,
            subgraphs=subgraphs,
            output_keys=output_keys,
        )
        # After the loop took the metadata it saves with checkpoints: these are not.
        loop.config = _with_run_keys_in_metadata(loop.config)
        return loop

    def _streamed_keys(self) -> str | None:
        """What a call's parts show when it names no `output_keys`: one channel's value
        for a str, all of the state for None."""
        return None

    def _output_key_choices(self) -> Sequence[str]:
        """The channels a call's `output_keys` may name."""
        return self.state_keys

    def _output_keys(self, keys: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
        """A call's `output_keys`, checked against `_output_key_choices` (one, as a str)."""
        if keys is None:
            return None
        names = (keys,) if isinstance(keys, str) else tuple(keys)
        choices = self._output_key_choices()
        for name in names:
            if name not in choices:
                raise ValueError(
                    f"output_keys: {name!r} is not a key of the state (keys: {', '.join(choices)})."
                )
        return keys if isinstance(keys, str) else names

    def _output_keys_shown(self) -> str | tuple[str, ...]:
        """The output channels, as the `output_keys` of a call."""
        keys = self.output_channels
        return keys if isinstance(keys, str) else tuple(keys)

    async def _drive(self, loop: Loop, input: Any) -> Loop:
        """Run the call to its end; with callbacks, as one chain run that the tasks'
        runs nest under (what tracers and `astream_events` see)."""
        run = await _start_run(loop, input, self.get_name())
        lifecycle = graph_handlers(loop.config.get("callbacks"))
        try:
            try:
                await loop.load(input)
                if lifecycle and loop.resumed:
                    await notify(lifecycle, GraphResumeEvent(**_where(loop, run)))
                await loop.run()
            finally:
                await loop._finish_saving()
            if loop.ns and loop.status == "interrupted":
                # A graph run inside a node is part of that node's task: its questions
                # stop the enclosing run too, and its resume comes through that task.
                raise GraphInterrupt(loop.interrupts)
            if lifecycle and loop.status == "interrupted":
                event = GraphInterruptEvent(**_where(loop, run), interrupts=tuple(loop.interrupts))
                await notify(lifecycle, event)
        except BaseException as exc:
            if run is not None:
                await run.on_chain_error(exc)
            raise
        if run is not None:
            await run.on_chain_end(loop.output())
        return loop

    async def ainvoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] = "values",
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
        _inline_sync: bool = False,
        **options: Unpack[RunOptions],
    ) -> Any:
        """Run to the end (or an interrupt) and return the output; `subgraphs` changes
        nothing here, as in LangGraph, where it only shapes stream parts. With
        `version="v2"` the output is a `GraphOutput` (its interrupts apart). For another
        stream mode, or several, the list of the top graph's parts, shaped as `stream`
        yields them."""
        chunks: list[Any] = []
        single, modes = _stream_modes(stream_mode)

        def emit(ns: tuple[str, ...], mode: str, payload: Any) -> None:
            if not ns and mode in modes:
                part = self._v2_part(ns, mode, payload) if version == "v2" else payload
                chunks.append(part if single or version == "v2" else (mode, part))

        # The parts show the graph's output channels, as LangGraph's invoke asks its
        # stream for them.
        loop = self._loop(
            config,
            emit=emit,
            modes=frozenset(modes),
            inline_sync=_inline_sync,
            shown_keys=self._output_keys_shown(),
            **options,
        )
        await self._drive(loop, input)
        if stream_mode != "values":
            return chunks
        if version == "v2":
            # What the last values part showed, and every interrupt the parts carried.
            value = chunks[-1]["data"] if chunks else None
            return GraphOutput(value, tuple(i for part in chunks for i in part["interrupts"]))
        # What the last values part showed, as LangGraph's invoke returns: not the state
        # at the end, which may have lost an ephemeral value since; None if the call
        # showed none (nothing it ran wrote a key of the output).
        values = chunks[-1] if chunks else None
        if loop.status == "interrupted" and loop.interrupts:
            return {
                **with_interrupts(values, loop.interrupts),
                INTERRUPT: list(loop.interrupts),
            }
        return values

    def invoke(self, input: Any, config: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        return _as_sync_call(lambda: self.ainvoke(input, config, _inline_sync=True, **kwargs))

    async def astream(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
        **options: Unpack[RunOptions],
    ) -> AsyncIterator[Any]:
        buffer: deque[Any] = deque()
        wakeup = asyncio.Event()

        def deliver(part: Any) -> None:
            buffer.append(part)
            wakeup.set()

        async def hand_over() -> None:
            # Before a step, parts waiting for the reader get it woken: a run whose nodes
            # never wait would otherwise hold them all until its end.
            if buffer:
                await asyncio.sleep(0)

        runner = asyncio.ensure_future(
            self.arun(
                input,
                config,
                deliver,
                stream_mode=stream_mode,
                subgraphs=subgraphs,
                version=version,
                _pause=hand_over,
                _print_in_order=True,
                **options,
            )
        )
        runner.add_done_callback(lambda _: wakeup.set())
        try:
            while True:
                for part in _printing_in_order(_drained(buffer)):
                    yield part
                if runner.done():
                    break
                await wakeup.wait()
                wakeup.clear()
            for part in _printing_in_order(_drained(buffer)):
                yield part
            runner.result()
        finally:
            if not runner.done():
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await runner

    async def arun(
        self,
        input: Any,
        config: dict[str, Any] | None,
        on_part: Callable[[Any], None],
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
        on_values: Callable[[str | None], None] | None = None,
        _inline_sync: bool = False,
        _pause: Callable[[], Awaitable[None]] | None = None,
        _print_in_order: bool = False,
        **options: Unpack[RunOptions],
    ) -> StateSnapshot | None:
        """Run in this task, handing each stream part (as `astream` would yield it) to
        `on_part` as it is made: a consumer of `astream` is woken once per part, a task
        switch per token of a streamed reply. Parts made in a worker thread (a graph
        invoked inside a sync node) are handed over on the event loop, in the order they
        were made.

        `on_values` is called just before each `values` part of this graph (not of its
        subgraphs) with the id of the checkpoint whose saved values the part shows (one
        the call loaded, or saved or queued to be saved: `aget_saved_values` reads them
        back), or None when none does (a step stopped by an interrupt, `exit` durability).
        A part with interrupts shows them besides the checkpoint's values.

        With `_print_in_order`, the lines `print_mode` prints are handed to `on_part`
        as `_Printed` parts, in order with the others, for the reader to print when it
        comes to them (`stream` and `astream`, whose reader does).

        `_pause` is awaited before each step. A sync `stream()` waits there until its
        reader has taken the parts so far and asks for more: its nodes run inline, so the
        run would otherwise not give the event loop up before its end, and a reader that
        stops after the first part would wait for the whole run (and for nodes it never
        wanted to run), where LangGraph stops at the step it read.

        Returns the thread's state when the run ended at END, built from memory (what
        `aget_state` would read back); None when it stopped anywhere else."""
        single, modes = _stream_modes(self.stream_mode if stream_mode is None else stream_mode)
        owner = asyncio.get_running_loop()
        home = threading.get_ident()

        # Parts made in other threads wait here, in order, until the loop's thread hands
        # them over: before any part it makes itself, or when woken.
        made_elsewhere: deque[Any] = deque()

        def hand_over_waiting() -> None:
            while made_elsewhere:
                on_part(made_elsewhere.popleft())

        def hand_over(part: Any) -> None:
            if threading.get_ident() == home:
                hand_over_waiting()
                on_part(part)
            else:
                made_elsewhere.append(part)
                owner.call_soon_threadsafe(hand_over_waiting)

        loop = self._loop(
            config,
            emit=_emitter(single, subgraphs, hand_over, self._v2_part if version == "v2" else None),
            modes=frozenset(modes),
            inline_sync=_inline_sync,
            subgraphs=subgraphs,
            print_line=(lambda text: hand_over(_Printed(text))) if _print_in_order else None,
            **options,
        )
        loop.on_values = on_values
        loop.pause = _pause
        try:
            await self._drive(loop, input)
        finally:
            hand_over_waiting()
        if loop.status == "done" and loop.head_saved_at:
            return self._final_snapshot(loop)
        return None

    def stream(
        self, input: Any, config: dict[str, Any] | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        # Parts a node makes while it runs (its custom writes, a model's tokens, its
        # subgraphs' parts) reach the reader as they are made, as in LangGraph: its sync
        # code then runs in a worker thread, not inline on the loop the reader waits on.
        asked = kwargs.get("stream_mode")
        _, modes = _stream_modes(self.stream_mode if asked is None else asked)
        live = (
            self.stream_eager
            or bool(kwargs.get("subgraphs"))
            or not {"custom", "messages"}.isdisjoint(modes)
        )
        parts = iterate_sync(
            lambda deliver, pause: context.as_sync_call(
                self.arun(
                    input,
                    config,
                    deliver,
                    _inline_sync=not live,
                    _pause=pause,
                    _print_in_order=True,
                    **kwargs,
                )
            )
        )
        return _printing_in_order(parts)

    async def run_subgraph(self, parent: Loop, task: Task, pad: context.Scratchpad) -> Any:
        """Run a compiled graph as a node: its checkpoints live in the task's namespace."""
        child = task.node.subgraph
        assert child is not None
        # Its run nests under the node's run, as a run of its own: named after the
        # subgraph (or the run name it was bound to), not as the enclosing call.
        config = {
            key: value for key, value in parent.config.items() if key not in ("run_id", "run_name")
        }
        config["callbacks"] = pad.config.get("callbacks")
        config["configurable"] = {**parent.config.get("configurable", {})}
        if child.config:  # a subgraph `with_config`: its config under the parent's
            config = layered(child.config, config)
            config.pop("run_id", None)
        loop = Loop(
            child,
            config,
            emit=parent.emit,
            modes=parent.modes,
            durability=parent.durability,
            interrupt_before=child.interrupt_before,
            interrupt_after=child.interrupt_after,
            inline_sync=parent.inline_sync,
            context=parent.context,
            # A graph run as a node shows its output channels, as an invoked one does.
            output_keys=child._output_keys_shown(),
            **_inherited(parent, pad, child),
        )
        # Made in the parent's task, which is no sync call of its own: the parent's call is.
        loop.sync_call = parent.sync_call
        loop.config["configurable"].pop("checkpoint_id", None)
        await child._drive(loop, task.input)
        return child.read_output(loop.channels)

    # Reading and writing state.

    async def aget_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        saver = self._require_saver()
        if not _names_thread(config):
            return StateSnapshot({}, (), config, None, None, None, (), ())
        graph = self._graph_at(config)
        return await graph._state(saver, own_config(config, graph), subgraphs)

    async def aget_saved_values(self, config: dict[str, Any]) -> Any:
        """The values of the checkpoint `config` names (or the namespace's latest), as
        saved: what a `values` part showed for it, without the writes saved on it since
        (finished tasks of its open step, a Command's update). Raises
        CheckpointNotFoundError when there is no such checkpoint."""
        saver = self._require_saver()
        if not _names_thread(config):
            raise CheckpointNotFoundError("No checkpoint: the config names no thread.")
        graph = self._graph_at(config)
        saved = await saver.aget_tuple(_lookup(own_config(config, graph)))
        if saved is None:
            raise CheckpointNotFoundError(f"No checkpoint {_lookup(config)['configurable']}.")
        return graph.read_state(graph._reader_loop(saved).channels)

    def _graph_at(self, config: dict[str, Any], *, for_update: bool = False) -> CompiledGraph:
        """The graph whose checkpoints live in the config's namespace: a subgraph's
        state is read and updated by the subgraph's own nodes and channels.

        A namespace of no declared subgraph (a graph a tool invokes) is read with this
        graph's channels, as in LangGraph; updating it raises, as this graph's nodes and
        channels would write the wrong state into it."""
        ns = (config.get("configurable") or {}).get("checkpoint_ns") or ""
        if not ns:
            return self
        names = "|".join(part.split(":")[0] for part in ns.split("|") if not part.isdigit())
        for _, graph in self.get_subgraphs(namespace=names, recurse=True):
            return graph
        if for_update:
            raise ValueError(f"Subgraph {names} not found")
        return self

    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, CompiledGraph]]:
        """The graphs this graph's nodes run, as (namespace, graph): node names joined by
        `|`, without task ids. With `namespace`, only the graph at exactly that one (a
        nested one needs `recurse`)."""
        for name, node in self.nodes.items():
            if namespace is not None and namespace != name and not namespace.startswith(name + "|"):
                continue
            graph = node.graph_inside
            if graph is None:
                continue
            if name == namespace:
                yield name, graph
                return
            if namespace is None:
                yield name, graph
            if recurse:
                rest = None if namespace is None else namespace[len(name) + 1 :]
                for inner, found in graph.get_subgraphs(namespace=rest, recurse=True):
                    yield f"{name}|{inner}", found

    async def aget_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, CompiledGraph]]:
        for found in self.get_subgraphs(namespace=namespace, recurse=recurse):
            yield found

    async def _state(
        self, saver: BaseCheckpointSaver, config: dict[str, Any], subgraphs: bool
    ) -> StateSnapshot:
        saved = await saver.aget_tuple(_lookup(config))
        if saved is None:
            return StateSnapshot({}, (), config, None, None, None, (), ())
        snapshot = self._snapshot(
            saved, live=not config.get("configurable", {}).get("checkpoint_id")
        )
        if not subgraphs:
            return snapshot
        tasks = []
        for task in snapshot.tasks:
            child = self.nodes[task.name].graph_inside
            if child is not None and task.state is not None:
                state = await child._state(saver, own_config(task.state, child), True)
                task = task._replace(state=state)
            tasks.append(task)
        return snapshot._replace(tasks=tuple(tasks))

    def get_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        return run_sync(lambda: self.aget_state(config, subgraphs=subgraphs))

    async def aget_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: dict[str, Any] | None = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        saver = self._require_saver()
        config = ensure_configurable(config)  # as LangGraph's reads the history
        if not _names_thread(config):
            return
        graph = self._graph_at(config)
        conf = own_config(config, graph).get("configurable", {})
        lookup = {
            "configurable": {
                "thread_id": conf.get("thread_id"),
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
            }
        }
        if conf.get("checkpoint_id"):
            lookup["configurable"]["checkpoint_id"] = conf["checkpoint_id"]
        async for saved in saver.alist(lookup, filter=filter, before=before, limit=limit):
            yield graph._snapshot(saved)

    def get_state_history(self, config: dict[str, Any], **kwargs: Any) -> Iterator[StateSnapshot]:
        async def collect() -> list[StateSnapshot]:
            return [s async for s in self.aget_state_history(config, **kwargs)]

        return iter(run_sync(collect))

    def _snapshot(self, saved: CheckpointTuple, *, live: bool = False) -> StateSnapshot:
        """A checkpoint as a StateSnapshot.

        A live snapshot (the thread's current state) counts tasks that already finished
        in the open step: their writes show in the values, they leave `next`, and only
        unanswered interrupts remain. Otherwise it is the record of the step as it began.
        """
        loop = self._reader_loop(saved)
        tasks = loop._prepare(read=False, every_node=True)
        # The step's tasks were due before a Command's input: it only shows in values.
        loop.apply_saved_command()
        statuses = task_statuses(saved.pending_writes or [], NULL_TASK)
        finished = {t.id for t in tasks if t.id in statuses and statuses[t.id].finished}
        if live and finished:
            for task in tasks:
                if task.id in finished:
                    task.writes = list(statuses[task.id].output)
            done = [t for t in tasks if t.id in finished]
            loop.apply(done, set(loop.live))
        shown: list[PregelTask] = []
        for task in tasks:
            status = statuses.get(task.id, TaskStatus())
            result = self.saved_result(status)
            error = None if status.error is None else error_text(status.error)
            found = status.pending_interrupts if live else status.interrupts
            state = loop.subgraph_config(task)
            shown.append(
                PregelTask(task.id, task.name, task.path, error, tuple(found), state, result)
            )
        cp = saved.checkpoint
        return StateSnapshot(
            values=self.read_state(loop.channels),
            next=tuple(t.name for t in tasks if not (live and t.id in finished)),
            config=with_checkpoint_map(saved.config, saved.metadata),
            metadata=saved.metadata,
            created_at=cp["ts"],
            parent_config=with_checkpoint_map(saved.parent_config, saved.metadata)
            if saved.parent_config
            else None,
            tasks=tuple(shown),
            interrupts=tuple(i for t in shown for i in t.interrupts),
        )

    def saved_result(self, status: TaskStatus) -> Any:
        """What a task that finished in an open step wrote, as a state's (and a resumed
        run's checkpoint part's) task shows it: None while it has not finished."""
        if not status.finished:
            return None
        result = task_result([w for w in status.output if w[0] in self.state_key_set])
        return result if self.output_channel is None else result.get(self.output_channel)

    def _final_snapshot(self, loop: Loop) -> StateSnapshot:
        """The head a run that ended at END saved: no task is due there and no write is
        pending, so its values are the loop's channels."""
        parent = loop.saved_parent
        return StateSnapshot(
            values=self.read_state(loop.channels),
            next=(),
            config=checkpoint_config(loop.thread_id, loop.ns_str, loop.checkpoint_id),
            metadata=loop.head_metadata,
            created_at=loop.head_saved_at,
            parent_config=checkpoint_config(loop.thread_id, loop.ns_str, parent)
            if parent
            else None,
            tasks=(),
        )

    def _reader_loop(self, saved: CheckpointTuple) -> Loop:
        conf = saved.config["configurable"]
        loop = Loop(
            self,
            {"configurable": {"thread_id": conf["thread_id"]}},
            emit=lambda *_: None,
            modes=frozenset(),
            checkpointer=None,
            durability="sync",
            interrupt_before=(),
            interrupt_after=(),
            ns=tuple(conf.get("checkpoint_ns", "").split("|")) if conf.get("checkpoint_ns") else (),
        )
        loop._restore(saved, null_writes=False)
        return loop

    async def aupdate_state(
        self,
        config: dict[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        return await self.abulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    def update_state(
        self,
        config: dict[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        return _as_sync_call(lambda: self.aupdate_state(config, values, as_node, task_id))

    async def abulk_update_state(
        self, config: dict[str, Any], supersteps: Sequence[Sequence[StateUpdate]]
    ) -> dict[str, Any]:
        """Apply each superstep's updates together, as the writes of one step's tasks,
        each superstep a version of its own on top of the last."""
        if not supersteps:
            raise ValueError("No supersteps provided")
        if any(not updates for updates in supersteps):
            raise ValueError("No updates provided")
        saver = self._require_saver()
        # `thread_id: None` is saved under "None", as LangGraph's updates save it.
        _names_thread(config)
        graph = self._graph_at(config, for_update=True)
        config = own_config(config, graph)
        for updates in supersteps:
            config = await graph._update_step(saver, config, [StateUpdate(*u) for u in updates])
        return config

    def bulk_update_state(
        self, config: dict[str, Any], supersteps: Sequence[Sequence[StateUpdate]]
    ) -> dict[str, Any]:
        return _as_sync_call(lambda: self.abulk_update_state(config, supersteps))

    async def _update_step(
        self, saver: BaseCheckpointSaver, config: dict[str, Any], updates: list[StateUpdate]
    ) -> dict[str, Any]:
        """One superstep of updates, saved in the config's namespace: a subgraph's next
        to its other versions, under the same versions of the graphs around it."""
        saved = await saver.aget_tuple(_lookup(config))
        ns = (config.get("configurable") or {}).get("checkpoint_ns") or ""
        parents = dict((saved.metadata.get("parents") if saved else None) or {})
        loop = Loop(
            self,
            merge_configs(config),
            emit=lambda *_: None,
            modes=frozenset(),
            checkpointer=saver,
            durability="sync",
            interrupt_before=(),
            interrupt_after=(),
            ns=tuple(ns.split("|")) if ns else (),
            parents=parents,
            store=self.store,
        )
        if saved is not None:
            loop._restore(saved)
        else:
            loop._fresh_channels()
        updated = await self._apply_updates(loop, saver, saved, updates)
        return with_checkpoint_map(updated, {"parents": parents})

    async def _apply_updates(
        self,
        loop: Loop,
        saver: BaseCheckpointSaver,
        saved: CheckpointTuple | None,
        updates: list[StateUpdate],
    ) -> dict[str, Any]:
        special = [u.as_node for u in updates if u.as_node in (COPY, INPUT)]
        if special and len(updates) > 1:
            raise InvalidUpdateError(f"An update as {special[0]} must be alone in its superstep.")
        if special == [COPY]:
            copied = await _copy(loop, saved, updates[0].values)
            then = [StateUpdate(*item[:2]) for item in updates[0].values or ()]
            return await self._update_step(saver, copied, then) if then else copied
        if special == [INPUT]:
            return await _as_input(loop, saved, updates[0].values)
        if any(u.as_node == END and u.values is None for u in updates):
            if len(updates) > 1:
                raise InvalidUpdateError("Cannot apply multiple updates when clearing state.")
            return await _clear(loop, saved)
        if len(updates) > 1 and any(u.as_node is None for u in updates):
            raise InvalidUpdateError(
                "Several updates in one superstep: give each its as_node (which node it "
                "stands for)."
            )
        due = loop._prepare(read=False, every_node=True)
        tasks: list[Task] = []
        for values, as_node, wanted_id in updates:
            name = as_node if as_node is not None else self._last_node(loop, saved)
            node = self.nodes.get(name)
            if node is None:
                raise InvalidUpdateError(f"Node {name} does not exist")
            writes = await _written_as(loop, node, values)
            # An update standing in for a task that is due here takes that task's id, so
            # the step's record shows the update as the task's result.
            taken = {t.id for t in tasks}
            candidates = [t for t in due if t.name == name and t.id not in taken]
            if wanted_id is not None:
                candidates = [t for t in candidates if t.id == wanted_id]
                if not candidates:
                    raise InvalidUpdateError(
                        f"No task of node '{name}' with id {wanted_id!r} is due at this checkpoint."
                    )
            tid = candidates[0].id if candidates else _task_id(loop, name, len(tasks))
            if candidates and saved is not None:
                await saver.aput_writes(loop._config(), writes or [(NO_WRITES, None)], tid)
            # As in LangGraph, the update's task is triggered by the interrupt marker, no
            # channel: it records no version of its node's triggers as seen (what the node
            # was due to read stays due, a barrier stays full) and leaves the node's last
            # run what an update without `as_node` goes by.
            # No path: apply_writes keeps these tasks in the list's order (LangGraph folds
            # a superstep's updates in the order given, not by node name).
            tasks.append(Task(tid, name, (), node, None, (INTERRUPT,), writes=writes))
        loop.apply(tasks, loop.live)
        # Like LangGraph, a version saved by update_state does not record which channels
        # it updated: a call from it looks at every node in declared order (so what was
        # due before, a node stopped by a breakpoint, stays due) and runs them in that
        # order.
        loop.updated = None
        loop.step = loop.step if saved is not None else 0
        await loop._save_checkpoint("update")
        await loop._finish_saving()
        return loop._config()

    def _last_node(self, loop: Loop, saved: CheckpointTuple | None) -> str:
        """The node an update without `as_node` stands for: the one that ran last, by the
        newest channel version any node saw. That may be the input node, on a version
        that took new input: the update is then input too, and the graph runs from its
        start again. A graph of one node (an entrypoint's) updates as that node: what it
        saves for its next call."""
        if len(self.nodes) == 1:
            return next(iter(self.nodes))
        if saved is None or not any(v for seen in loop.seen.values() for v in seen.values()):
            # Nothing ran yet: the update is input, if input is a node (a builder's).
            if START in self.nodes:
                return START
            raise InvalidUpdateError("Ambiguous update, specify as_node")
        # Every (version, node) pair, as LangGraph ranks them: two nodes that ran in one
        # step saw the same version, and so does one node woken by two channels at once.
        ranked = sorted(
            (v, name)
            for name, seen in loop.seen.items()
            if name in self.nodes
            for v in seen.values()
        )
        if not ranked or len(ranked) > 1 and ranked[-1][0] == ranked[-2][0]:
            raise InvalidUpdateError("Ambiguous update, specify as_node")
        return ranked[-1][1]

    def _require_saver(self) -> BaseCheckpointSaver:
        _refuse_stateful_root(self)
        saver = self._saver()
        if saver is None:
            raise ValueError("No checkpointer set")
        return saver

    # The node cache.

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Drop cached results of these nodes (every node's by default)."""
        if self.cache is not None:
            self.cache.clear(self._cache_namespaces(nodes))

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        if self.cache is not None:
            await self.cache.aclear(self._cache_namespaces(nodes))

    def _cache_namespaces(self, nodes: Sequence[str] | None) -> list[tuple[str, ...]]:
        names = (
            nodes
            if nodes is not None
            else [n for n, node in self.nodes.items() if node.cache_policy]
        )
        return [(CACHE_NS, name) for name in names]

    # Schemas.

    @property
    def InputType(self) -> Any:  # noqa: N802 (LangChain's name)
        """What the graph takes: an entrypoint's value type, a builder's input schema
        (LangChain's `get_input_schema` then gives that model, or one of that root)."""
        if self.value_types is not None:
            return self.value_types[0]
        return super().InputType if self.builder is None else self.builder.input_schema

    @property
    def OutputType(self) -> Any:  # noqa: N802 (LangChain's name)
        return super().OutputType if self.value_types is None else self.value_types[1]

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of what the graph takes: its builder's input schema (a
        `StateGraph`'s), else what LangChain makes of the graph as a Runnable."""
        if self.builder is None:
            return super().get_input_jsonschema(config)
        return _json_schema(self.builder.input_schema, self.get_name("Input"))

    def get_output_schema(self, config: Any = None) -> type[pydantic.BaseModel]:
        """A model of what a run's output holds: each output key of the builder's
        schema, None by default (an output may leave keys out), as LangGraph's is."""
        if self.builder is None or self.output_channel is not None:
            return super().get_output_schema(config)
        from engine.graph.schema import field_types

        types = field_types(self.builder.output_schema)
        return create_model_v2(
            self.get_name("Output"),
            field_definitions={k: (types.get(k, Any), None) for k in self.output_keys},
        )

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        if self.builder is None:
            return super().get_output_jsonschema(config)
        return _json_schema(self.builder.output_schema, self.get_name("Output"))

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of the run context (`context=`), None without a schema."""
        schema = self.context_schema
        if schema is None:
            return None
        if not (
            is_typeddict(schema)
            or dataclasses.is_dataclass(schema)
            or (isinstance(schema, type) and issubclass(schema, pydantic.BaseModel))
        ):
            raise ValueError(
                f"Invalid context schema type: {schema}. Must be a BaseModel, TypedDict or "
                "dataclass."
            )
        return _json_schema(schema)

    def config_schema(self, *, include: Sequence[str] | None = None) -> type[pydantic.BaseModel]:
        """Deprecated, as in LangGraph: a model whose `configurable` is the context
        schema, with the other config keys `include` names."""
        warnings.warn(
            "`config_schema` is deprecated. Use `get_context_jsonschema` for the relevant "
            "schema instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        hints = typing.get_type_hints(RunnableConfig)
        fields: dict[str, Any] = {
            name: (hints[name], None) for name in include or () if name in hints
        }
        fields.pop("configurable", None)
        if self.context_schema is not None:
            fields = {"configurable": (self.context_schema, None), **fields}
        return pydantic.create_model(self.get_name("Config"), **fields)

    def get_config_jsonschema(self, *, include: Sequence[str] | None = None) -> dict[str, Any]:
        warnings.warn(
            "`get_config_jsonschema` is deprecated. Use `get_context_jsonschema` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
            return self.config_schema(include=include).model_json_schema()

    # Drawing.

    def get_graph(self, config: Any = None, *, xray: int | bool = False) -> Any:
        """The graph as LangChain's drawable `Graph` (nodes, edges, Mermaid, PNG)."""
        from engine.graph.drawing import draw, draw_entrypoint

        if self.builder is None:
            return draw_entrypoint(next(iter(self.nodes)))
        return draw(self.builder, xray, self.interrupt_before, self.interrupt_after)

    async def aget_graph(self, config: Any = None, *, xray: int | bool = False) -> Any:
        return self.get_graph(config, xray=xray)

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Self:
        """This graph, its runs' config starting from `config` (and `kwargs`, config
        keys): a compiled graph still, as LangGraph's is, to nest as a subgraph, draw and
        inspect (LangChain's `with_config` makes a binding, which is none of these)."""
        return self.copy({"config": layered(self.config, config, cast(RunnableConfig, kwargs))})

    # LangGraph's names for where a run's input goes, what it outputs and streams, and
    # the nodes it stops before and after.

    @property
    def input_channels(self) -> str:
        return START

    @property
    def output_channels(self) -> str | list[str]:
        return self.output_channel or list(self.output_keys)

    @property
    def stream_channels(self) -> str | list[str]:
        return self.output_channel or list(self.state_keys)

    @property
    def stream_channels_list(self) -> list[str]:
        """The channels `values` parts show, as a list even when one."""
        shown = self.stream_channels
        if isinstance(shown, str):
            return [shown]
        return list(self.state_keys if shown is None else shown)

    def validate(self) -> Self:
        """Nothing to do: a graph is checked when it is built, and cannot change since."""
        return self

    @property
    def interrupt_before_nodes(self) -> list[str]:
        return list(self.interrupt_before)

    @property
    def interrupt_after_nodes(self) -> list[str]:
        return list(self.interrupt_after)

    def copy(self, update: dict[str, Any] | None = None) -> Self:
        """This graph with the fields `update` names changed. An unknown field is a
        TypeError, where LangGraph drops it: a misspelt one would change nothing without
        a word."""
        fields = update or {}
        unknown = sorted(key for key in fields if not self._is_field(key))
        if unknown:
            raise TypeError(f"A compiled graph has no field {unknown[0]!r} to copy with.")
        # Of the original's own class: a copy of a CompiledStateGraph (or a Pregel) is
        # still one to `isinstance`, as LangGraph's copies are.
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for key, value in fields.items():
            setattr(new, key, value)
        return new

    def _is_field(self, key: str) -> bool:
        """A public attribute of the graph's own, a property that may be set (its
        saver) or a plain value of its class (`stream_mode`)."""
        if key.startswith("_"):
            return False
        if key in self.__dict__:
            return True
        found = inspect.getattr_static(type(self), key, None)
        if isinstance(found, property):
            return found.fset is not None
        return found is not None and not callable(found) and not hasattr(found, "__get__")


async def _start_run(loop: Loop, input: Any, name: str) -> AsyncCallbackManagerForChainRun | None:
    config = loop.config
    # Tracers tell a graph's run by `ls_integration`, a subgraph's by the namespace of
    # the task that runs it, as LangGraph marks them.
    metadata = {"ls_integration": "langgraph", **(config.get("metadata") or {})}
    if loop.outer_ns is not None:
        metadata["checkpoint_ns"] = loop.outer_ns
    # Configured even without callbacks of the call's: LangSmith's tracer (its
    # environment variables, `tracing_context`, an enclosing `@traceable`) and the
    # configure hooks (`collect_runs`) add handlers of their own.
    manager = AsyncCallbackManager.configure(
        config.get("callbacks"), inheritable_tags=config.get("tags"), inheritable_metadata=metadata
    )
    if not manager.handlers:
        if config.get("callbacks"):  # a manager of no handlers (`untraced`): as none
            loop.config = {**config, "callbacks": None}
        return None
    run = await manager.on_chain_start(
        None, input, name=config.get("run_name") or name, run_id=config.get("run_id")
    )
    loop.config = {**config, "callbacks": run.get_child()}
    return run


def _where(loop: Loop, run: AsyncCallbackManagerForChainRun | None) -> dict[str, Any]:
    """A lifecycle event's fields: the call's run, where it is and at which version."""
    return {
        "run_id": run.run_id if run is not None else None,
        "status": loop.stopped_at,
        "checkpoint_id": loop.checkpoint_id,
        "checkpoint_ns": tuple(loop.ns),
    }


async def _clear(loop: Loop, saved: CheckpointTuple | None) -> dict[str, Any]:
    """`update_state(config, None, as_node=END)`: a version where nothing is due. Its due
    tasks count as done, with the writes of those that finished, as does a Command's
    update saved on it; their interrupts are answered by nobody."""
    if saved is not None:
        loop.apply_saved_command()
        tasks = loop._prepare(read=False)
        statuses = task_statuses(saved.pending_writes or [], NULL_TASK)
        for task in tasks:
            status = statuses.get(task.id)
            if status is not None and status.finished:
                task.writes = list(status.output)
        loop.updated = loop.apply(tasks, loop.live)
    loop.step = loop.step if saved is not None else 0
    await loop._save_checkpoint("update")
    await loop._finish_saving()
    return loop._config()


async def _copy(loop: Loop, saved: CheckpointTuple | None, values: Any) -> dict[str, Any]:
    """`as_node="__copy__"`: a sibling of the checkpoint with its values and none of its
    writes, so that what was due there (an interrupt) is due again on the new branch.

    The values may be a list of `(values, as_node)` updates, applied to the copy as one
    superstep (LangGraph's copy-and-update); any other values are refused, where
    LangGraph ignores them."""
    if saved is None:
        raise InvalidUpdateError("Cannot copy a checkpoint that does not exist.")
    pairs = isinstance(values, list) and all(
        isinstance(item, Sequence) and not isinstance(item, str) and len(item) >= 2
        for item in values
    )
    if values is not None and not pairs:
        raise InvalidUpdateError(
            "A copy takes no values, or a list of (values, as_node) updates to apply to it: "
            "update_state(config, [({'key': value}, 'node')], as_node='__copy__')."
        )
    loop.parent_id = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    loop.pending = []
    await loop._save_checkpoint("fork")
    await loop._finish_saving()
    return loop._config()


async def _as_input(loop: Loop, saved: CheckpointTuple | None, values: Any) -> dict[str, Any]:
    """`as_node="__input__"`: the values as if sent as the input of a run, which starts
    from them when the thread is next run with no input."""
    feed = Task(NULL_TASK, INPUT, (INPUT,), None, None, (), writes=loop.graph.input_writes(values))  # type: ignore[arg-type]
    loop.pending = []
    loop.updated = loop.apply([feed], loop.live)
    loop.step = loop.step if saved is not None else -1
    await loop._save_checkpoint("input")
    await loop._finish_saving()
    return loop._config()


def _as_sync_call(make: Callable[[], Awaitable[T]]) -> T:
    """A graph's async method run for its sync twin: a sync call (`context.as_sync_call`)."""
    return run_sync(lambda: context.as_sync_call(make()))


async def _written_as(loop: Loop, node: Node, values: Any) -> Writes:
    """What `node` writes when it returns `values`. Its routers run as after a real run
    of it, in a task of the call's config (a router may take `config` or call
    `get_config()`), reading managed values as LangGraph computes them for an update:
    two steps left, whatever the recursion limit."""
    # The call's config as LangGraph hands it to the node's writers: ensured, its
    # `configurable` keys in its metadata, its run name and id the update's run's only.
    config: dict[str, Any] = dict(
        ensure_config(
            cast(
                RunnableConfig,
                _with_run_keys_in_metadata(
                    {k: v for k, v in loop.config.items() if k not in ("run_name", "run_id")}
                ),
            )
        )
    )
    pad = context.Scratchpad(
        task_ns="|".join([*loop.ns, node.name]),
        config=config,
        sync_call=loop.sync_call,
        step=loop.step,
        stop=loop.step + 2,
    )
    # LangGraph runs the node's writers as one chain run, `<graph name>UpdateState`,
    # which only shows where a router runs under it (its state writes are not traced).
    run = None
    callbacks = loop.config.get("callbacks")
    if callbacks and node.routes:
        manager = AsyncCallbackManager.configure(
            callbacks,
            inheritable_tags=config["tags"],
            inheritable_metadata=config["metadata"],
        )
        run = await manager.on_chain_start(None, values, name=f"{loop.graph.name}UpdateState")
        # Its routers come after the state writes in the sequence: step 2 on.
        pad.node_run, pad.router_step = run, 2
    token = context.enter(pad)
    try:
        writes = node.write(values, loop.channels)
        if asyncio.iscoroutine(writes):
            writes = await writes
    except BaseException as exc:
        if run is not None:
            await run.on_chain_error(exc)
        raise
    finally:
        context.leave(token)
    if run is not None:
        await run.on_chain_end(values)
    return writes


def _task_id(loop: Loop, name: str, index: int = 0) -> str:
    key = name if index == 0 else f"{name}:{index}"
    return task_id(loop.checkpoint_id, loop.ns_str, loop.step, name, "update", key)


def _names_thread(config: dict[str, Any]) -> bool:
    """Whether a state method's config names a thread. One without a thread id is a
    KeyError, as in LangGraph; `thread_id: None` names none, and reads find nothing for
    it: a saver asked for no thread would list every user's."""
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise KeyError("thread_id")
    return configurable["thread_id"] is not None


def _lookup(config: dict[str, Any]) -> dict[str, Any]:
    conf = config.get("configurable", {})
    out = {"thread_id": conf.get("thread_id"), "checkpoint_ns": conf.get("checkpoint_ns", "")}
    if conf.get("checkpoint_id"):
        out["checkpoint_id"] = conf["checkpoint_id"]
    return {"configurable": out}


def _json_schema(schema: Any, title: str | None = None) -> dict[str, Any]:
    """A state, input or context schema's JSON schema, as pydantic writes it; a
    dataclass state's, or a one-value state's, titled as LangGraph titles it (`title`)."""
    from engine.graph.schema import ROOT, field_types, pydantic_ready

    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return schema.model_json_schema()
    keys = field_types(schema)
    if list(keys) == [ROOT]:
        # The value's own type (a TypedDict of `__root__` names it as its one key).
        found = pydantic.TypeAdapter(keys[ROOT]).json_schema()
        return {**found, "default": None, "title": title or "Root"}
    if not (is_typeddict(schema) or dataclasses.is_dataclass(schema)):
        # A plain annotated class, which pydantic does not take: a model of its keys,
        # each required unless it may be None, as LangGraph makes one.
        fields = {key: (typ, None if _allows_none(typ) else ...) for key, typ in keys.items()}
        model = create_model_v2(title or schema.__name__, field_definitions=fields)
        return model.model_json_schema()
    found = pydantic.TypeAdapter(pydantic_ready(schema)).json_schema()
    if dataclasses.is_dataclass(schema):
        _dataclass_defaults(schema, found, keys)
    if title is not None and not is_typeddict(schema):
        found["title"] = title
    return found


def _dataclass_defaults(schema: Any, found: dict[str, Any], keys: dict[str, Any]) -> None:
    """As LangGraph's schema of a dataclass state says: a field that may be None is
    optional, None by default; a default factory's value is the field's default."""
    properties = found.get("properties", {})
    for f in dataclasses.fields(schema):
        prop = properties.get(f.name)
        if prop is None or "default" in prop:
            continue
        if f.default_factory is not dataclasses.MISSING:
            with contextlib.suppress(Exception):  # a default that is not JSON: none shown
                prop["default"] = pydantic.TypeAdapter(Any).dump_python(
                    f.default_factory(), mode="json"
                )
        elif f.default is dataclasses.MISSING and _allows_none(keys.get(f.name)):
            prop["default"] = None
    required = [k for k in found.get("required", ()) if "default" not in properties.get(k, {})]
    if required:
        found["required"] = required
    else:
        found.pop("required", None)


def _allows_none(hint: Any) -> bool:
    hint = unwrapped(hint)[0]
    return hint is None or type(None) in get_args(hint)


def _durability_of_old(options: RunOptions) -> RunOptions:
    """`checkpoint_during`, deprecated, as the `durability` it stands for."""
    during = options.pop("checkpoint_during", None)
    if during is None:
        return options
    warn_renamed("checkpoint_during", "durability", LangGraphDeprecatedSinceV10, stacklevel=4)
    if options.get("durability") is not None:
        raise ValueError(
            "Cannot use both `checkpoint_during` and `durability` parameters. Please use "
            "`durability` instead."
        )
    return {**options, "durability": "async" if during else "exit"}


# Keys of a run's `configurable` that its runs' metadata carries too (unless it has its
# own), as LangGraph copies them: tracers and the `messages` stream show where a run was.
_RUN_KEYS = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)


def _with_run_keys_in_metadata(config: dict[str, Any]) -> dict[str, Any]:
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    carried = {
        key: configurable[key] for key in _RUN_KEYS if configurable.get(key) and key not in metadata
    }
    return {**config, "metadata": {**metadata, **carried}} if carried else config


def _stream_modes(stream_mode: str | Sequence[str]) -> tuple[bool, list[str]]:
    """Whether parts are bare payloads, and the modes. As in LangGraph, only a list asks
    for parts tagged with their mode: a tuple or set of modes yields bare payloads."""
    single = not isinstance(stream_mode, list)
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    unknown = [m for m in modes if m not in _ALL_MODES]
    if unknown:
        raise ValueError(f"Unknown stream mode {unknown[0]!r}; known: {sorted(_ALL_MODES)}.")
    return single, modes


def _emitter(
    single: bool,
    subgraphs: bool,
    deliver: Callable[[Any], None],
    v2: Callable[[tuple[str, ...], str, Any], Any] | None = None,
) -> Callable[[tuple[str, ...], str, Any], None]:
    """The loop's emit: each part shaped as a stream of these options yields it (`v2`
    shapes every part alike, whatever the modes)."""

    def emit(ns: tuple[str, ...], mode: str, payload: Any) -> None:
        if ns and not subgraphs:
            return
        if v2 is not None:
            deliver(v2(ns, mode, payload))
            return
        part: Any = payload if single else (mode, payload)
        if subgraphs:
            part = (ns, payload) if single else (ns, mode, payload)
        deliver(part)

    return emit


def _as_schema(schema: Any, values: dict[str, Any]) -> Any:
    if isinstance(schema, type) and (
        dataclasses.is_dataclass(schema) or issubclass(schema, pydantic.BaseModel)
    ):
        return schema(**values)
    return values


def _checkpoint_as_schema(schema: Any, payload: Any) -> Any:
    """A checkpoints part (or a debug part wrapping one) with its values as `schema`."""
    if not isinstance(payload, dict):
        return payload
    if payload.get("type") == "checkpoint" and isinstance(payload.get("payload"), dict):
        return {**payload, "payload": _checkpoint_as_schema(schema, payload["payload"])}
    values = payload.get("values")
    if not isinstance(values, dict) or START in payload.get("next", ()):
        return payload
    return {**payload, "values": _as_schema(schema, values)}


def _inherited(
    parent: Loop, pad: context.Scratchpad, graph: CompiledGraph, at: str | None = None
) -> dict[str, Any]:
    """What a graph run inside a task (as a node, or invoked by one) takes from the call
    around it: where it saves and under which namespace (under `at`, the namespace the
    config it is invoked with names, if any), the call's replay, named versions and
    answers, and the versions of the graphs around it."""
    # The parent's saver, even over one of the graph's own (none for a parent without
    # one), as in LangGraph: a thread's checkpoints are all in one place.
    saver = None if graph._checkpointer is False else parent.saver
    if saver is not None:
        # The parent's saver stores this graph's checkpoints too: it must know the
        # classes of this graph's state, which the parent's schemas may not name.
        allow_types(saver, graph)
    return {
        "checkpointer": saver,
        "ns": own_namespace(context.next_graph_namespace(pad, at), graph),
        "replay": parent.replay,
        "checkpoint_map": parent.checkpoint_map,
        "resume_map": parent.resume_map,
        "resuming": parent.resuming,
        "parent_resume": lambda: context.next_answer(pad, hand_down=saver is not None),
        "parents": {**parent.parents, parent.ns_str: parent.checkpoint_id},
        # The parent's store, not its own, and its own cache, not the parent's: what
        # LangGraph's subgraphs use (the store of the runtime they are handed).
        "store": parent.store,
        "cache": graph.cache,
        "control": parent.control,
        "outer_ns": parent.outer_ns or context.asking_ns(pad),
    }


def _refuse_other_loops(*parts: Any) -> None:
    """A saver or store whose connections belong to another event loop (LangGraph's
    `aio` savers and stores, opened there) would fail this run's statements in the
    driver, leaving the connections broken: refused before the run, naming what to do."""
    here = asyncio.get_running_loop()
    for part in parts:
        home = getattr(part, "home_loop", None)
        if home is not None and home is not here and not home.is_closed():
            name = type(part).__name__
            twin = f", or {name.removeprefix('Async')} in sync code" if name[:5] == "Async" else ""
            raise RuntimeError(
                f"{name} belongs to the event loop it was opened on: run the graph there "
                "with ainvoke/astream (invoke and stream run it on an event loop of their "
                f"own){twin}."
            )


def _refuse_stateful_root(graph: CompiledGraph) -> None:
    """checkpointer=True borrows the enclosing graph's saver: run on its own (or read as
    the top graph), it has none, and its state would be lost without a word."""
    if graph.checkpointer is True:
        raise RuntimeError("checkpointer=True cannot be used for root graphs.")


def _in_task(config: dict[str, Any], pad: context.Scratchpad) -> bool:
    """Whether a graph called inside a node runs as a subgraph of the node's task: it
    does unless the call brings a `configurable` of its own (a thread of its own, say),
    and then runs as a root graph, as in LangGraph. In a `@task` call's code, the config
    of the call and that of the task it is made in are both its own."""
    conf = config.get("configurable")
    return conf is None or conf.get("checkpoint_ns") in (pad.task_ns, context.asking_ns(pad))


def _print_modes(print_mode: str | Sequence[str], debug: bool | None) -> tuple[str, ...]:
    modes = (print_mode,) if isinstance(print_mode, str) else tuple(print_mode)
    if debug:  # as LangGraph's `debug=True` prints
        modes = ("updates", "values")
    unknown = [m for m in modes if m not in _ALL_MODES]
    if unknown:
        raise ValueError(f"Unknown print mode {unknown[0]!r}; known: {sorted(_ALL_MODES)}.")
    return modes


class _Printed(NamedTuple):
    """A line `print_mode` prints, handed to a stream's reader with the parts."""

    text: str

    def show(self) -> None:
        _print_now(self.text)


def _print_now(text: str) -> None:
    print(text, flush=True)


def _drained(buffer: deque[Any]) -> Iterator[Any]:
    while buffer:
        yield buffer.popleft()


def _printing_in_order(parts: Iterator[Any]) -> Iterator[Any]:
    """A stream's parts, each `_Printed` one printed when the reader comes to it (after
    the parts before it were yielded), as LangGraph prints them."""
    try:
        for part in parts:
            if type(part) is _Printed:
                part.show()
            else:
                yield part
    finally:
        close = getattr(parts, "close", None)
        if close is not None:
            close()  # a reader that stops early stops the run


def _printing(
    emit: Callable[[tuple[str, ...], str, Any], None],
    modes: frozenset[str],
    print_modes: Sequence[str],
    subgraphs: bool,
    print_line: Callable[[str], None],
) -> tuple[Callable[[tuple[str, ...], str, Any], None], frozenset[str]]:
    """Print (`print_line`) the parts of `print_modes` to the console (LangGraph's
    `debug`/`print_mode`), a subgraph's only when the call streams them, handing the
    caller only the modes it asked for."""
    shown = frozenset(print_modes)

    def emit_and_print(ns: tuple[str, ...], mode: str, payload: Any) -> None:
        if mode in shown and (subgraphs or not ns):
            # LangGraph's console format: the mode in bold, a subgraph's namespace in yellow.
            where = f" \033[1;30;33m[graph={ns}]\033[0m" if ns else ""
            print_line(f"\033[1m[{mode}]\033[0m{where} {payload!r}")
        if mode in modes:
            emit(ns, mode, payload)

    return emit_and_print, modes | shown


def _names(
    given: Sequence[str] | str | None, default: tuple[str, ...], nodes: dict[str, Node]
) -> tuple[str, ...]:
    if not given:  # an empty list keeps the compiled breakpoints, as in LangGraph
        return default
    if given == "*":
        return tuple(n for n in nodes if n != START)
    return (given,) if isinstance(given, str) else tuple(given)


def allow_types(saver: BaseCheckpointSaver, graph: CompiledGraph) -> None:
    """Let the saver's serializer restore the graph's own schema types, and no others;
    those of the subgraphs it runs as nodes too, whose checkpoints it keeps: a thread's
    state with subgraphs may be read before any run taught it their classes."""
    allow_schemas(saver, graph.state_types)
    for _, inner in graph.get_subgraphs(recurse=True):
        if inner.checkpointer is not False:
            allow_schemas(saver, inner.state_types)
