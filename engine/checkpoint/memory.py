"""A saver that keeps threads in process memory: for tests, benchmarks and `invoke()` demos.

Everything is stored serialized, as a database saver would store it, so a value that
could not be saved to a database fails here too, and whatever a caller gets back is a
fresh copy that cannot alias what is stored. Values are stored in the serializer's
binary format; a list that holds some object more than once is stored element by
element, each object encoded once per save (a state built with `operator.add` holds the
same elements in many lists, and each of them many times).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import chain
from typing import Any, NamedTuple, Self

from engine.checkpoint.base import (
    SPECIAL_WRITES,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    Config,
    PendingWrite,
    Version,
    VersionInfo,
    checkpoint_config,
    matches_filter,
    thread_key,
)
from engine.checkpoint.serde.base import SerializerProtocol, maybe_add_typed_methods
from engine.checkpoint.serde.jsonplus import JsonPlusSerializer, holds_repeats, own_format


class _Saved(NamedTuple):
    checkpoint: bytes  # with empty channel_values: the values live in the blobs
    metadata: bytes
    parent_id: str | None


class _List(NamedTuple):
    """A list stored element by element: an element's bytes may be shared."""

    elements: tuple[bytes, ...]


Blob = bytes | _List


class _Write(NamedTuple):
    task_id: str
    channel: str
    value: Blob
    task_path: str


@dataclass(slots=True)
class _Thread:
    """One thread's data, so deleting or copying a thread touches nothing else."""

    # checkpoint_ns -> checkpoint_id -> saved checkpoint
    checkpoints: dict[str, dict[str, _Saved]] = field(default_factory=dict)
    # checkpoint_ns -> newest checkpoint_id, so finding the latest is not a scan
    latest: dict[str, str] = field(default_factory=dict)
    # (checkpoint_ns, channel, version) -> value; None when the channel was emptied
    blobs: dict[tuple[str, str, Version], Blob | None] = field(default_factory=dict)
    # (checkpoint_ns, checkpoint_id) -> (task_id, idx) -> write
    writes: dict[tuple[str, str], dict[tuple[str, int], _Write]] = field(default_factory=dict)


class InMemorySaver(BaseCheckpointSaver):
    """Stores checkpoints like LangGraph's in-memory saver: channel values as blobs per
    version, so a step costs only what it changed.

    With `check_immutable=True` it also remembers every checkpoint and metadata object
    it was handed (and everything inside them) and fails any later call with an
    AssertionError once one of them was changed: the loop must not mutate what it
    already saved, because a database saver would not see the change.
    """

    def __init__(
        self, *, serde: SerializerProtocol | None = None, check_immutable: bool = False
    ) -> None:
        self.serde = serde if serde is not None else JsonPlusSerializer()
        self._threads: dict[str, _Thread] = {}
        self._guard = _MutationGuard(self._codec.dumps_binary) if check_immutable else None

    @property
    def serde(self) -> SerializerProtocol:
        """The serializer: the engine's (`JsonSerializer`, `JsonPlusSerializer`) or any
        object with LangGraph's `dumps_typed` and `loads_typed`; one with only `dumps`
        and `loads` is wrapped (`SerializerCompat`), as LangGraph's savers wrap it."""
        return self._serde

    @serde.setter
    def serde(self, serde: SerializerProtocol) -> None:
        serde = maybe_add_typed_methods(serde)
        if not isinstance(serde, SerializerProtocol):
            raise TypeError(
                f"InMemorySaver's serde must have LangGraph's dumps_typed and loads_typed "
                f"(or dumps and loads), which {type(serde).__qualname__} lacks"
            )
        self._serde = serde
        self._codec = serde if own_format(serde) else _TypedCodec(serde)
        guard = getattr(self, "_guard", None)
        if guard is not None:
            # Snapshots by the new serializer (a copy by `with_allowlist` restores more
            # classes), of the objects the saver's storage holds, shared with its copies.
            self._guard = guard.using(self._codec.dumps_binary)

    # `with InMemorySaver() as saver:`, as LangGraph's is used: it holds nothing to close.
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def _sync(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Inside an event loop (a notebook's, an async test's) the sync twins work too,
        as with LangGraph's in-memory saver: nothing this saver does ever waits, so the
        async method runs to its end at once."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return super()._sync(coro)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        coro.close()
        raise RuntimeError(
            f"{type(self).__name__}'s async method waited, so its sync twin cannot run "
            "inside an event loop; use the async one"
        )

    async def aget_tuple(self, config: Config) -> CheckpointTuple | None:
        self._check_immutable()
        thread_id, ns = thread_key(config)
        thread = self._threads.get(thread_id)
        if thread is None:
            return None
        checkpoint_id = config["configurable"].get("checkpoint_id") or thread.latest.get(ns)
        saved = thread.checkpoints.get(ns, {}).get(checkpoint_id) if checkpoint_id else None
        if saved is None:
            return None
        return self._load(thread_id, thread, ns, checkpoint_id, saved)

    async def alist(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Newest first over every branch; no config means every thread, a config
        without checkpoint_ns every namespace, one with checkpoint_id just that one.
        Several threads or namespaces come one after another, each in the order it was
        first saved to, as LangGraph's in-memory saver lists them."""
        self._check_immutable()
        conf = (config or {}).get("configurable", {})
        thread_id, ns, only_id = (
            conf.get(k) for k in ("thread_id", "checkpoint_ns", "checkpoint_id")
        )
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        if thread_id is None:
            threads = list(self._threads.items())
        else:
            thread = self._threads.get(str(thread_id))
            threads = [(str(thread_id), thread)] if thread else []
        found = [
            (checkpoint_id, tid, cns)
            for tid, thread in threads
            for cns, checkpoints in thread.checkpoints.items()
            if ns is None or cns == ns
            for checkpoint_id in sorted(checkpoints, reverse=True)
            if (only_id is None or checkpoint_id == only_id)
            and (before_id is None or checkpoint_id < before_id)
        ]
        remaining = limit
        for checkpoint_id, tid, cns in found:
            if remaining is not None and remaining <= 0:
                return
            thread = self._threads.get(tid)
            saved = thread.checkpoints.get(cns, {}).get(checkpoint_id) if thread else None
            if thread is None or saved is None:  # deleted while the caller was iterating
                continue
            if filter and not matches_filter(self._codec.loads(saved.metadata), filter):
                continue
            yield self._load(tid, thread, cns, checkpoint_id, saved)
            if remaining is not None:
                remaining -= 1

    async def aput(
        self,
        config: Config,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Config:
        self._check_immutable()
        thread_id, ns = thread_key(config)
        dumps = self._codec.dumps_binary
        encode = self._encoder()
        checkpoint_id = checkpoint["id"]
        # Serialize everything before storing anything, so a refused value stores nothing.
        skeleton = dumps({**checkpoint, "channel_values": {}})
        values = checkpoint["channel_values"]
        blobs = {
            (ns, channel, version): encode(values[channel]) if channel in values else None
            for channel, version in new_versions.items()
        }
        saved = _Saved(skeleton, dumps(metadata), config["configurable"].get("checkpoint_id"))
        if self._guard is not None:
            self._guard.remember(checkpoint, f"checkpoint {checkpoint_id}")
            self._guard.remember(metadata, f"metadata of checkpoint {checkpoint_id}")
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = self._threads[thread_id] = _Thread()
        thread.blobs.update(blobs)
        thread.checkpoints.setdefault(ns, {})[checkpoint_id] = saved
        if checkpoint_id > thread.latest.get(ns, ""):
            thread.latest[ns] = checkpoint_id
        return checkpoint_config(thread_id, ns, checkpoint_id)

    async def aput_writes(
        self, config: Config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Ordinary writes keep the first save (a retried save is a no-op); a special
        write (error, interrupt, resume, scheduled) replaces the task's previous one."""
        self._check_immutable()
        thread_id, ns = thread_key(config)
        checkpoint_id = config["configurable"].get("checkpoint_id")
        if not checkpoint_id:
            raise ValueError("Writes belong to a checkpoint: the config needs a checkpoint_id")
        encode = self._encoder()
        encoded = [
            (
                (task_id, SPECIAL_WRITES.get(channel, idx)),
                _Write(task_id, channel, encode(value), task_path),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = self._threads[thread_id] = _Thread()
        stored = thread.writes.setdefault((ns, checkpoint_id), {})
        for key, write in encoded:
            if key[1] < 0 or key not in stored:
                stored[key] = write

    async def adelete_thread(self, thread_id: str) -> None:
        self._check_immutable()
        self._threads.pop(str(thread_id), None)

    async def alist_versions(self, thread_id: str, checkpoint_ns: str = "") -> list[VersionInfo]:
        self._check_immutable()
        thread = self._threads.get(str(thread_id))
        if thread is None:
            return []
        out = []
        for checkpoint_id, saved in thread.checkpoints.get(checkpoint_ns, {}).items():
            metadata = self._codec.loads(saved.metadata)
            ts = self._codec.loads(saved.checkpoint).get("ts")
            out.append(
                VersionInfo(
                    checkpoint_id,
                    saved.parent_id,
                    metadata.get("source"),
                    metadata.get("run_id"),
                    ts,
                )
            )
        return out

    async def adelete_run(self, thread_id: str, run_id: str) -> None:
        self._check_immutable()
        thread = self._threads.get(str(thread_id))
        if thread is None:
            return
        loads = self._codec.loads
        for ns, checkpoints in thread.checkpoints.items():
            doomed = [
                checkpoint_id
                for checkpoint_id, saved in checkpoints.items()
                if loads(saved.metadata).get("run_id") == run_id
            ]
            for checkpoint_id in doomed:
                del checkpoints[checkpoint_id]
                thread.writes.pop((ns, checkpoint_id), None)
            thread.latest[ns] = max(checkpoints, default="")

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write under the same ids; metadata that records the
        source thread id is changed to name the target."""
        self._check_immutable()
        source_thread_id, target_thread_id = str(source_thread_id), str(target_thread_id)
        source = self._threads.get(source_thread_id)
        if source is None:
            return
        target = self._threads.setdefault(target_thread_id, _Thread())
        for ns, checkpoints in source.checkpoints.items():
            copied = target.checkpoints.setdefault(ns, {})
            for checkpoint_id, saved in checkpoints.items():
                copied[checkpoint_id] = self._retarget(saved, source_thread_id, target_thread_id)
            if source.latest[ns] > target.latest.get(ns, ""):
                target.latest[ns] = source.latest[ns]
        target.blobs.update(source.blobs)
        for key, writes in source.writes.items():
            target.writes.setdefault(key, {}).update(writes)

    # Helpers.

    def _encoder(self) -> Callable[[Any], Blob]:
        """Encodes the values of one save. A list that holds an object more than once,
        or dicts that hold the same values, is stored element by element, and each
        object is encoded once per save (all stay alive, so their ids stay theirs,
        until the save ends)."""
        dumps = self._codec.dumps_binary
        dumps_sharing = self._codec.dumps_binary_sharing
        memo: dict[int, bytes] = {}
        shared: dict[int, Any] = {}

        def encode(value: Any) -> Blob:
            if type(value) is not list:
                return dumps(value)
            sharing = _dicts_share_values(value)
            if not sharing and not holds_repeats(value):
                return dumps(value)
            elements = []
            for element in value:
                data = memo.get(id(element))
                if data is None:
                    data = dumps_sharing(element, shared) if sharing else dumps(element)
                    memo[id(element)] = data
                elements.append(data)
            return _List(tuple(elements))

        return encode

    def _decode(self, blob: Blob) -> Any:
        loads = self._codec.loads
        if type(blob) is _List:
            return [loads(data) for data in blob.elements]
        return loads(blob)

    def _load(
        self, thread_id: str, thread: _Thread, ns: str, checkpoint_id: str, saved: _Saved
    ) -> CheckpointTuple:
        loads, decode = self._codec.loads, self._decode
        checkpoint = loads(saved.checkpoint)
        blobs = thread.blobs
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = blobs.get((ns, channel, version))
            if blob is not None:
                values[channel] = decode(blob)
        checkpoint["channel_values"] = values
        writes = thread.writes.get((ns, checkpoint_id))
        pending: list[PendingWrite] = (
            [(w.task_id, w.channel, decode(w.value)) for _, w in sorted(writes.items())]
            if writes
            else []
        )
        return CheckpointTuple(
            config=checkpoint_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=loads(saved.metadata),
            parent_config=(
                checkpoint_config(thread_id, ns, saved.parent_id) if saved.parent_id else None
            ),
            pending_writes=pending,
        )

    def _retarget(self, saved: _Saved, source_thread_id: str, target_thread_id: str) -> _Saved:
        metadata = self._codec.loads(saved.metadata)
        if metadata.get("thread_id") != source_thread_id:
            return saved
        metadata["thread_id"] = target_thread_id
        return saved._replace(metadata=self._codec.dumps_binary(metadata))

    def _check_immutable(self) -> None:
        if self._guard is not None:
            self._guard.verify()


def _dicts_share_values(items: list[Any]) -> bool:
    """Whether `items` are dicts of which some hold the same dict or list."""
    try:
        values = list(chain.from_iterable(map(dict.values, items)))
    except TypeError:  # an item is not a dict
        return False
    return holds_repeats(values)


_IMMUTABLE = frozenset(
    {str, int, float, bool, type(None), bytes, Decimal, uuid.UUID}
    | {dt.datetime, dt.date, dt.time, dt.timedelta}
)


class _TypedCodec:
    """Stores through a serializer of the user's own: a value as its type name, a zero
    byte, then the serializer's bytes."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde

    def dumps_binary(self, obj: Any) -> bytes:
        kind, data = self.serde.dumps_typed(obj)
        return kind.encode() + b"\0" + data

    def dumps_binary_sharing(self, obj: Any, shared: dict[int, Any]) -> bytes:
        return self.dumps_binary(obj)

    def loads(self, data: bytes) -> Any:
        kind, _, blob = data.partition(b"\0")
        return self.serde.loads_typed((kind.decode(), blob))


class _MutationGuard:
    """Remembers every object reachable from what aput() was handed, with a snapshot of
    its own contents, and checks them all again on request.

    Containers are snapshotted shallowly (their children are remembered in their own
    right), so a value shared by many checkpoints, like the messages of a long thread,
    is checked once per call rather than once per checkpoint. Other objects (messages,
    schema classes) are compared by their serialized form.
    """

    def __init__(self, dumps: Callable[[Any], bytes]) -> None:
        self._dumps = dumps
        self._nodes: dict[int, tuple[Any, Any, str]] = {}  # id -> (object, snapshot, where)

    def using(self, dumps: Callable[[Any], bytes]) -> _MutationGuard:
        """A guard of the same objects that snapshots with `dumps`."""
        guard = _MutationGuard(dumps)
        guard._nodes = self._nodes
        return guard

    def _snapshot(self, node: Any) -> Any:
        cls = type(node)
        if cls is list:
            return tuple(node)
        if cls is dict:
            return tuple(node.items())
        if cls is set:
            return frozenset(node)
        return self._dumps(node)

    def remember(self, obj: Any, where: str) -> None:
        stack: list[tuple[Any, str]] = [(obj, "")]
        while stack:
            node, path = stack.pop()
            cls = type(node)
            if cls in _IMMUTABLE or id(node) in self._nodes:
                continue
            if cls is dict:
                stack.extend((v, f"{path}[{k!r}]") for k, v in node.items())
            elif cls is list or cls is tuple:
                stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
            if cls is not tuple and cls is not frozenset:
                # The node is kept alive here, so its id cannot be reused by another.
                label = f"{where}, at {path}," if path else where
                self._nodes[id(node)] = (node, self._snapshot(node), label)

    def verify(self) -> None:
        for node, snapshot, where in self._nodes.values():
            if self._snapshot(node) != snapshot:
                raise AssertionError(
                    f"{where} was mutated after aput() saved it; "
                    "the loop must build new objects instead of changing saved ones"
                )


MemorySaver = InMemorySaver
"""The older name of InMemorySaver, still used by many programs."""
