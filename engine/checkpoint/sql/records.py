"""Save records: what one write transaction stored for one thread, compressed.

A record is the unit of storage (docs/storage.md): the checkpoints, pending writes, new
list elements and big values that one transaction saved for one thread. A row per
checkpoint and per write costs PostgreSQL 60 to 100 bytes of header and index entry
before any content, and it compresses nothing in rows under 2 kB: a chat turn's three
checkpoints and three writes cost more than its messages. One compressed row per save
costs a fraction of that.

A record is one deflate stream of three parts, each on its own line: the summary (each
checkpoint's namespace, id, parent and metadata); the layout of the rest (each
checkpoint's bookkeeping, and what its writes, items and blobs are, with the length of
each one's text); then those texts, one after another. Serialized values are JSON text,
kept out of the layout's JSON so that decoding a record neither escapes nor parses them.
The stream is deflated against a preset dictionary of the structure every record repeats
(keys, tags, channel names), which otherwise costs most of a short record, and, for a
record that follows another of its thread after the thread's last digest, against that
record's stream too: a thread's records repeat each other's ids, metadata and channel
versions (a chat turn's record takes about a quarter less).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engine.checkpoint.ids import pull_task_id
from engine.constants import START

# First byte of a record: the layout and dictionary it was written with. A new layout
# gets a new number; records of every number ever written stay readable.
FORMAT = 1
# Format 1 and lists shared across namespaces: list ranges in another namespace's item
# log, and values whose JSON holds `Shared` elements. Only a record that holds such a
# reference is written with it, so a saver that predates them refuses that record
# rather than misreading it, and reads every other.
FORMAT_SHARING = 2
# Added to the format of a record deflated against the stream of its thread's record
# before it (`encode`'s `before`), as well as the dictionary. A saver that predates it
# refuses such a record; a reader needs the one before it (`decode_thread`).
CHAINED = 2
# Added to the format of a record some of whose writes give their task as the node the
# task ran, `[name]`: the engine's id of the pull task of that node at that checkpoint
# (`pull_task_id`). Ids are random to deflate: a chat turn's two took some 35 bytes of
# its record, and a name repeats the turn before. A saver that predates it refuses it.
NAMED_TASKS = 4
WINDOW = 32 * 1024  # deflate's: what a dictionary can reach back
# What records repeat, most frequent last (deflate reaches the end of it most cheaply).
_DICTIONARY = (
    b'"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":null,"name":null,'
    b'"additional_kwargs":{},"response_metadata":{"finish_reason":"stop"},'
    b'{"role":"assistant","content":"{"$t":"msg","v":{"content":"","type":"tool",'
    b'"tool_call_id":"","status":"success","artifact":null,"$t":"datetime","$t":"tuple",'
    b'[["","",0,{"source":"update","step":0,"parents":{},"run_id":"","thread_id":"",'
    b'"graph_id":"","assistant_id":"","user_id":""}],{"source":"fork","step":-1,'
    b'"parents":{}}],["","",0,{"source":"input","step":-1,"parents":{}}],'
    b'{"source":"loop","step":1,"parents":{}}]]\n{"c":[[1,"2026-01-01T00:00:00.000000+00:00",'
    b'{"__start__":1,"messages":1,"branch:to:":1},{"__start__":{"__start__":1},'
    b'"":{"branch:to:":1}},["branch:to:","messages"],null,{"__start__":"1",'
    b'"messages":[[0,1]]}]],"w":[["","","",0,"branch:to:","",4],["","","",0,"messages","",'
    b'"i":[["","messages",0,1,"b":[["","__start__","",'
    b'{"messages":[{"role":"user","content":"null[{"$t":"msg","v":{"content":"'
    b'","type":"ai"}}]{"$t":"msg","v":{"content":"","type":"human","id":"'
    b'{"$t":"msg","v":{"content":"","type":"ai","id":"run-'
)
# Level 9 packs a chat's records best. On megabytes (a state that holds the same elements
# many times) it takes several times as long as level 1, for a third less: a bigger
# record gets level 1.
FAST_ABOVE = 1024 * 1024
_REACH = WINDOW - len(_DICTIONARY)  # of the record before, what the dictionary holds
PARENT_BEFORE = 0  # a summary's parent: the checkpoint listed just before this one


@dataclass(slots=True)
class CheckpointEntry:
    """A checkpoint as stored: bookkeeping, and where each channel's value lives.

    `inline` is the JSON object of its small values; `stored` maps every other channel
    with a value to a blob version key or to the segments of its item log."""

    ns: str
    id: str
    parent: str | None
    metadata: dict[str, Any]  # the serializer's JSON object, parsed: plain JSON values
    v: int
    ts: str
    channel_versions: dict[str, Any]
    versions_seen: dict[str, Any]
    updated_channels: list[str] | None
    inline: str | None
    stored: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Shared:
    """The elements of a list version in the item logs, standing in a value's JSON for
    their text: a pending write or a big value that holds the thread's history (what a
    subgraph gets as input and hands back) refers to the rows that hold it instead of
    storing it again."""

    channel: str  # whose item logs hold them
    segments: list[list[Any]]  # as a checkpoint's (logs.Segments), seen from the value's ns


# A value's JSON: its text, or its parts, texts and `Shared` elements (joined by commas,
# without brackets) in order.
JsonText = str | tuple[str | Shared, ...]
# (checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, value as JSON)
WriteEntry = tuple[str, str, str, int, str, str, JsonText]
# (checkpoint_ns, channel, seq, count, elements as JSON joined by logs.SEP)
ItemEntry = tuple[str, str, int, int, str]
# (checkpoint_ns, channel, version key, value as JSON)
BlobEntry = tuple[str, str, str, JsonText]


def references(text: JsonText) -> list[Shared]:
    """The list elements a value's JSON refers to."""
    return [] if type(text) is str else [part for part in text if type(part) is Shared]


@dataclass(slots=True)
class Record:
    checkpoints: list[CheckpointEntry] = field(default_factory=list)
    writes: list[WriteEntry] = field(default_factory=list)
    items: list[ItemEntry] = field(default_factory=list)
    blobs: list[BlobEntry] = field(default_factory=list)


class Encoded(NamedTuple):
    data: bytes  # the row's
    stream: bytes  # what it inflates to, as far back as the record after it can reach


class Decoded(NamedTuple):
    record: Record
    stream: bytes  # as in Encoded


@dataclass(frozen=True, slots=True)
class Summary:
    """What listing every thread needs of a checkpoint."""

    ns: str
    id: str
    parent: str | None
    metadata: dict[str, Any]  # as in CheckpointEntry


def encode(record: Record, before: bytes | None = None) -> Encoded:
    """The record as a row's data, deflated against `before` (the `stream` of its thread's
    record before it) when given, and its stream."""
    summary: list[Any] = []
    listed = None
    for c in record.checkpoints:
        parent = PARENT_BEFORE if c.parent is not None and c.parent == listed else c.parent
        summary.append([c.ns, c.id, parent, c.metadata])
        listed = c.id
    texts: list[str] = []
    sharing = False

    def text(value: JsonText) -> Any:
        """A text's length, or the lengths of a value's texts and its shared elements."""
        nonlocal sharing
        if type(value) is str:
            texts.append(value)
            return len(value)
        sharing = True
        return [text(p) if type(p) is str else [p.channel, p.segments] for p in value]

    layout: dict[str, Any] = {
        "c": [
            [
                c.v,
                c.ts,
                c.channel_versions,
                c.versions_seen,
                c.updated_channels,
                None if c.inline is None else text(c.inline),
                c.stored,
            ]
            for c in record.checkpoints
        ]
    }
    names = _TaskNames(record.checkpoints)
    if record.writes:
        layout["w"] = [
            [ns, checkpoint_id, names.name(ns, checkpoint_id, task), *rest, text(value)]
            for ns, checkpoint_id, task, *rest, value in record.writes
        ]
    for key, rows in (("i", record.items), ("b", record.blobs)):
        if rows:
            layout[key] = [[*row[:-1], text(row[-1])] for row in rows]
    stream = "\n".join((_json(summary), _json(layout), "".join(texts))).encode()
    level = 9 if len(stream) <= FAST_ABOVE else 1
    packer = zlib.compressobj(level, zlib.DEFLATED, -15, zdict=_dictionary(before))
    sharing = sharing or any(
        len(span) > 2
        for c in record.checkpoints
        for ref in c.stored.values()
        if type(ref) is list
        for span in ref
    )
    form = (FORMAT_SHARING if sharing else FORMAT) + (0 if before is None else CHAINED)
    form += NAMED_TASKS if names.named else 0
    data = bytes([form]) + packer.compress(stream) + packer.flush()
    return Encoded(data, stream[-_REACH:])


def decode(data: bytes, before: bytes | None = None) -> Decoded:
    """The record a row holds, and its stream; `before` is the stream of its thread's
    record before it, which a chained record needs."""
    unpacker = _unpacker(data, before)
    raw = unpacker.decompress(data[1:]) + unpacker.flush()
    stream = raw.decode()
    end_summary = stream.index("\n")
    end_layout = stream.index("\n", end_summary + 1)
    summaries = _summaries(json.loads(stream[:end_summary]))
    layout = json.loads(stream[end_summary + 1 : end_layout])
    at = end_layout + 1

    def text(length: Any) -> Any:
        nonlocal at
        if type(length) is list:  # a value's parts
            return tuple(text(p) if type(p) is int else Shared(*p) for p in length)
        at += length
        return stream[at - length : at]

    record = Record()
    for s, (v, ts, versions, seen, updated, inline, stored) in zip(
        summaries, layout["c"], strict=True
    ):
        inline = None if inline is None else text(inline)
        entry = CheckpointEntry(
            s.ns, s.id, s.parent, s.metadata, v, ts, versions, seen, updated, inline, stored
        )
        record.checkpoints.append(entry)
    steps = {(c.ns, c.id): c.metadata.get("step") for c in record.checkpoints}
    record.writes = [
        (ns, checkpoint_id, _task(steps, ns, checkpoint_id, task), *rest, text(value))
        for ns, checkpoint_id, task, *rest, value in layout.get("w", ())
    ]
    record.items = [(*i[:-1], text(i[-1])) for i in layout.get("i", ())]  # type: ignore[misc]
    record.blobs = [(*b[:-1], text(b[-1])) for b in layout.get("b", ())]  # type: ignore[misc]
    return Decoded(record, raw[-_REACH:])


def chained(data: bytes) -> bool:
    """Whether the record was deflated against the one before it."""
    return bool((data[0] - FORMAT) & CHAINED)


def decode_thread(rows: Iterable[bytes]) -> Iterator[Record]:
    """A thread's records (not its digests), given in order: each decoded against the
    stream of the one before it."""
    before = None
    for data in rows:
        record, before = decode(data, before)
        yield record


def thread_summaries(rows: Iterable[bytes]) -> Iterator[Summary]:
    """The summaries of a thread's records (given in order): those of chained records
    need their predecessors inflated whole."""
    for record in decode_thread(rows):
        for c in record.checkpoints:
            yield Summary(c.ns, c.id, c.parent, c.metadata)


def _summaries(rows: list[Any]) -> list[Summary]:
    found: list[Summary] = []
    before = None
    for ns, checkpoint_id, parent, metadata in rows:
        parent = before if parent == PARENT_BEFORE else parent
        found.append(Summary(ns, checkpoint_id, parent, metadata))
        before = checkpoint_id
    return found


class _TaskNames:
    """The node whose pull task each write's task id is, where the write's checkpoint is
    in the same record (its step and the nodes it may have run are there)."""

    def __init__(self, checkpoints: list[CheckpointEntry]) -> None:
        self.checkpoints = {(c.ns, c.id): c for c in checkpoints}
        self.found: dict[tuple[str, str, str], str | list[str]] = {}
        self.named = False

    def name(self, ns: str, checkpoint_id: str, task: str) -> str | list[str]:
        """`[node]` when `task` is that node's pull task id, else `task`."""
        key = (ns, checkpoint_id, task)
        if key not in self.found:
            self.found[key] = task
            c = self.checkpoints.get((ns, checkpoint_id))
            step = None if c is None else c.metadata.get("step")
            if type(step) is int:  # so `c` is the write's checkpoint
                nodes = {START, *c.versions_seen}
                nodes.update(ch.rpartition(":")[2] for ch in c.updated_channels or ())
                for node in nodes:
                    if pull_task_id(checkpoint_id, ns, step + 1, node) == task:
                        self.found[key] = [node]
                        self.named = True
                        break
        return self.found[key]


def _task(steps: dict[tuple[str, str], Any], ns: str, checkpoint_id: str, task: Any) -> str:
    """A write's task id as stored: itself, or the `[node]` of `_TaskNames`."""
    if type(task) is str:
        return task
    [node] = task
    return pull_task_id(checkpoint_id, ns, steps[ns, checkpoint_id] + 1, node)


def _json(value: Any) -> str:
    # Compact JSON escapes every newline, so the parts of a record are split at them.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _dictionary(before: bytes | None) -> bytes:
    return _DICTIONARY if before is None else _DICTIONARY + before[-_REACH:]


def _unpacker(data: bytes, before: bytes | None) -> Any:
    form = data[0] if data else 0
    if not FORMAT <= form <= FORMAT_SHARING + CHAINED + NAMED_TASKS:
        raise ValueError(f"A save record of an unknown format ({data[:1]!r}): upgrade Threadline")
    if not chained(data):
        return zlib.decompressobj(-15, zdict=_DICTIONARY)
    if before is None:
        raise ValueError("A chained save record, read without the record before it")
    return zlib.decompressobj(-15, zdict=_dictionary(before))
