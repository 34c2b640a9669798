"""The saver protocol: how the loop stores and finds a thread's versions.

A saver keeps, per (thread_id, checkpoint_ns), a tree of checkpoints linked to their
parents, and per checkpoint the pending writes of tasks that finished in a step that did
not complete. Every method is async first; the sync twins exist for `invoke()` callers.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Collection, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, Self, cast

from typing_extensions import TypedDict

from engine.checkpoint.ids import new_checkpoint_id
from engine.checkpoint.serde.base import SerializerProtocol, maybe_add_typed_methods
from engine.constants import CALLED_BY, ERROR, ERROR_SOURCE, INTERRUPT, RESUME, SCHEDULED

Config = dict[str, Any]
Version = int
# The format of the engine's checkpoints (their `v`).
LATEST_VERSION = 1
ChannelVersions = dict[str, Version]  # LangGraph's name: each channel's version

# Outcome writes (a task has at most one of each) replace an earlier save of theirs, while
# ordinary writes of a task are kept from the first save (idempotent retries).
SPECIAL_WRITES = {
    ERROR: -1,
    SCHEDULED: -2,
    INTERRUPT: -3,
    RESUME: -4,
    ERROR_SOURCE: -5,
    CALLED_BY: -6,
}
# LangGraph's name for it: where a saver files a task's outcome write among its writes.
WRITES_IDX_MAP = SPECIAL_WRITES


class Checkpoint(TypedDict):
    """One version of a thread: channel values and the bookkeeping that schedules nodes."""

    v: int
    id: str
    ts: str
    channel_values: dict[str, Any]
    channel_versions: ChannelVersions
    versions_seen: dict[str, ChannelVersions]
    updated_channels: list[str] | None


class CheckpointMetadata(TypedDict, total=False):
    source: str  # "input" | "loop" | "update" | "fork"
    step: int
    parents: dict[str, str]
    run_id: str


PendingWrite = tuple[str, str, Any]  # (task_id, channel, value)


class CheckpointTuple(NamedTuple):
    """A saved checkpoint with its config, metadata, parent and pending writes: a tuple,
    as LangGraph's is (savers of the user's own unpack and make them)."""

    config: Config
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: Config | None = None
    pending_writes: list[PendingWrite] | None = None


class VersionInfo(NamedTuple):
    """A checkpoint's place in the tree, without its values: cheap to list for a long
    thread (a conversation tree, a branch picker)."""

    checkpoint_id: str
    parent_id: str | None
    source: str | None
    run_id: str | None
    created_at: str | None


@dataclass(frozen=True, slots=True)
class PutCheckpoint:
    """A save of `aput`'s arguments, for `abatch`."""

    config: Config
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions


@dataclass(frozen=True, slots=True)
class PutWrites:
    """A save of `aput_writes`'s arguments, for `abatch`."""

    config: Config
    writes: Sequence[tuple[str, Any]]
    task_id: str
    task_path: str = ""


SaveOp = PutCheckpoint | PutWrites


def thread_key(config: Config) -> tuple[str, str]:
    """The (thread_id, checkpoint_ns) a config addresses."""
    conf = config.get("configurable", {})
    if "thread_id" not in conf:
        raise ValueError(
            'A checkpointer needs a thread: pass config={"configurable": {"thread_id": ...}}'
        )
    return str(conf["thread_id"]), conf.get("checkpoint_ns", "")


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Config:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def empty_checkpoint() -> Checkpoint:
    """A checkpoint of no values: the parent of a thread's first, for a saver's own tests
    and tools, as LangGraph's helper of the same name."""
    return {
        "v": LATEST_VERSION,
        "id": new_checkpoint_id(),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }


def copy_checkpoint(checkpoint: Checkpoint) -> Checkpoint:
    """A copy whose dicts (values, versions, versions seen) can change apart from the
    original's; the values themselves are shared."""
    return {
        **checkpoint,
        "channel_values": dict(checkpoint["channel_values"]),
        "channel_versions": dict(checkpoint["channel_versions"]),
        "versions_seen": {k: dict(v) for k, v in checkpoint["versions_seen"].items()},
    }


def create_checkpoint(
    checkpoint: Checkpoint, channels: Mapping[str, Any] | None, step: int, *, id: str | None = None
) -> Checkpoint:
    """The next checkpoint after `checkpoint`: its versions, a new id and time, and the
    values `channels` hold (those with a version; an empty one is left out), else the
    values `checkpoint` has. `step` is LangGraph's argument, which the id does not need."""
    from engine.channels.base import MISSING
    from engine.errors import EmptyChannelError

    values = {} if channels is not None else dict(checkpoint["channel_values"])
    if channels is not None:
        for key, channel in channels.items():
            if key not in checkpoint["channel_versions"]:
                continue
            try:
                value = channel.checkpoint()
            except EmptyChannelError:
                continue
            if value is not MISSING:
                values[key] = value
    return {
        **copy_checkpoint(checkpoint),
        "v": LATEST_VERSION,
        "id": id or new_checkpoint_id(),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": values,
    }


def get_checkpoint_id(config: Config) -> str | None:
    """The checkpoint id a config names, if any."""
    return (config.get("configurable") or {}).get("checkpoint_id")


# What LangGraph's savers never copy from a run's config into its checkpoints' metadata
# (the thread's coordinates, and what LangGraph puts in each task's metadata).
EXCLUDED_METADATA_KEYS = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        "langgraph_step",
        "langgraph_node",
        "langgraph_triggers",
        "langgraph_path",
        "langgraph_checkpoint_ns",
    }
)


def get_checkpoint_metadata(config: Config, metadata: CheckpointMetadata) -> CheckpointMetadata:
    """`metadata` with the plain values (str, int, float, bool) of the config's `metadata`
    and `configurable` it does not have, NUL characters removed from strings: what
    LangGraph's savers store. The engine's own savers store the run's metadata only
    (docs/langgraph-differences.md); this is for a saver of the user's own."""

    def clean(value: Any) -> Any:
        return value.replace("\x00", "") if isinstance(value, str) else value

    merged: dict[str, Any] = {key: clean(value) for key, value in metadata.items()}
    for source in (config.get("metadata"), config.get("configurable")):
        for key, value in (source or {}).items():
            if key in merged or key in EXCLUDED_METADATA_KEYS or key.startswith("__"):
                continue
            if isinstance(value, str | int | float | bool):
                merged[key] = clean(value)
    return cast(CheckpointMetadata, merged)


def get_serializable_checkpoint_metadata(
    config: Config, metadata: CheckpointMetadata
) -> CheckpointMetadata:
    """`get_checkpoint_metadata` without the old `writes` key."""
    merged = cast(dict[str, Any], get_checkpoint_metadata(config, metadata))
    merged.pop("writes", None)
    return cast(CheckpointMetadata, merged)


def writes_sort_key(task_path: str, task_id: str = "", idx: int = 0) -> tuple[str, str, int]:
    """The order a step's writes are applied in: by task path, task id, then index."""
    return (task_path, task_id, idx)


def __getattr__(name: str) -> Any:
    # LangGraph's path to the error, made on first use: engine.errors imports this module.
    if name == "EmptyChannelError":
        from engine.errors import EmptyChannelError

        return EmptyChannelError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def matches_filter(metadata: CheckpointMetadata, filter: dict[str, Any] | None) -> bool:
    return not filter or all(metadata.get(k) == v for k, v in filter.items())


class BaseCheckpointSaver:
    """Subclasses implement the async methods; the sync twins call them on a private
    event loop when none is running, which is what `invoke()` from plain code needs.

    A saver of the user's own may store through `self.serde`, LangGraph's way."""

    serde: SerializerProtocol

    def __init__(self, *, serde: SerializerProtocol | None = None) -> None:
        # The serializer's module imports this one's users (engine.types).
        from engine.checkpoint.serde.jsonplus import JsonPlusSerializer

        self.serde = maybe_add_typed_methods(serde) if serde is not None else JsonPlusSerializer()

    async def aget_tuple(self, config: Config) -> CheckpointTuple | None:
        """The checkpoint named by `checkpoint_id`, or the thread's latest."""
        raise NotImplementedError

    def alist(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first, over every branch of the thread."""
        raise NotImplementedError

    async def aput(
        self,
        config: Config,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Config:
        """Store a child of `config`'s checkpoint; `new_versions` names the channels
        whose value changed since the parent, so a saver stores only those."""
        raise NotImplementedError

    async def aput_writes(
        self, config: Config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a finished task's writes against the checkpoint its step started from."""
        raise NotImplementedError

    async def abatch(self, ops: Sequence[SaveOp]) -> None:
        """Save several checkpoints and writes in order. A database saver does it in one
        transaction: a run that saved nothing while its last save was in flight hands
        over everything it produced meanwhile at once."""
        for op in ops:
            if isinstance(op, PutCheckpoint):
                await self.aput(op.config, op.checkpoint, op.metadata, op.new_versions)
            else:
                await self.aput_writes(op.config, op.writes, op.task_id, op.task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        raise NotImplementedError

    async def alist_versions(self, thread_id: str, checkpoint_ns: str = "") -> list[VersionInfo]:
        """Every checkpoint of the thread's namespace, in no particular order, values
        left unread."""
        raise NotImplementedError

    async def alast_elements(
        self, thread_id: str, channel: str, checkpoint_ids: Sequence[str], checkpoint_ns: str = ""
    ) -> dict[str, Any]:
        """The last element of the list that `channel` holds at each of these checkpoints,
        by checkpoint id (none for a checkpoint it holds no list or an empty one at): what
        a conversation tree shows of each turn. A saver that keeps lists apart overrides
        it to read one element per checkpoint instead of each whole list."""
        found: dict[str, Any] = {}
        for checkpoint_id in checkpoint_ids:
            config = checkpoint_config(thread_id, checkpoint_ns, checkpoint_id)
            saved = await self.aget_tuple(config)
            value = saved.checkpoint["channel_values"].get(channel) if saved else None
            if isinstance(value, list) and value:
                found[checkpoint_id] = value[-1]
        return found

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        raise NotImplementedError

    # LangGraph's savers declare these, and its in-memory one does not implement them:
    # ours neither, so that a caller that probes for them is told the same.

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        raise NotImplementedError

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        raise NotImplementedError

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        raise NotImplementedError

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        raise NotImplementedError

    @property
    def config_specs(self) -> list[Any]:
        """No configurable fields of its own, as LangGraph's savers declare."""
        return []

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> Self:
        """A shallow copy (same storage) whose serializer also restores these classes;
        itself when its serializer keeps no allowlist."""
        widen = getattr(self.serde, "with_msgpack_allowlist", None)
        if widen is None:
            return self
        clone = copy.copy(self)
        clone.serde = widen(extra_allowlist)
        return clone

    async def adelete_run(self, thread_id: str, run_id: str) -> None:
        """Remove the checkpoints whose metadata names `run_id`, with their pending writes:
        what a rolled-back run wrote. Writes it saved on a checkpoint it did not create
        (a resume's answers) stay."""
        raise NotImplementedError

    def get_next_version(self, current: Version | None, channel: str | None = None) -> Version:
        return (current or 0) + 1

    async def aget(self, config: Config) -> Checkpoint | None:
        """The checkpoint alone (no metadata, no pending writes), as LangGraph's `aget`."""
        saved = await self.aget_tuple(config)
        return None if saved is None else saved.checkpoint

    # Sync twins.

    def get(self, config: Config) -> Checkpoint | None:
        return self._sync(self.aget(config))

    def _sync(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run one of the async methods for its sync twin: on a private event loop, as
        none may be running here (a saver that never waits says otherwise)."""
        return _run(coro)

    def get_tuple(self, config: Config) -> CheckpointTuple | None:
        return self._sync(self.aget_tuple(config))

    def list(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        return iter(self._sync(collect()))

    def put(
        self,
        config: Config,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Config:
        return self._sync(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: Config, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._sync(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._sync(self.adelete_thread(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._sync(self.acopy_thread(source_thread_id, target_thread_id))


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError(
        "Sync checkpointer methods cannot run inside an event loop; use the async ones."
    )
