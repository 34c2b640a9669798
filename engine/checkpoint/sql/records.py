"""Save records: what one write transaction stored for one thread, compressed.

A record is the unit of storage (docs/storage.md): the checkpoints, pending writes, new
list elements and big values that one transaction saved for one thread. A row per
checkpoint and per write costs PostgreSQL 60 to 100 bytes of header and index entry
before any content, and it compresses nothing in rows under 2 kB: a chat turn's three
checkpoints and three writes cost more than its messages. One compressed row per save
costs a fraction of that.

Each record has two compressed parts: the summary (each checkpoint's namespace, id,
parent and metadata), which listing and filtering decode, and the body (the bookkeeping
of each checkpoint, the writes, items and blobs). Both are deflated against a preset
dictionary of the structure every record repeats (keys, tags, channel names), which
otherwise costs most of a short record. Serialized values stay JSON text in the body:
decoding a record parses its structure, never the values.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

# First byte of both parts: the layout and dictionary they were written with. A new
# layout gets a new number; records of every number ever written stay readable.
FORMAT = 1
_SUMMARY_DICT = (
    b'["",{"parents":{},"source":"update","step":0,"run_id":"","thread_id":"",'
    b'"graph_id":"","assistant_id":"","user_id":""}],{"source":"fork","step":-1,'
    b'"parents":{}}],{"source":"input","step":-1,"parents":{}}],'
    b'{"source":"loop","step":1,"parents":{}}],["",0,"'
)
_BODY_DICT = (
    b'"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":null,"name":null,'
    b'"additional_kwargs":{},"response_metadata":{"finish_reason":"stop"},'
    b'{"role":"assistant","content":"'
    b'"type":"tool","tool_call_id":"","status":"success","artifact":null,'
    b'"b":[["","__start__","","{\\"messages\\":[{\\"role\\":\\"user\\",\\"content\\":\\"'
    b'"i":[["","messages",0,1,"{\\"$t\\":\\"msg\\",\\"v\\":{\\"content\\":\\"'
    b'\\",\\"type\\":\\"ai\\",\\"id\\":\\"run-'
    b'\\",\\"type\\":\\"human\\",\\"id\\":\\"'
    b'"w":[["","","",0,"messages","","[{\\"role\\":\\"user\\",\\"content\\":\\"'
    b'[{\\"$t\\":\\"msg\\",\\"v\\":{\\"content\\":\\"'
    b'"],["","","",1,"branch:to:","","null"]],'
    b'{"c":[[1,"2026-01-01T00:00:00.000000+00:00",{"__start__":1,"messages":1,'
    b'"branch:to:":1},{"__start__":{"__start__":1},"":{"branch:to:":1}},'
    b'["branch:to:","messages"],"{\\"branch:to:\\":null}",{"__start__":"1",'
    b'"messages":[[0,1]]}]],'
)
PARENT_BEFORE = 0  # a summary's parent: the checkpoint listed just before this one


@dataclass(slots=True)
class CheckpointEntry:
    """A checkpoint as stored: bookkeeping, and where each channel's value lives.

    `inline` is the JSON object of its small values; `stored` maps every other channel
    with a value to a blob version key or to the segments of its item log."""

    ns: str
    id: str
    parent: str | None
    metadata: Any  # the serializer's JSON, parsed: a tree of plain JSON values
    v: int
    ts: str
    channel_versions: dict[str, Any]
    versions_seen: dict[str, Any]
    updated_channels: list[str] | None
    inline: str | None
    stored: dict[str, Any]


# (checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, value as JSON)
WriteEntry = tuple[str, str, str, int, str, str, str]
# (checkpoint_ns, channel, seq, count, elements as JSON joined by logs.SEP)
ItemEntry = tuple[str, str, int, int, str]
# (checkpoint_ns, channel, version key, value as JSON)
BlobEntry = tuple[str, str, str, str]


@dataclass(slots=True)
class Record:
    checkpoints: list[CheckpointEntry] = field(default_factory=list)
    writes: list[WriteEntry] = field(default_factory=list)
    items: list[ItemEntry] = field(default_factory=list)
    blobs: list[BlobEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Summary:
    """What listing needs of a checkpoint, without decoding its record's body."""

    ns: str
    id: str
    parent: str | None
    metadata: Any  # as in CheckpointEntry


def encode(record: Record) -> tuple[bytes, bytes]:
    """The record's (summary, body) columns."""
    summary: list[Any] = []
    before = None
    for c in record.checkpoints:
        parent = PARENT_BEFORE if c.parent is not None and c.parent == before else c.parent
        summary.append([c.ns, c.id, parent, c.metadata])
        before = c.id
    body: dict[str, Any] = {
        "c": [
            [
                c.v,
                c.ts,
                c.channel_versions,
                c.versions_seen,
                c.updated_channels,
                c.inline,
                c.stored,
            ]
            for c in record.checkpoints
        ]
    }
    for key, rows in (("w", record.writes), ("i", record.items), ("b", record.blobs)):
        if rows:
            body[key] = rows
    return _deflate(summary, _SUMMARY_DICT), _deflate(body, _BODY_DICT)


def decode_summary(summary: bytes) -> list[Summary]:
    found: list[Summary] = []
    before = None
    for ns, checkpoint_id, parent, metadata in _inflate(summary, _SUMMARY_DICT):
        parent = before if parent == PARENT_BEFORE else parent
        found.append(Summary(ns, checkpoint_id, parent, metadata))
        before = checkpoint_id
    return found


def decode(summary: bytes, body: bytes) -> Record:
    doc = _inflate(body, _BODY_DICT)
    return Record(
        [
            CheckpointEntry(s.ns, s.id, s.parent, s.metadata, *fields)
            for s, fields in zip(decode_summary(summary), doc["c"], strict=True)
        ],
        [tuple(w) for w in doc.get("w", ())],  # type: ignore[misc]
        [tuple(i) for i in doc.get("i", ())],  # type: ignore[misc]
        [tuple(b) for b in doc.get("b", ())],  # type: ignore[misc]
    )


def _deflate(doc: Any, zdict: bytes) -> bytes:
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=zdict)
    return bytes([FORMAT]) + packer.compress(text) + packer.flush()


def _inflate(data: bytes, zdict: bytes) -> Any:
    if not data or data[0] != FORMAT:
        raise ValueError(f"A save record of an unknown format ({data[:1]!r}): upgrade Threadline")
    unpacker = zlib.decompressobj(-15, zdict=zdict)
    return json.loads(unpacker.decompress(data[1:]) + unpacker.flush())
