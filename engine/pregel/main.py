"""LangGraph's low-level API: a graph built from channels by hand.

`NodeBuilder` says what wakes a node (`subscribe_only`, `subscribe_to`), what it reads
(`read_from`), what it runs (`do`) and where its output goes (`write_to`); `Pregel`
puts such nodes and named channels together into a compiled graph that runs, streams,
saves and resumes as any other. Its input is written straight to its input channels
(a run's first step runs the nodes they wake) and its output is read from its output
channels.
"""

from __future__ import annotations

import functools
import logging
from abc import ABCMeta
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, Self

import pydantic
from langchain_core.runnables import Runnable, RunnableSequence
from langchain_core.utils.pydantic import create_model_v2

from engine.cache.base import BaseCache
from engine.channels.base import Channel
from engine.checkpoint.base import BaseCheckpointSaver
from engine.graph.drawing import draw_channels
from engine.graph.schema import declared_channel
from engine.pregel.graph import CompiledGraph
from engine.pregel.node import Node, Writes, as_runnable
from engine.pregel.timeouts import natively_async, sync_timeout_error
from engine.store.base import BaseStore
from engine.types import CachePolicy, RetryPolicy, TimeoutPolicy
from engine.warnings import LangGraphDeprecatedSinceV10, renamed

__all__ = ["NodeBuilder", "Pregel"]

log = logging.getLogger(__name__)

_PASSTHROUGH = object()


@dataclass(frozen=True, slots=True)
class _Write:
    """One write of a node's output to `channel`: the output itself, a constant
    `value`, or what `mapper` makes of the output."""

    channel: str
    value: Any = _PASSTHROUGH
    mapper: Callable[[Any], Any] | None = None

    def write(self, output: Any) -> tuple[str, Any]:
        if self.mapper is not None:
            return self.channel, self.mapper(output)
        return self.channel, output if self.value is _PASSTHROUGH else self.value


@dataclass(slots=True)
class PregelNode:
    """A built node: the channels it reads (one name: their value; several: a dict of
    them), the channels that wake it, its code and its writes."""

    channels: str | list[str]
    triggers: list[str]
    bound: Runnable[Any, Any] | None = None
    writers: list[_Write] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    retry_policy: tuple[RetryPolicy, ...] = ()
    cache_policy: CachePolicy | None = None
    timeout: TimeoutPolicy | None = None


class NodeBuilder:
    """Builds a node of a `Pregel` graph, one call at a time (each returns the builder)."""

    def __init__(self) -> None:
        self._node = PregelNode(channels=[], triggers=[])

    def subscribe_only(self, channel: str) -> Self:
        """Wake on `channel`, and take its value as the input."""
        if self._node.channels:
            raise ValueError(
                "Cannot subscribe to single channels when other channels are already subscribed to"
            )
        self._node.channels = channel
        self._node.triggers.append(channel)
        return self

    def subscribe_to(self, *channels: str, read: bool = True) -> Self:
        """Wake on any of `channels`; with `read`, take them in a dict as the input."""
        if isinstance(self._node.channels, str):
            raise ValueError("Cannot subscribe to channels when subscribed to a single channel")
        if read:
            self._node.channels.extend(c for c in channels if c not in self._node.channels)
        self._node.triggers.extend(channels)
        return self

    def read_from(self, *channels: str) -> Self:
        """Also take these channels in the input dict, without waking on them."""
        if isinstance(self._node.channels, str):
            # LangGraph asserts this: the same error class for programs that catch it.
            raise AssertionError(
                "Cannot read additional channels when subscribed to single channels"
            )
        self._node.channels.extend(c for c in channels if c not in self._node.channels)
        return self

    def do(self, node: Any) -> Self:
        """Run `node` (a function or a Runnable) on the input; a second `do` runs on the
        first one's output."""
        runnable, _ = as_runnable(getattr(node, "__name__", "node"), node)
        bound = self._node.bound
        self._node.bound = runnable if bound is None else RunnableSequence(bound, runnable)
        return self

    def write_to(self, *channels: str, **kwargs: Any) -> Self:
        """Write the output to each of `channels`; `name=value` writes a constant, or
        what a function (or Runnable) makes of the output, to channel `name`."""
        self._node.writers.extend(_Write(channel) for channel in channels)
        for name, value in kwargs.items():
            if isinstance(value, Runnable):
                entry = _Write(name, mapper=value.invoke)
            elif callable(value):
                entry = _Write(name, mapper=value)
            else:
                entry = _Write(name, value=value)
            self._node.writers.append(entry)
        return self

    def meta(self, *tags: str, **metadata: Any) -> Self:
        """Tags and metadata of the node's runs."""
        self._node.tags.extend(tags)
        self._node.metadata.update(metadata)
        return self

    def add_retry_policies(self, *policies: RetryPolicy) -> Self:
        self._node.retry_policy += policies
        return self

    def add_cache_policy(self, policy: CachePolicy) -> Self:
        self._node.cache_policy = policy
        return self

    def set_timeout(self, timeout: float | timedelta | TimeoutPolicy | None) -> Self:
        """Cap each attempt of the node (a number of seconds or a timedelta caps its
        run); its code must be async, for an attempt to be cancelled."""
        self._node.timeout = TimeoutPolicy.coerce(timeout)
        return self

    def build(self) -> PregelNode:
        node = self._node
        return PregelNode(
            channels=node.channels if isinstance(node.channels, str) else list(node.channels),
            triggers=list(node.triggers),
            bound=node.bound,
            writers=list(node.writers),
            tags=list(node.tags),
            metadata=dict(node.metadata),
            retry_policy=node.retry_policy,
            cache_policy=node.cache_policy,
            timeout=node.timeout,
        )


class _AnyCompiledGraph(ABCMeta):
    """Makes every compiled graph an instance of `Pregel`, as in LangGraph (where each
    compiles to one)."""

    # By the class's ancestry alone: ABCMeta's own checks walk the subclasses of
    # Runnable, this one among them, and would come back here.
    def __instancecheck__(cls, instance: Any) -> bool:
        return CompiledGraph in type(instance).__mro__

    def __subclasscheck__(cls, subclass: type) -> bool:
        return CompiledGraph in getattr(subclass, "__mro__", ())


class Pregel(CompiledGraph, metaclass=_AnyCompiledGraph):
    """A graph of nodes and channels built by hand (LangGraph's `Pregel(...)`).

    The channels are given as instances (`LastValue(int)`, `Topic(str)`, ...), each
    run getting fresh ones. A run's input goes to `input_channels` (one name: the
    input itself; several: the input dict's keys), its output is read from
    `output_channels` (one name: its value; several: a dict), and the `values` stream
    and snapshots show `stream_channels` (every channel, by default)."""

    def __init__(
        self,
        *,
        nodes: Mapping[str, PregelNode | NodeBuilder],
        channels: Mapping[str, Channel] | None,
        input_channels: str | Sequence[str],
        output_channels: str | Sequence[str],
        stream_channels: str | Sequence[str] | None = None,
        stream_mode: str = "values",
        interrupt_before_nodes: Sequence[str] | Literal["*"] = (),
        interrupt_after_nodes: Sequence[str] | Literal["*"] = (),
        checkpointer: BaseCheckpointSaver | None | bool = None,
        store: BaseStore | None = None,
        cache: BaseCache | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] = (),
        cache_policy: CachePolicy | None = None,
        context_schema: Any = None,
        step_timeout: float | None = None,
        debug: bool = False,
        auto_validate: bool = True,
        name: str = "LangGraph",
        config_type: Any = None,
    ) -> None:
        context_schema = renamed(
            "config_type",
            config_type,
            "context_schema",
            context_schema,
            LangGraphDeprecatedSinceV10,
        )
        channels = dict(channels or {})
        built = {name: _built(name, node) for name, node in nodes.items()}
        for key, channel in channels.items():
            if not isinstance(channel, Channel):
                raise TypeError(
                    f"Channel '{key}' is a {type(channel).__name__}, not a channel "
                    "(LastValue(int), Topic(str), ...)"
                )
        defaults = (retry_policy,) if isinstance(retry_policy, RetryPolicy) else tuple(retry_policy)
        shown = _names(stream_channels) if stream_channels is not None else tuple(channels)
        self._input_channels = input_channels
        self._templates = channels
        # The channels each node writes: the edges its drawing shows.
        self._writes = {
            name: frozenset(w.channel for w in node.writers) for name, node in built.items()
        }
        _validate(built, channels, input_channels, output_channels, shown)
        super().__init__(
            nodes={name: _node(name, node, defaults, cache_policy) for name, node in built.items()},
            channels={
                key: functools.partial(declared_channel, channel, key)
                for key, channel in channels.items()
            },
            state_keys=shown,
            input_keys=_names(input_channels),
            output_keys=_names(output_channels),
            checkpointer=checkpointer,
            interrupt_before=_nodes_named(interrupt_before_nodes, built),
            interrupt_after=_nodes_named(interrupt_after_nodes, built),
            name=name,
            builder=None,
            state_types=[],
            goto=_no_goto,
            store=store,
            cache=cache,
            context_schema=context_schema,
            debug=debug,
        )
        self._output_channels = output_channels
        self.step_timeout = step_timeout
        self.stream_mode = stream_mode
        self._stream_channels = stream_channels
        self.auto_validate = auto_validate
        # As given (one policy in a tuple); the nodes took them as defaults when built.
        self.retry_policy = (
            (retry_policy,) if isinstance(retry_policy, RetryPolicy) else retry_policy
        )
        self.cache_policy = cache_policy

    # LangGraph's attributes, as given.

    @property
    def input_channels(self) -> str | Sequence[str]:
        return self._input_channels

    @property
    def output_channels(self) -> str | Sequence[str]:
        return self._output_channels

    @property
    def stream_channels(self) -> str | Sequence[str] | None:
        return self._stream_channels

    def get_input_schema(self, config: Any = None) -> type[pydantic.BaseModel]:
        """What the input channels take: one channel's type, or an object of them."""
        return self._schema("Input", self._input_channels, update=True)

    def get_output_schema(self, config: Any = None) -> type[pydantic.BaseModel]:
        return self._schema("Output", self._output_channels, update=False)

    def _schema(self, kind: str, names: str | Sequence[str], *, update: bool) -> Any:
        def typ(name: str) -> Any:
            channel = self._templates[name]
            return channel.UpdateType if update else channel.ValueType

        if isinstance(names, str):
            return create_model_v2(self.get_name(kind), root=typ(names))
        fields = {name: (typ(name), None) for name in names}
        return create_model_v2(self.get_name(kind), field_definitions=fields)

    def get_graph(self, config: Any = None, *, xray: int | bool = False) -> Any:
        """Every node, joined where a channel one writes wakes another."""
        return draw_channels(
            self.nodes,
            self._writes,
            self._input_channels,
            self.interrupt_before,
            self.interrupt_after,
        )

    def read_output(self, channels: dict[str, Channel]) -> Any:
        if isinstance(self._output_channels, str):
            return _value_of(channels[self._output_channels])
        return super().read_output(channels)

    def read_state(self, channels: dict[str, Channel]) -> Any:
        """What snapshots show: the stream channels, one channel's bare value if they
        were given as one name, as LangGraph shows them."""
        if isinstance(self._stream_channels, str):
            return _value_of(channels[self._stream_channels])
        return super().read_state(channels)

    def _streamed_keys(self) -> str | None:
        # Stream channels given as one name: parts show that channel's bare value.
        return self._stream_channels if isinstance(self._stream_channels, str) else None

    def _output_key_choices(self) -> Sequence[str]:
        # Any channel, not only the stream channels, as LangGraph checks them.
        return tuple(self._templates)

    def input_writes(self, input: Any) -> Writes:
        if isinstance(self._input_channels, str):
            return [(self._input_channels, input)]
        if not isinstance(input, dict):
            raise TypeError(
                f"The input of a graph with input channels {list(self._input_channels)} is "
                f"a dict of them, not {type(input).__name__}"
            )
        writes: Writes = []
        for key, value in input.items():
            if key in self._input_channels:
                writes.append((key, value))
            else:
                log.warning("Input channel %s not found in %s", key, self._input_channels)
        return writes


def _value_of(channel: Channel) -> Any:
    return channel.value if channel.is_available() else None


def _built(name: str, node: Any) -> PregelNode:
    if isinstance(node, NodeBuilder):
        return node.build()
    if isinstance(node, PregelNode):
        return node
    raise TypeError(
        f"Node '{name}' is a {type(node).__name__}: a Pregel graph's nodes are made with "
        "NodeBuilder() (subscribe_only(...).do(...).write_to(...))"
    )


def _names(given: str | Sequence[str]) -> tuple[str, ...]:
    return (given,) if isinstance(given, str) else tuple(given)


def _nodes_named(given: Sequence[str] | str, nodes: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(nodes) if given == "*" else _names(given)


def _validate(
    nodes: Mapping[str, PregelNode],
    channels: Mapping[str, Channel],
    input_channels: str | Sequence[str],
    output_channels: str | Sequence[str],
    stream_channels: Sequence[str],
) -> None:
    """Every channel a node or the graph names exists, and some node wakes on input."""
    for name, node in nodes.items():
        named = [*_names(node.channels), *node.triggers, *(w.channel for w in node.writers)]
        for channel in named:
            if channel not in channels:
                raise ValueError(f"Node '{name}' names channel '{channel}', which is not defined")
        if not node.triggers:
            raise ValueError(f"Node '{name}' subscribes to no channel: nothing would wake it")
    for role, given in (
        ("input", _names(input_channels)),
        ("output", _names(output_channels)),
        ("stream", stream_channels),
    ):
        for channel in given:
            if channel not in channels:
                raise ValueError(f"The {role} channel '{channel}' is not defined")
    if not any(t in _names(input_channels) for node in nodes.values() for t in node.triggers):
        raise ValueError("No node subscribes to an input channel: the graph would never start")


def _node(
    name: str,
    node: PregelNode,
    default_retry: tuple[RetryPolicy, ...],
    default_cache: CachePolicy | None,
) -> Node:
    bound = node.bound
    if node.timeout is not None and not natively_async(bound):
        raise sync_timeout_error(name)
    is_async = bound is not None and as_runnable(name, bound)[1]
    return Node(
        name=name,
        triggers=tuple(dict.fromkeys(node.triggers)),
        runnable=bound,
        is_async=is_async,
        read=_reader(node.channels),
        write=_writer(node.writers),
        retry_policy=node.retry_policy or default_retry,
        cache_policy=node.cache_policy or default_cache,
        timeout=node.timeout,
        metadata=node.metadata or None,
        tags=list(node.tags),
    )


def _reader(channels: str | list[str]) -> Callable[[dict[str, Channel], int, int], Any]:
    if isinstance(channels, str):
        return lambda values, *_: values[channels].get()
    names = tuple(channels)
    return lambda values, *_: {
        name: values[name].value for name in names if values[name].is_available()
    }


def _writer(entries: list[_Write]) -> Callable[[Any, dict[str, Any]], Writes]:
    def write(output: Any, _channels: dict[str, Any]) -> Writes:
        return [entry.write(output) for entry in entries]

    return write


def _no_goto(goto: Any) -> Writes:
    raise ValueError("A Pregel graph has no edges: Command(goto=...) has nowhere to go.")
