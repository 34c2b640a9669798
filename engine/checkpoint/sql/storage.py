"""What a thread takes in the SQL saver's tables, as stored, and what it is made of.

A thread is its records and digests (docs/storage.md), each one compressed row: the
bytes of those rows are exact. A record holds checkpoints, channel values and pending
writes in one deflate stream, so how its bytes divide between them cannot be read off
the row: each record's bytes are shared out in proportion to the size each part has in
the record's stream, uncompressed. A digest (the thread's checkpoints summed up for a
first read) counts with the checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.checkpoint.sql.records import JsonText, Record, decode_thread

__all__ = ["ChannelStorage", "Part", "ThreadStorage", "thread_storage"]


@dataclass(slots=True)
class Part:
    count: int = 0
    bytes: int = 0


@dataclass(slots=True)
class ChannelStorage:
    versions: int = 0
    bytes: int = 0


@dataclass(slots=True)
class ThreadStorage:
    checkpoints: Part = field(default_factory=Part)
    channel_values: Part = field(default_factory=Part)
    by_channel: dict[str, ChannelStorage] = field(default_factory=dict)
    pending_writes: Part = field(default_factory=Part)

    @property
    def total_bytes(self) -> int:
        return self.checkpoints.bytes + self.channel_values.bytes + self.pending_writes.bytes


def thread_storage(rows: Iterable[tuple[int, bytes]]) -> ThreadStorage:
    """The storage of a thread given its rows as `(seq, data)`, in `seq` order (a digest
    under a negative seq)."""
    rows = list(rows)
    records = [data for seq, data in rows if seq > 0]
    found = ThreadStorage()
    found.checkpoints.bytes = sum(len(data) for seq, data in rows if seq < 0)
    versions: dict[str, set[tuple[str, object]]] = {}
    for data, record in zip(records, decode_thread(records), strict=True):
        sizes = _sizes(record)
        shares = _shares(len(data), sizes)
        found.checkpoints.count += len(record.checkpoints)
        found.checkpoints.bytes += shares.pop(_CHECKPOINTS)
        found.pending_writes.count += len(record.writes)
        found.pending_writes.bytes += shares.pop(_WRITES)
        for channel, share in shares.items():
            found.by_channel.setdefault(channel, ChannelStorage()).bytes += share
        for c in record.checkpoints:
            held = set(c.stored) | set(_inline(c.inline))
            for channel in held:
                versions.setdefault(channel, set()).add((c.ns, c.channel_versions.get(channel)))
    for channel, seen in versions.items():
        found.by_channel.setdefault(channel, ChannelStorage()).versions = len(seen)
    found.channel_values.count = sum(c.versions for c in found.by_channel.values())
    found.channel_values.bytes = sum(c.bytes for c in found.by_channel.values())
    return found


# Keys of a record's parts that are not channels (channel names never start with a space).
_CHECKPOINTS, _WRITES = " checkpoints", " writes"


def _sizes(record: Record) -> dict[str, int]:
    """How many characters of the record's stream each part takes: its checkpoints'
    summaries and bookkeeping, its pending writes, and each channel's values."""
    sizes = {_CHECKPOINTS: 0, _WRITES: 0}

    def add(key: str, size: int) -> None:
        sizes[key] = sizes.get(key, 0) + size

    for c in record.checkpoints:
        add(_CHECKPOINTS, len(_json([c.ns, c.id, c.parent, c.metadata])))
        bookkeeping = [c.v, c.ts, c.channel_versions, c.versions_seen, c.updated_channels]
        add(_CHECKPOINTS, len(_json([*bookkeeping, c.stored])))
        for channel, value in _inline(c.inline).items():
            add(channel, len(_json(value)))
    for *key, value in record.writes:
        add(_WRITES, len(_json(key)) + _length(value))
    for ns, channel, seq, count, elements in record.items:
        add(channel, len(_json([ns, seq, count])) + len(elements))
    for ns, channel, version, value in record.blobs:
        add(channel, len(_json([ns, version])) + _length(value))
    return sizes


def _shares(total: int, sizes: dict[str, int]) -> dict[str, int]:
    """`total` shared out in proportion to `sizes`, in whole bytes that add up to it."""
    whole = sum(sizes.values())
    if not whole:
        return {key: total if i == 0 else 0 for i, key in enumerate(sizes)}
    shares = {key: total * size // whole for key, size in sizes.items()}
    left = total - sum(shares.values())
    for key in sorted(sizes, key=lambda k: total * sizes[k] % whole, reverse=True)[:left]:
        shares[key] += 1
    return shares


def _inline(text: str | None) -> dict[str, object]:
    return json.loads(text) if text else {}


def _length(value: JsonText) -> int:
    if type(value) is str:
        return len(value)
    return sum(len(part) for part in value if type(part) is str)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
