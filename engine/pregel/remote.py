"""`RemoteGraph`: a graph served by an Agent Server (Threadline's or LangGraph's) used as
if it were local, as LangGraph's `langgraph.pregel.remote` offers it: `invoke`, `stream`,
the thread's state and history, `update_state`, the drawing, sync and async, and as a
node of a local graph.

As a node, it runs the remote thread named by the local run's `thread_id`, hands the
remote graph's parts to the local stream under the node's namespace (in the stream modes
the local call asked for), and stops the local run at a remote interrupt with the same
questions. Resuming the local run runs the node again: a new run of the remote thread,
as in LangGraph (answer the remote thread with `Command(resume=...)` on it).

It talks to the server through a client shaped as `langgraph_sdk`'s: its own
(`engine.pregel.server_client`, made from `url`), or one the program passes
(`client=`, `sync_client=`), the SDK's included.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Literal, Self
from uuid import UUID

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langchain_core.runnables.graph import Edge, Graph, Node

from engine.constants import INTERRUPT
from engine.errors import GraphInterrupt, ParentCommand
from engine.pregel import context as task_context
from engine.pregel.protocol import PregelProtocol
from engine.pregel.server_client import AsyncServerClient, SyncServerClient
from engine.types import Command, GraphOutput, Interrupt, PregelTask, Send, StateSnapshot

__all__ = ["RemoteException", "RemoteGraph"]

NS_SEP = "|"
# Keys of a local run's configurable that are its own, never sent to the server: where
# the run's checkpoints are, and the engine's objects.
_LOCAL_KEYS = frozenset({"checkpoint_id", "checkpoint_ns", "checkpoint_map", "task_id"})


class RemoteException(Exception):
    """The remote run failed: the error the server streamed."""


class RemoteGraph(PregelProtocol):
    """A served graph (by assistant id or graph id) behind the local graph interface."""

    def __init__(
        self,
        assistant_id: str,
        /,
        *,
        url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: Any = None,
        sync_client: Any = None,
        config: RunnableConfig | None = None,
        name: str | None = None,
        distributed_tracing: bool = False,
    ) -> None:
        self.assistant_id = assistant_id
        self.name = assistant_id if name is None else name
        self.config = config
        self.distributed_tracing = distributed_tracing
        self.url, self.api_key, self.headers = url, api_key, headers
        if client is None and url is not None:
            client = AsyncServerClient(url, api_key=api_key, headers=headers)
        if sync_client is None and url is not None:
            sync_client = SyncServerClient(url, api_key=api_key, headers=headers)
        self.client = client
        self.sync_client = sync_client

    def copy(self, update: dict[str, Any]) -> Self:
        """A RemoteGraph like this one, with `update`'s attributes (the same clients)."""
        fields = {
            "name": self.name,
            "config": self.config,
            "client": self.client,
            "sync_client": self.sync_client,
            "distributed_tracing": self.distributed_tracing,
        }
        attrs = {**fields, **update}
        return type(self)(attrs.pop("assistant_id", self.assistant_id), **attrs)

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Self:
        merged = merge_configs(self.config, config, RunnableConfig(**kwargs))  # type: ignore[typeddict-item]
        return self.copy({"config": merged})

    def _sync(self) -> Any:
        if self.sync_client is None:
            raise ValueError(
                "RemoteGraph has no sync client: give `url` or `sync_client` to call its "
                "sync methods."
            )
        return self.sync_client

    def _async(self) -> Any:
        if self.client is None:
            raise ValueError(
                "RemoteGraph has no async client: give `url` or `client` to call its async methods."
            )
        return self.client

    # The drawing.

    def get_graph(
        self,
        config: RunnableConfig | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Graph:
        """The served graph's drawing (`GET /assistants/{id}/graph`); `config` is unused."""
        found = self._sync().assistants.get_graph(
            assistant_id=self.assistant_id, xray=xray, headers=headers, params=params
        )
        return _drawing(found)

    async def aget_graph(
        self,
        config: RunnableConfig | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Graph:
        found = await self._async().assistants.get_graph(
            assistant_id=self.assistant_id, xray=xray, headers=headers, params=params
        )
        return _drawing(found)

    # The thread's state.

    def get_state(
        self,
        config: RunnableConfig,
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> StateSnapshot:
        """The thread's state, at the checkpoint the config names or its latest."""
        threads = self._sync().threads
        return _snapshot(
            threads.get_state(
                **self._at(config), subgraphs=subgraphs, headers=headers, params=params
            )
        )

    async def aget_state(
        self,
        config: RunnableConfig,
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> StateSnapshot:
        threads = self._async().threads
        return _snapshot(
            await threads.get_state(
                **self._at(config), subgraphs=subgraphs, headers=headers, params=params
            )
        )

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's states, newest first (10 unless `limit` says)."""
        states = self._sync().threads.get_history(
            **self._at(config),
            limit=limit or 10,
            before=_checkpoint(before),
            metadata=filter,
            headers=headers,
            params=params,
        )
        for state in states:
            yield _snapshot(state)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        states = await self._async().threads.get_history(
            **self._at(config),
            limit=limit or 10,
            before=_checkpoint(before),
            metadata=filter,
            headers=headers,
            params=params,
        )
        for state in states:
            yield _snapshot(state)

    def update_state(
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> RunnableConfig:
        """A new version of the thread with `values` written (as `as_node`); its config."""
        answer = self._sync().threads.update_state(
            **self._at(config), values=values, as_node=as_node, headers=headers, params=params
        )
        return _config(answer["checkpoint"])

    async def aupdate_state(
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> RunnableConfig:
        answer = await self._async().threads.update_state(
            **self._at(config), values=values, as_node=as_node, headers=headers, params=params
        )
        return _config(answer["checkpoint"])

    def bulk_update_state(self, config: RunnableConfig, supersteps: Sequence[Any]) -> Any:
        raise NotImplementedError(
            "RemoteGraph cannot write several supersteps at once: call update_state for each."
        )

    async def abulk_update_state(self, config: RunnableConfig, supersteps: Sequence[Any]) -> Any:
        raise NotImplementedError(
            "RemoteGraph cannot write several supersteps at once: call aupdate_state for each."
        )

    # Runs.

    def stream(
        self,
        input: dict[str, Any] | Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: str | list[str] | None = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """A run of the remote thread the config names (a thread-less run without one),
        its parts as a local graph's `stream` gives them."""
        relay = _Relay(stream_mode, subgraphs, version)
        request = self._run_request(
            input, config, relay, context, interrupt_before, interrupt_after, headers, kwargs
        )
        for chunk in self._sync().runs.stream(params=params, **request):
            yield from relay(chunk)

    async def astream(
        self,
        input: dict[str, Any] | Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: str | list[str] | None = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        relay = _Relay(stream_mode, subgraphs, version)
        request = self._run_request(
            input, config, relay, context, interrupt_before, interrupt_after, headers, kwargs
        )
        async for chunk in self._async().runs.stream(params=params, **request):
            for part in relay(chunk):
                yield part

    def invoke(
        self,
        input: dict[str, Any] | Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> Any:
        """A run of the remote thread to its end: the last values (with the questions
        under `__interrupt__` when it stopped at an interrupt)."""
        parts = self.stream(
            input,
            config,
            context=context,
            stream_mode="values",
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            headers=headers,
            params=params,
            version=version,
            **kwargs,
        )
        last = deque(parts, maxlen=1)
        return _output(last.pop() if last else None, version)

    async def ainvoke(
        self,
        input: dict[str, Any] | Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> Any:
        last = None
        async for part in self.astream(
            input,
            config,
            context=context,
            stream_mode="values",
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            headers=headers,
            params=params,
            version=version,
            **kwargs,
        ):
            last = part
        return _output(last, version)

    async def astream_events(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Not offered, as with LangGraph's for v1 and v2 (its v3 is experimental)."""
        raise NotImplementedError(
            "RemoteGraph.astream_events is not implemented: use astream() with the stream "
            "modes you need (messages, updates, values, ...)."
        )

    def stream_events(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "RemoteGraph.stream_events is not implemented: use stream() with the stream "
            "modes you need (messages, updates, values, ...)."
        )

    def _merged(self, config: RunnableConfig | None) -> dict[str, Any]:
        return dict(merge_configs(self.config, config))

    def _at(self, config: RunnableConfig) -> dict[str, Any]:
        """The thread and checkpoint the config (over this graph's) names."""
        merged = self._merged(config)
        return {"thread_id": _thread_id(merged), "checkpoint": _checkpoint(merged)}

    def _run_request(
        self,
        input: Any,
        config: RunnableConfig | None,
        relay: _Relay,
        context: Any,
        interrupt_before: Any,
        interrupt_after: Any,
        headers: dict[str, str] | None,
        kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        """The arguments of the client's `runs.stream` for one run."""
        sent = _sendable(self._merged(config))
        thread_id = sent.get("configurable", {}).pop("thread_id", None)
        command = None
        if isinstance(input, Command):
            command, input = _command(input), None
        return {
            "thread_id": thread_id,
            "assistant_id": self.assistant_id,
            "input": input,
            "command": command,
            "config": sent,
            "context": context,
            "stream_mode": relay.sent_modes,
            "interrupt_before": interrupt_before,
            "interrupt_after": interrupt_after,
            "stream_subgraphs": relay.subgraphs or relay.caller is not None,
            "if_not_exists": "create",
            "headers": _traced(headers) if self.distributed_tracing else headers,
            **kwargs,
        }


class _Caller:
    """The local run a RemoteGraph runs in as a node: its task's namespace, and the
    local stream that is shown the remote parts."""

    def __init__(self, pad: task_context.Scratchpad) -> None:
        self.ns = tuple(pad.task_ns.split(NS_SEP)) if pad.task_ns else ()
        self.loop = pad.loop
        self.modes: frozenset[str] = pad.loop.modes if pad.loop is not None else frozenset()


class _Relay:
    """What one run's stream hands its reader, part by part: the modes asked for, in the
    format asked for; the local stream (as a node) is shown its own modes; an interrupt
    stops the local run (as a node), an error raises, a Command for the parent goes up."""

    def __init__(self, stream_mode: str | list[str] | None, subgraphs: bool, version: str):
        if version not in ("v1", "v2"):
            raise ValueError(f"version must be 'v1' or 'v2', got {version!r}.")
        self.single = stream_mode is None or isinstance(stream_mode, str)
        asked = [stream_mode or "updates"] if self.single else list(stream_mode)  # type: ignore[arg-type]
        self.subgraphs = subgraphs
        self.version = version
        pad = task_context.peek()
        self.caller = _Caller(pad) if pad is not None else None
        # The server names the mode of (message, metadata) pairs `messages-tuple`.
        self.wanted = {"messages" if m == "messages-tuple" else m for m in asked}
        sent = [*asked, *sorted(self.caller.modes if self.caller else ())]
        sent = ["messages-tuple" if m == "messages" else m for m in sent if m != "events"]
        # `updates` shows the remote interrupts, even when no one asked for it.
        self.sent_modes = list(dict.fromkeys([*sent, "updates"]))

    def __call__(self, chunk: Any) -> list[Any]:
        mode, *inner = chunk.event.split(NS_SEP)
        ns = tuple(inner)
        data = tuple(chunk.data) if mode == "messages" else chunk.data
        if mode == "error":
            raise RemoteException(data)
        if mode == "command" and isinstance(data, dict) and data.get("graph") == Command.PARENT:
            raise ParentCommand(Command(**data))
        caller = self.caller
        if caller is not None:
            ns = caller.ns + ns
            if caller.loop is not None and mode in caller.modes:
                caller.loop.emit(ns, mode, data)
            if mode == "updates" and isinstance(data, dict) and INTERRUPT in data:
                raise GraphInterrupt([_interrupt(i) for i in data[INTERRUPT]])
        if mode not in self.wanted:
            return []
        # Parts of the remote graph's subgraphs were asked for the local stream only.
        if inner and not self.subgraphs and mode != "messages":
            return []
        if self.version == "v2":
            interrupts: tuple[Interrupt, ...] = ()
            if mode == "values" and isinstance(data, dict) and INTERRUPT in data:
                data = dict(data)
                interrupts = tuple(_interrupt(i) for i in data.pop(INTERRUPT))
            return [{"type": mode, "ns": ns, "data": data, "interrupts": interrupts}]
        if self.subgraphs:
            return [(ns, data) if self.single else (ns, mode, data)]
        return [data if self.single else chunk]


def _output(last: Any, version: str) -> Any:
    if version == "v2" and last is not None:
        return GraphOutput(value=last["data"], interrupts=tuple(last["interrupts"]))
    return last


def _interrupt(found: Any) -> Interrupt:
    if isinstance(found, Interrupt):
        return found
    return Interrupt(**found) if isinstance(found, dict) else Interrupt(found)


def _command(command: Command) -> dict[str, Any]:
    """A Command as the server takes it: only what it sets; a Send as node and arg."""
    goto = command.goto
    if isinstance(goto, Send | str):
        goto = [goto]
    sent = {
        "update": command.update,
        "resume": command.resume,
        "goto": [{"node": g.node, "input": g.arg} if isinstance(g, Send) else g for g in goto or ()]
        or None,
    }
    return {key: value for key, value in sent.items() if value is not None}


def _sendable(config: dict[str, Any]) -> dict[str, Any]:
    """The config with what a server can take: plain JSON values, without the local
    run's own keys (where its checkpoints are, the engine's objects)."""
    sent: dict[str, Any] = {}
    if "recursion_limit" in config:
        sent["recursion_limit"] = config["recursion_limit"]
    if "tags" in config:
        sent["tags"] = [tag for tag in config["tags"] if isinstance(tag, str)]
    for section in ("metadata", "configurable"):
        if section in config:
            sent[section] = {
                key: plain
                for key, value in config[section].items()
                if isinstance(key, str)
                and not (section == "configurable" and _local(key))
                and (plain := _plain(value)) is not None
            }
    return sent


def _local(key: str) -> bool:
    return key in _LOCAL_KEYS or key.startswith("__pregel_")


def _plain(value: Any) -> Any:
    """A value of plain JSON kinds, what is not of them left out (None)."""
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        kept = {k: _plain(v) for k, v in value.items() if isinstance(k, str)}
        return {k: v for k, v in kept.items() if v is not None}
    if isinstance(value, list | tuple):
        return [p for p in map(_plain, value) if p is not None]
    return str(value) if isinstance(value, UUID) else None


def _traced(headers: dict[str, str] | None) -> dict[str, str] | None:
    """The headers with LangSmith's of the current trace, so the server's run joins it."""
    from langsmith.run_helpers import get_current_run_tree

    tree = get_current_run_tree()
    if tree is None:
        return headers
    return {**(headers or {}), **tree.to_headers()}


def _thread_id(config: dict[str, Any]) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is None:
        raise ValueError("RemoteGraph needs the thread: give configurable.thread_id.")
    return str(thread_id)


def _checkpoint(config: RunnableConfig | dict[str, Any] | None) -> dict[str, Any] | None:
    """Where in a thread the config points, as the server names it."""
    configurable = (config or {}).get("configurable") or {}
    keys = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")
    found = {key: configurable[key] for key in keys if key in configurable}
    return found or None


def _config(checkpoint: dict[str, Any]) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": checkpoint["thread_id"],
            "checkpoint_ns": checkpoint["checkpoint_ns"],
            "checkpoint_id": checkpoint["checkpoint_id"],
            "checkpoint_map": checkpoint.get("checkpoint_map") or {},
        }
    }


def _snapshot(state: dict[str, Any]) -> StateSnapshot:
    """A thread state the server sent, as a local graph's `get_state` gives it."""
    tasks = tuple(_task(task) for task in state.get("tasks") or ())
    parent = state.get("parent_checkpoint")
    return StateSnapshot(
        values=state["values"],
        next=tuple(state.get("next") or ()),
        config=_config(state["checkpoint"]),
        metadata=state.get("metadata"),
        created_at=state.get("created_at"),
        parent_config=_config(parent) if parent else None,
        tasks=tasks,
        interrupts=tuple(i for task in tasks for i in task.interrupts),
    )


def _task(task: dict[str, Any]) -> PregelTask:
    inner = task.get("state")
    checkpoint = task.get("checkpoint")
    return PregelTask(
        id=task["id"],
        name=task["name"],
        path=(),
        error=Exception(task["error"]) if task.get("error") else None,
        interrupts=tuple(_interrupt(i) for i in task.get("interrupts") or ()),
        state=_snapshot(inner) if inner else ({"configurable": checkpoint} if checkpoint else None),
        result=task.get("result"),
    )


def _drawing(found: dict[str, Any]) -> Graph:
    nodes = {}
    for node in found["nodes"]:
        node_id = str(node["id"])
        data = node.get("data", {})
        name = node.get("name") or (
            data.get("name", node_id) if isinstance(data, dict) else node_id
        )
        nodes[node_id] = Node(id=node_id, name=name, data=data, metadata=node.get("metadata"))
    edges = [
        Edge(
            source=edge["source"],
            target=edge["target"],
            data=edge.get("data"),
            conditional=edge.get("conditional", False),
        )
        for edge in found["edges"]
    ]
    return Graph(nodes=nodes, edges=edges)
