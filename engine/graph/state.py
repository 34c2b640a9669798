"""StateGraph: the builder users write graphs with, and its compilation to nodes and
channels that the Pregel loop runs."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from datetime import timedelta
from typing import Any, Generic, Literal, get_args, get_origin, get_type_hints

from langchain_core.runnables import Runnable

from engine.cache.base import BaseCache
from engine.channels import Channel, EphemeralValue, NamedBarrierValue, Topic
from engine.channels.ephemeral_value import HeldValue
from engine.checkpoint.base import BaseCheckpointSaver
from engine.constants import END, START, TASKS
from engine.errors import ParentCommand
from engine.foreign import check_engine_object
from engine.graph.branch import Branch
from engine.graph.message import with_message_ids
from engine.graph.schema import (
    ROOT,
    channels_for,
    coerce_input,
    field_types,
    is_root,
    managed_keys,
    update_items,
)
from engine.pregel.context import current, peek
from engine.pregel.graph import CompiledGraph
from engine.pregel.node import Node, Writes, as_runnable
from engine.pregel.retry import as_policies
from engine.pregel.runnable import injected_params
from engine.pregel.timeouts import natively_async, sync_timeout_error
from engine.store.base import BaseStore
from engine.types import CachePolicy, Command, RetryPolicy, Send, TimeoutPolicy, TracePolicy
from engine.typing import ContextT, InputT, OutputT, StateT
from engine.warnings import LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10, renamed

log = logging.getLogger(__name__)
_RESERVED_CHARS = (":", "|")
ERROR_HANDLER_PREFIX = "__error_handler__"
DEFAULT_ERROR_HANDLER = "__default_error_handler__"


def branch_channel(node: str) -> str:
    return f"branch:to:{node}"


@dataclass(slots=True)
class NodeSpec:
    fn: Any
    # As `add_node` was given it (a policy, a sequence or None), as LangGraph keeps it.
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None
    input_schema: Any
    # Where its Commands may go, for the drawing: names, or names with an edge label.
    destinations: tuple[str, ...] | dict[str, str] | None
    metadata: dict[str, Any] | None
    defer: bool = False
    subgraph: CompiledGraph | None = None
    cache_policy: CachePolicy | None = None
    timeout: TimeoutPolicy | None = None
    # The node that takes this node's failures, once its retries are spent.
    error_handler: str | None = None
    # This node is an error handler: it takes no handler, cache or edges of its own.
    is_error_handler: bool = False
    trace_policy: TracePolicy | None = None

    @property
    def runnable(self) -> Runnable[Any, Any]:
        """The node's code as a Runnable, as LangGraph's node specs give it (a function
        wrapped, its own object at `.func`)."""
        return as_runnable(getattr(self.fn, "__name__", type(self.fn).__name__), self.fn)[0]


@dataclass(slots=True)
class NodeDefaults:
    """Policies for every node that does not set its own (`set_node_defaults`)."""

    retry_policy: tuple[RetryPolicy, ...] = ()
    cache_policy: CachePolicy | None = None
    timeout: TimeoutPolicy | None = None
    error_handler: Any = None


@dataclass
class StateGraph(Generic[StateT, ContextT, InputT, OutputT]):
    """Collects nodes and edges over a state schema; `compile()` makes it runnable.

    Every builder method returns the builder so that a graph reads as one chain.
    """

    state_schema: Any
    context_schema: Any = None
    input_schema: Any = None
    output_schema: Any = None
    nodes: dict[str, NodeSpec] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    waiting_edges: set[tuple[tuple[str, ...], str]] = field(default_factory=set)
    branches: dict[str, dict[str, Branch]] = field(default_factory=dict)
    _schemas: list[Any] = field(default_factory=list)
    node_defaults: NodeDefaults = field(default_factory=NodeDefaults, init=False, repr=False)
    # Whether `compile()` was called: a node or edge added later is not in that graph.
    compiled: bool = field(default=False, init=False, repr=False)
    # LangGraph's old names for context_schema, input_schema and output_schema.
    config_schema: InitVar[Any] = None
    input: InitVar[Any] = None
    output: InitVar[Any] = None

    def __post_init__(self, config_schema: Any, input: Any, output: Any) -> None:
        for old, given, new, since in (
            ("config_schema", config_schema, "context_schema", LangGraphDeprecatedSinceV10),
            ("input", input, "input_schema", LangGraphDeprecatedSinceV05),
            ("output", output, "output_schema", LangGraphDeprecatedSinceV05),
        ):
            setattr(self, new, renamed(old, given, new, getattr(self, new), since, stacklevel=5))
        self.input_schema = self.input_schema or self.state_schema
        self.output_schema = self.output_schema or self.state_schema
        self._channels: dict[str, Callable[[], Channel]] = {}
        self._managed: dict[str, Any] = {}
        # Classes the state holds that no schema names (create_react_agent's response
        # format, under a loosely typed key): a saver must restore them all the same.
        self._held_types: list[Any] = []
        for schema in (self.state_schema, self.input_schema, self.output_schema):
            self._add_schema(schema)

    @property
    def managed(self) -> dict[str, Any]:
        """State keys the loop fills in per task (`RemainingSteps`, `IsLastStep`)."""
        return self._managed

    @property
    def channels(self) -> dict[str, Channel]:
        """The state's channels by key, empty, as LangGraph's builder shows them: to look
        at. A compiled graph's runs make their own."""
        return {key: make() for key, make in self._channels.items()}

    def _add_schema(self, schema: Any) -> None:
        if schema is None or schema in self._schemas:
            return
        if not isinstance(schema, type) and not get_args(schema):
            # LangGraph warns and goes on with a state of no keys, where every write is
            # dropped; a value (a dict, a model instance) is a mistake to name at once.
            raise TypeError(
                f"Invalid state schema: {schema!r} is a {type(schema).__name__}, not a "
                "type. Give a class (TypedDict, dataclass, pydantic model) or "
                "Annotated[type, reducer]."
            )
        self._schemas.append(schema)
        for key, factory in channels_for(schema).items():
            self._channels.setdefault(key, factory)
        for key, manager in managed_keys(schema).items():
            self._managed.setdefault(key, manager)

    # Building.

    def add_node(
        self,
        node: str | Callable[..., Any] | Runnable[Any, Any],
        action: Callable[..., Any] | Runnable[Any, Any] | None = None,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy | None = None,
        input_schema: Any = None,
        retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
        input: Any = None,
        destinations: dict[str, str] | Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        defer: bool = False,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        error_handler: Callable[..., Any] | Runnable[Any, Any] | None = None,
        trace_policy: TracePolicy | None = None,
    ) -> StateGraph:
        """Add a node: a function of the state, a Runnable or a compiled graph.

        `timeout` caps each attempt of an async node (a number of seconds or a timedelta
        is a `run_timeout`); a sync node with one is refused when the graph compiles.
        `error_handler` runs, in the same step and on the node's input, when the node
        fails for good: its return value (an update, or a Command) stands for the
        node's, and a parameter `error: NodeError` receives the failure. `trace_policy`
        says what tracers record of the node's run."""
        self._warn_if_compiled("a node")
        retry_policy = renamed(
            "retry", retry, "retry_policy", retry_policy, LangGraphDeprecatedSinceV05
        )
        input_schema = renamed(
            "input", input, "input_schema", input_schema, LangGraphDeprecatedSinceV05
        )
        if not isinstance(node, str):
            if not callable(node) and not isinstance(node, Runnable | dict):
                raise TypeError(
                    f"add_node takes a node's name (a str) and its function, or the "
                    f"function alone, not {node!r} ({type(node).__name__})."
                )
            action = node
            node = _node_name(action)
        if action is None:
            raise ValueError(f"Node '{node}' needs a function or a compiled graph.")
        if node in self.nodes:
            raise ValueError(f"Node `{node}` already present.")
        if node in (START, END):
            raise ValueError(f"Node `{node}` is reserved.")
        for ch in _RESERVED_CHARS:  # checked in LangGraph's order, so the same one is named
            if ch in node:
                raise ValueError(
                    f"'{ch}' is a reserved character and is not allowed in the node names."
                )
        policy = TimeoutPolicy.coerce(timeout)
        check_engine_object(action, f"node '{node}'")
        if inspect.isfunction(action) or inspect.ismethod(action):
            injected_params(action)  # warns here, not at compile, of a config not handed over
        subgraph = action if isinstance(action, CompiledGraph) else None
        if input_schema is None and subgraph is None:
            input_schema = _first_param_schema(action)
        if input_schema is not None:
            self._add_schema(input_schema)
        dests = (
            _command_targets(action)
            if destinations is None
            else dict(destinations)
            if isinstance(destinations, Mapping)
            else tuple(destinations)
        )
        handler = None
        if error_handler is not None:
            handler = f"{ERROR_HANDLER_PREFIX}{node}"
            if handler in self.nodes:
                raise ValueError(f"Auto-generated error handler node `{handler}` already exists.")
            self.nodes[handler] = _handler_spec(error_handler, input_schema)
        self.nodes[node] = NodeSpec(
            action,
            retry_policy,
            input_schema,
            dests,
            metadata,
            defer,
            subgraph,
            cache_policy,
            policy,
            handler,
            trace_policy=trace_policy,
        )
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy | None = None,
        error_handler: Callable[..., Any] | Runnable[Any, Any] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> StateGraph:
        """Policies for every node of this graph (not its subgraphs) that does not set
        its own, applied when the graph compiles. Error handlers take the retry and
        timeout defaults too, but no cache and no handler of their own."""
        defaults = self.node_defaults
        if error_handler is not None:
            defaults.error_handler = error_handler
        if retry_policy is not None:
            defaults.retry_policy = as_policies(retry_policy)
        if cache_policy is not None:
            defaults.cache_policy = cache_policy
        if timeout is not None:
            defaults.timeout = TimeoutPolicy.coerce(timeout)
        return self

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        self._warn_if_compiled("an edge")
        if isinstance(start_key, str):
            if start_key == END:
                raise ValueError("END cannot be a start node")
            if end_key == START:
                raise ValueError("START cannot be an end node.")
            self.edges.add((start_key, end_key))
            return self
        starts = tuple(start_key)
        for start in starts:
            if start == END:
                raise ValueError("END cannot be a start node")
        if end_key == START:
            raise ValueError("START cannot be an end node.")
        self.waiting_edges.add((starts, end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        self._warn_if_compiled("an edge")
        name = getattr(path, "__name__", None) or "condition"
        if name == "<lambda>":
            name = "condition"
        branches = self.branches.setdefault(source, {})
        if name in branches:
            raise ValueError(f"Branch '{name}' already exists for node '{source}'.")
        branches[name] = Branch.create(path, path_map, schema=_first_param_schema(path))
        return self

    def _warn_if_compiled(self, what: str) -> None:
        if self.compiled:
            log.warning(
                "Adding %s to a graph that was compiled already: the compiled graph does "
                "not have it. Compile the graph again.",
                what,
            )

    def add_sequence(self, nodes: Sequence[Callable[..., Any] | tuple[str, Any]]) -> StateGraph:
        if not nodes:
            raise ValueError("add_sequence takes at least one node.")
        previous: str | None = None
        for item in nodes:
            if isinstance(item, tuple):
                name, fn = item
                self.add_node(name, fn)
            else:
                self.add_node(item)
                name = list(self.nodes)[-1]
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> StateGraph:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> StateGraph:
        return self.add_edge(key, END)

    # Compiling.

    def validate(self, interrupt: Sequence[str] = ()) -> None:
        known = set(self.nodes)
        sources = {s for s, _ in self.edges} | {
            s for starts, _ in self.waiting_edges for s in starts
        }
        sources |= set(self.branches)
        for source in sources:
            if source != START and source not in known:
                raise ValueError(f"Found edge starting at unknown node '{source}'.")
        if START not in sources:
            raise ValueError(
                "Graph must have an entrypoint: add at least one edge from START to another node"
            )
        for _, target in self.edges:
            if target != END and target not in known:
                raise ValueError(f"Found edge ending at unknown node `{target}`")
        for _, target in self.waiting_edges:
            if target != END and target not in known:
                raise ValueError(f"Found edge ending at unknown node `{target}`")
        for branches in self.branches.values():
            for branch in branches.values():
                for target in branch.destinations() or ():
                    if target != END and target not in known:
                        raise ValueError(f"Found edge ending at unknown node `{target}`")
        for name in interrupt:
            if name != "*" and name not in known:
                raise ValueError(f"Interrupt node `{name}` not found")

    def compile(
        self,
        checkpointer: BaseCheckpointSaver | None | bool = None,
        *,
        cache: BaseCache | None = None,
        store: BaseStore | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        debug: bool = False,
        name: str | None = None,
    ) -> CompiledGraph:
        if checkpointer not in (None, True, False):
            check_engine_object(checkpointer, "checkpointer")
            if not isinstance(checkpointer, BaseCheckpointSaver):
                raise TypeError(
                    "Invalid checkpointer provided: it must be an engine saver (engine."
                    "checkpoint.memory.InMemorySaver, engine.checkpoint.sql), True, False or "
                    f"None, not {type(checkpointer).__name__}."
                )
        if store is not None:
            check_engine_object(store, "store")
            if not isinstance(store, BaseStore):
                raise TypeError(f"store must be an engine.store BaseStore, not {type(store)}.")
        if cache is not None and not isinstance(cache, BaseCache):
            raise TypeError(f"cache must be an engine.cache BaseCache, not {type(cache)}.")
        before = _node_list(interrupt_before, self.nodes)
        after = _node_list(interrupt_after, self.nodes)
        self.validate([*before, *after])
        self.compiled = True
        return _Compiler(self).build(
            checkpointer=checkpointer,
            interrupt_before=before,
            interrupt_after=after,
            name=name or "LangGraph",
            store=store,
            cache=cache,
            debug=debug,
        )


class CompiledStateGraph(CompiledGraph):
    """What `StateGraph.compile()` returns (LangGraph's name for it)."""


def _node_list(value: Sequence[str] | str | None, nodes: dict[str, NodeSpec]) -> tuple[str, ...]:
    if value is None:
        return ()
    if value == "*":
        return tuple(nodes)
    return (value,) if isinstance(value, str) else tuple(value)


def _channel_keys(schema: Any, channels: dict[str, Any]) -> tuple[str, ...]:
    """The schema's keys that are state channels (managed values are not)."""
    return tuple(key for key in field_types(schema) if key in channels)


def _node_name(action: Any) -> str:
    """The name a node added without one takes, LangGraph's way: a Runnable's own name,
    else the callable's `__name__` (`<lambda>` for a lambda), else its class's name."""
    if isinstance(action, Runnable):
        return action.get_name()
    name = getattr(action, "__name__", type(action).__name__)
    if name is None:
        raise ValueError("Node name must be provided if action is not a function")
    return str(name)


def _return_hint(action: Any) -> Any:
    # Reading `func` of a Runnable wrapper (`with_fallbacks`) may run code of its own
    # that fails (it resolves its bound node's annotations): the node then has no hint.
    try:
        fn = getattr(action, "func", None) or getattr(action, "afunc", None) or action
        if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
            fn = getattr(fn, "__call__", None)  # noqa: B004
        return get_type_hints(fn).get("return")
    except Exception:
        return None


def _command_targets(action: Any) -> tuple[str, ...] | None:
    """`-> Command[Literal["a", "b"]]` names where the node may go, for the drawing."""
    hint = _return_hint(action)
    for option in get_args(hint) if get_origin(hint) is not None and hint is not None else ():
        if get_origin(option) is Command:
            hint = option
    if get_origin(hint) is not Command:
        return None
    (targets,) = get_args(hint) or (None,)
    if get_origin(targets) is Literal:
        return tuple(get_args(targets))
    return None


def _first_param_schema(fn: Callable[..., Any]) -> Any:
    """A node typed `def node(state: OtherState)` reads only that schema's keys."""
    try:
        if isinstance(fn, Runnable):
            fn = getattr(fn, "func", None) or getattr(fn, "afunc", None)
            if fn is None:
                return None
        target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else fn.__call__  # type: ignore[operator]
        params = list(inspect.signature(target).parameters.values())
        if not params:
            return None
        hint = get_type_hints(target).get(params[0].name)
    except Exception:
        return None
    if isinstance(hint, type) and not is_root(hint) and field_types(hint):
        return hint
    return None


class _Compiler:
    """Turns the builder's nodes and edges into Pregel nodes and channels."""

    def __init__(self, builder: StateGraph) -> None:
        self.b = builder
        self.state_keys = tuple(builder._channels)
        self.channels: dict[str, Callable[[], Channel]] = dict(builder._channels)
        self.state_key_set = frozenset(self.state_keys)
        self.readers: dict[Any, Callable[..., Any]] = {}
        # What an untyped node reads, as in LangGraph: the state schema's keys, not the
        # channels that input, output or private schemas add (None: they are the same).
        state = builder.state_schema
        own = set(field_types(state)) | set(builder._managed)
        self.untyped = None if is_root(state) or self.state_key_set <= own else state
        self.edges_from: dict[str, list[str]] = {}
        for start, end in builder.edges:
            self.edges_from.setdefault(start, []).append(end)

    def build(
        self,
        *,
        checkpointer: BaseCheckpointSaver | None | bool,
        interrupt_before: tuple[str, ...],
        interrupt_after: tuple[str, ...],
        name: str,
        store: BaseStore | None,
        cache: BaseCache | None,
        debug: bool,
    ) -> CompiledGraph:
        b = self.b
        self.channels[START] = lambda: EphemeralValue(key=START)
        self.channels[TASKS] = lambda: Topic(key=TASKS)
        specs = self._specs()
        for node, spec in specs.items():
            key = branch_channel(node)
            held = spec.defer  # a deferred node's trigger waits for it, through other steps
            self.channels[key] = (
                functools.partial(HeldValue, key) if held else _ephemeral_factory(key)
            )
        joins: dict[str, list[str]] = {}
        join_triggers: dict[str, list[str]] = {}
        for starts, end in sorted(b.waiting_edges):
            key = f"join:{'+'.join(starts)}:{end}"
            self.channels[key] = _barrier_factory(key, starts)
            join_triggers.setdefault(end, []).append(key)
            for start in starts:
                joins.setdefault(start, []).append(key)
        nodes: dict[str, Node] = {START: self._start_node(joins.get(START, []))}
        for node_name, spec in specs.items():
            nodes[node_name] = self._node(node_name, spec, joins.get(node_name, []))
            nodes[node_name].triggers = (
                branch_channel(node_name),
                *join_triggers.get(node_name, ()),
            )
        output_keys = _channel_keys(b.output_schema, b._channels) or self.state_keys
        input_keys = _channel_keys(b.input_schema, b._channels) or self.state_keys
        return CompiledStateGraph(
            nodes=nodes,
            channels=self.channels,
            state_keys=self.state_keys,
            input_keys=input_keys,
            output_keys=output_keys,
            checkpointer=checkpointer,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            name=name,
            builder=b,
            state_types=[*b._schemas, *b._held_types],
            goto=lambda goto: _destinations(_goto_list(goto), specs),
            store=store,
            cache=cache,
            context_schema=b.context_schema,
            debug=debug,
            # A root state is its value: the run's output and the state shown.
            output_channel=ROOT if is_root(b.output_schema) else None,
        )

    def _specs(self) -> dict[str, NodeSpec]:
        """The builder's nodes with its node defaults applied (a node's own policies
        win), the default error handler's node among them if it has one."""
        b, defaults = self.b, self.b.node_defaults
        if defaults == NodeDefaults():
            return dict(b.nodes)  # nothing to apply: no copy of every spec per compile
        default_handler = None
        if defaults.error_handler is not None:
            # A node of the builder from now on, as in LangGraph (drawn with the others).
            default_handler = DEFAULT_ERROR_HANDLER
            known = b.nodes.get(default_handler)
            if known is not None and not known.is_error_handler:
                raise ValueError(
                    f"Auto-generated default error handler node `{default_handler}` already exists."
                )
            b.nodes[default_handler] = _handler_spec(defaults.error_handler, None)
        return {
            name: dataclasses.replace(
                spec,
                retry_policy=as_policies(spec.retry_policy) or defaults.retry_policy,
                timeout=spec.timeout or defaults.timeout,
                cache_policy=spec.cache_policy
                or (None if spec.is_error_handler else defaults.cache_policy),
                error_handler=spec.error_handler
                or (None if spec.is_error_handler else default_handler),
            )
            for name, spec in b.nodes.items()
        }

    def _reader(self, schema: Any) -> Callable[..., Any]:
        """How a node (or a router) reads the state: `schema`'s keys, or (None) the
        graph's. One reader per schema, shared by the nodes that read it: a thousand
        nodes annotated with the state class read their type hints once."""
        try:
            reader = self.readers.get(schema)
        except TypeError:  # an unhashable schema object
            return self._new_reader(schema)
        if reader is None:
            reader = self.readers[schema] = self._new_reader(schema)
        return reader

    def _new_reader(self, schema: Any) -> Callable[..., Any]:
        target = schema if schema is not None else self.b.state_schema
        managed = managed_keys(target) if schema is not None else dict(self.b._managed)
        keys = (
            tuple(k for k in field_types(schema) if k not in managed)
            if schema is not None
            else self.state_keys
        )
        if managed:
            items = tuple(managed.items())

            def read_managed(
                channels: dict[str, Channel], step: int | None = None, stop: int | None = None
            ) -> Any:
                if step is None or stop is None:
                    # A router reads in its node's task, whose step and stop it shares.
                    step, stop = current().step, current().stop
                values = {key: channels[key].value for key in keys if channels[key].is_available()}
                for key, manager in items:
                    values[key] = manager.get(step, stop)
                return coerce_input(target, values)

            return read_managed

        if keys == (ROOT,):

            def read_root(channels: dict[str, Channel], *_: Any) -> Any:
                channel = channels[ROOT]
                return channel.value if channel.is_available() else None

            return read_root

        def read(
            channels: dict[str, Channel], step: int | None = None, stop: int | None = None
        ) -> Any:
            values = {}
            for key in keys:
                ch = channels[key]
                if ch.is_available():
                    values[key] = ch.value
            return coerce_input(target, values)

        return read

    def _control(
        self, source: str, joins: list[str]
    ) -> Callable[[Writes, Any, dict[str, Channel]], Any]:
        """The writes that route after `source`: static edges, joins and branches."""
        static = sorted(self.edges_from.get(source, ()))
        fixed: Writes = [(branch_channel(t), None) for t in static if t != END]
        fixed += [(key, source) for key in joins]
        branches = list(self.b.branches.get(source, {}).values())
        # An untyped router reads the state as its node does (the node's schema), and
        # what the node returned beyond that, as in LangGraph.
        spec = self.b.nodes.get(source)
        read_as = None if spec is None else spec.input_schema
        reader = self._reader(read_as if read_as is not None or spec is None else self.untyped)
        # A router typed with a schema class reads that schema's keys, as a node does.
        own = [None if br.schema is None else self._reader(br.schema) for br in branches]
        untyped = None in own
        nodes = self.b.nodes

        def route(
            state_writes: Writes,
            gotos: Any,
            channels: dict[str, Channel],
            returned: dict[str, Any] | None = None,
        ) -> Any:
            writes = list(fixed)
            if branches:
                view = _fresh(channels, state_writes)
                seen = None
                if untyped:
                    state = reader(view)
                    seen = {**returned, **state} if returned and isinstance(state, dict) else state
                pad = peek()
                run, first = (pad.node_run, pad.router_step) if pad is not None else (None, 0)
                sync_call = pad is not None and pad.sync_call
                # The task's own config: a graph invoked inside another's node runs its
                # routers while that node's config is still the Runnable context's.
                config = pad.config if pad is not None else _config()
                results = [
                    br.choose(seen if read is None else read(view), config, run, step, sync_call)
                    # LangGraph's node writes its static edges and joins one writer each,
                    # between its state writes and its routers: those are steps too.
                    for step, (br, read) in enumerate(
                        zip(branches, own, strict=True), start=first + len(fixed)
                    )
                ]
                if any(inspect.isawaitable(r) for r in results):
                    return _route_async(branches, results, writes, gotos, nodes)
                for br, result in zip(branches, results, strict=True):
                    writes += _destinations(br.resolve(result), nodes)
            if gotos:
                writes += _destinations(gotos, nodes)
            return writes

        return route

    def _start_node(self, joins: list[str]) -> Node:
        input_keys = _channel_keys(self.b.input_schema, self.b._channels) or self.state_keys
        route = self._control(START, joins)

        def write(output: Any, channels: dict[str, Channel]) -> Any:
            # A Command is the input of a run on a thread with nothing saved yet.
            command = isinstance(output, Command)
            update, gotos = (output.update, _goto_list(output.goto)) if command else (output, [])
            state_writes = with_message_ids(
                channels, update_items(update, input_keys, START, command=command)
            )
            control = route(state_writes, gotos, channels)
            return _combine(state_writes, control)

        return Node(
            name=START,
            triggers=(START,),
            runnable=None,
            is_async=False,
            read=lambda channels, *_: channels[START].get(),
            write=write,
            hidden=True,
            routes=bool(self.b.branches.get(START)),
        )

    def _node(self, name: str, spec: NodeSpec, joins: list[str]) -> Node:
        keys = self.state_key_set
        route = self._control(name, joins)

        def write(output: Any, channels: dict[str, Channel]) -> Any:
            gotos: list[Any] = []
            if output is not None and type(output) is not dict:
                check_engine_object(output, f"the return value of node '{name}'")
            if isinstance(output, Command) and output.graph == Command.PARENT:
                raise ParentCommand(output)
            if isinstance(output, Command):
                state_writes = update_items(output.update, keys, name, command=True)
                gotos = _goto_list(output.goto)
            elif isinstance(output, list | tuple) and any(isinstance(o, Command) for o in output):
                # Several updates, each a Command or a plain one, applied in order.
                state_writes = []
                for part in output:
                    if isinstance(part, Command):
                        if part.graph == Command.PARENT:
                            raise ParentCommand(part)
                        state_writes += update_items(part.update, keys, name, command=True)
                        gotos += _goto_list(part.goto)
                    else:
                        state_writes += update_items(part, keys, name)
            else:
                state_writes = update_items(output, keys, name)
            state_writes = with_message_ids(channels, state_writes)
            returned = output if type(output) is dict else None
            return _combine(state_writes, route(state_writes, gotos, channels, returned))

        if spec.subgraph is not None:
            runnable, is_async = None, True
        else:
            runnable, is_async = as_runnable(name, spec.fn)
        if spec.timeout is not None and not natively_async(spec.fn):
            raise sync_timeout_error(name)
        return Node(
            name=name,
            triggers=(branch_channel(name),),
            runnable=runnable,
            is_async=is_async,
            read=self._reader(spec.input_schema if spec.input_schema is not None else self.untyped),
            write=write,
            retry_policy=as_policies(spec.retry_policy),
            cache_policy=spec.cache_policy,
            timeout=spec.timeout,
            error_handler=spec.error_handler,
            trace_policy=spec.trace_policy,
            subgraph=spec.subgraph,
            defer=spec.defer,
            metadata=spec.metadata,
            routes=bool(self.b.branches.get(name)),
        )


def _handler_spec(handler: Any, input_schema: Any) -> NodeSpec:
    """An error handler as a node: no edges of its own (it routes with a Command), read
    with its node's input schema."""
    check_engine_object(handler, "error_handler")
    return NodeSpec(handler, None, input_schema, None, None, is_error_handler=True)


def _config() -> dict[str, Any]:
    from engine.pregel.context import get_config

    try:
        return get_config()
    except RuntimeError:
        return {}


def _combine(state_writes: Writes, control: Any) -> Any:
    if inspect.isawaitable(control):

        async def joined() -> Writes:
            return [*state_writes, *(await control)]

        return joined()
    return [*state_writes, *control]


async def _route_async(
    branches: list[Branch], results: list[Any], writes: Writes, gotos: Any, nodes: Any
) -> Writes:
    for br, result in zip(branches, results, strict=True):
        if inspect.isawaitable(result):
            result = await result
        writes += _destinations(br.resolve(result), nodes)
    if gotos:
        writes += _destinations(gotos, nodes)
    return writes


def _fresh(channels: dict[str, Channel], writes: Writes) -> dict[str, Channel]:
    """The channels as this task's own writes would leave them, for its routers."""
    if not writes:
        return channels
    pending: dict[str, list[Any]] = {}
    for key, value in writes:
        pending.setdefault(key, []).append(value)
    view = dict(channels)
    pad = peek()
    for key, values in pending.items():
        ch = channels[key].copy()
        ch.update(values)
        view[key] = ch
        if pad is not None:
            pad.folded[key] = (ch, values, channels[key])
    return view


def _goto_list(goto: Any) -> list[Any]:
    if goto is None or goto == ():
        return []
    if isinstance(goto, str | Send):
        return [goto]
    return list(goto)


def _destinations(targets: Sequence[Any], nodes: dict[str, NodeSpec]) -> Writes:
    writes: Writes = []
    for target in targets:
        if isinstance(target, Send):
            writes.append((TASKS, target))
        elif target == END:
            continue
        elif target in nodes:
            writes.append((branch_channel(target), None))
        else:
            # LangGraph drops a route to a missing node with a warning; so do we.
            log.warning("Ignoring a route to unknown node %r.", target)
    return writes


def _ephemeral_factory(key: str) -> Callable[[], Channel]:
    # A partial, not a lambda: a run makes one of these a node (a thousand for the
    # suite's sequential_1000), and a partial calls the class without a frame of its own.
    return functools.partial(EphemeralValue, key, False)


def _barrier_factory(key: str, names: tuple[str, ...]) -> Callable[[], Channel]:
    return functools.partial(NamedBarrierValue, None, names, key=key)
