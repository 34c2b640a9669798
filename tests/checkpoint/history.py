"""Builds checkpoint histories the way the loop writes them, for saver tests.

Each put names its parent; versions of changed channels count up from the parent's
highest version (as the loop does), so two branches of a fork reuse the same version
numbers for different values, which is exactly what a saver must survive.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from engine.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    Config,
    PutCheckpoint,
    checkpoint_config,
)
from engine.checkpoint.ids import new_checkpoint_id
from engine.checkpoint.sql.models import save_table
from engine.checkpoint.sql.records import Record, decode, decode_thread
from engine.checkpoint.sql.saver import SQLSaver

State = tuple[dict[str, Any], dict[str, Any]]  # (channel_versions, channel_values)


def message_list(count: int, start: int = 0) -> list[dict[str, Any]]:
    """Chat messages (dicts) numbered from `start`, each long enough for the item log."""
    return [
        {"type": "human" if i % 2 == 0 else "ai", "content": f"message {i} " * 20, "id": f"m{i}"}
        for i in range(start, start + count)
    ]


async def stored_rows(saver: SQLSaver) -> list[tuple[int, Record]]:
    """Every stored row decoded, thread by thread, by seq: digests (negative seqs), then
    records, each decoded against the one before it as a saver does."""
    s = save_table.c
    async with saver.engine.connect() as conn:
        found = await conn.execute(select(s.thread, s.seq, s.data).order_by(s.thread, s.seq))
    rows: list[tuple[int, Record]] = []
    for _, group in itertools.groupby(found, key=lambda row: row.thread):
        stored = [(seq, data) for _, seq, data in group]
        rows += [(seq, decode(data).record) for seq, data in stored if seq < 0]
        records = [(seq, data) for seq, data in stored if seq > 0]
        rows += zip([seq for seq, _ in records], decode_thread(d for _, d in records), strict=True)
    return rows


@dataclass
class History:
    saver: BaseCheckpointSaver
    thread_id: str
    ns: str = ""
    states: dict[str, State] = field(default_factory=dict)
    head: str | None = None

    async def put(self, changes: dict[str, Any], **how: Any) -> str:
        """Save a child of `parent` (the last put by default) with `changes` applied."""
        head = self.head
        op = self.put_op(changes, **how)
        try:
            saved = await self.saver.aput(op.config, op.checkpoint, op.metadata, op.new_versions)
        except BaseException:
            self.head = head
            raise
        assert saved == checkpoint_config(self.thread_id, self.ns, op.checkpoint["id"])
        return op.checkpoint["id"]

    def put_op(
        self,
        changes: dict[str, Any],
        *,
        parent: str | None = "head",
        emptied: tuple[str, ...] = (),
        source: str = "loop",
        step: int = 0,
        **metadata: Any,
    ) -> PutCheckpoint:
        """The save `put` makes, for a batch (`abatch`); the history's head moves to it."""
        parent_id = self.head if parent == "head" else parent
        versions, values = self.states[parent_id] if parent_id else ({}, {})
        versions, values = dict(versions), dict(values)
        top = max(versions.values(), default=None)
        new_versions = {c: self.saver.get_next_version(top, c) for c in [*changes, *emptied]}
        versions.update(new_versions)
        values.update(changes)
        for channel in emptied:
            values.pop(channel, None)
        checkpoint: Checkpoint = {
            "v": 4,
            "id": new_checkpoint_id(),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": values,
            "channel_versions": versions,
            "versions_seen": {"node": {c: versions[c] for c in sorted(new_versions)}},
            "updated_channels": sorted(new_versions),
        }
        config: Config = (
            checkpoint_config(self.thread_id, self.ns, parent_id)
            if parent_id
            else {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}}
        )
        full_metadata = {"source": source, "step": step, "parents": {}, **metadata}
        self.states[checkpoint["id"]] = (versions, values)
        self.head = checkpoint["id"]
        return PutCheckpoint(config, checkpoint, full_metadata, new_versions)  # type: ignore[arg-type]

    def config(self, checkpoint_id: str | None = None) -> Config:
        if checkpoint_id is None:
            return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}}
        return checkpoint_config(self.thread_id, self.ns, checkpoint_id)

    def values(self, checkpoint_id: str) -> dict[str, Any]:
        return self.states[checkpoint_id][1]

    async def assert_readable(self, checkpoint_id: str) -> None:
        """The saver returns the checkpoint with the values it was saved with."""
        loaded = await self.saver.aget_tuple(self.config(checkpoint_id))
        assert loaded is not None, checkpoint_id
        assert loaded.checkpoint["channel_values"] == self.values(checkpoint_id)
        assert loaded.checkpoint["channel_versions"] == self.states[checkpoint_id][0]
