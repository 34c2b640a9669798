"""A thread's save records applied in order: the saver's view of one thread in memory.

Records only ever grow within an epoch (whatever rewrites or deletes them starts a new
one), so a saver keeps each thread it serves decoded, reads only the records it has not
applied yet (after a turn, the turn's), and answers reads from memory. The journal keeps
values as their JSON text; list elements are also prepared once (see `Journal.elements`).

A saver new to a thread starts from its digests instead (`Journal.digest`): a journal
built from them is `partial`, sure only of each namespace's head and of the item logs.
"""

from __future__ import annotations

import threading
from bisect import insort
from collections import ChainMap, Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import repeat
from operator import attrgetter
from typing import Any, NamedTuple

from engine.checkpoint.serde.jsonplus import Prepared
from engine.checkpoint.sql.item_log import Chunks, Segments, joined, merge, pieces, version_runs
from engine.checkpoint.sql.records import CheckpointEntry, JsonText, Record, decode, references
from engine.constants import INTERRUPT

Log = tuple[str, str]  # (checkpoint_ns, channel)


class _Unchecked:
    """Equal to any state: a `Stored` element is checked by its JSON instead."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class Stored:
    """A list element kept as its JSON text: one that holds containers of its own, parsed
    on every read (a `Prepared` one is rebuilt without a parse)."""

    __slots__ = ("text",)
    state = _Unchecked()

    def __init__(self, text: str) -> None:
        self.text = text


class Held(NamedTuple):
    """A list version's element objects as a put was handed them or a read returned
    them, and what each was stored as: the `Prepared` form it was built from, else its
    JSON (`Stored`). An object the loop hands back is unchanged only if it is the same
    one and still as stored: a node may change a message in place and write it again."""

    objects: list[Any]
    stamps: list[Prepared | Stored]

    def identical(self, value: list[Any], limit: int, start: int = 0) -> int:
        """Where, from `start` and before `limit`, `value` stops holding these very
        objects: all `prefix` needs when no code ran since they were stored."""
        objects = self.objects
        limit = min(limit, len(objects))
        if value is objects:  # a read checking the very list a put was handed
            return max(start, limit)
        end = start
        while end < limit and value[end] is objects[end]:
            end += 1
        return end

    def prefix(
        self, value: list[Any], limit: int, dump: Callable[[Any], str], start: int = 0
    ) -> int:
        """Where, from `start` and before `limit`, `value` stops holding these very
        objects each as stored. The states are compared in C, nested containers
        included; only `Stored` elements are serialized again."""
        end = self.identical(value, limit, start)
        same = value[start:end]
        stamps = self.stamps[start:end]
        states = list(map(getattr, same, repeat("__dict__"), same))  # a dict or scalar: itself
        if states == list(map(_STATE, stamps)) and not any(map(getattr, same, _EXTRA, _NONE)):
            kinds = list(map(type, stamps))
            at = -1
            for _ in range(kinds.count(Stored)):
                at = kinds.index(Stored, at + 1)
                if dump(same[at]) != stamps[at].text:  # type: ignore[union-attr]
                    return start + at
            return end
        for at, (element, state, stamp) in enumerate(zip(same, states, stamps, strict=True)):
            if type(stamp) is Stored:
                if dump(element) != stamp.text:
                    return start + at
            elif state != stamp.state or getattr(element, "__pydantic_extra__", None):
                return start + at
        return end


_STATE = attrgetter("state")
# A prepared message has no extra fields: one set since is a change.
_EXTRA = repeat("__pydantic_extra__")
_NONE = repeat(None)


# A list version as the namespace of a log holds it, and its element objects.
Tip = tuple[Segments, Held]
BlobKey = tuple[str, str, str]  # (checkpoint_ns, channel, version key)
Place = tuple[str, str]  # (checkpoint_ns, checkpoint_id)


@dataclass(slots=True)
class Known:
    """Where one checkpoint's values live: all that a child needs to share them."""

    checkpoint_id: str
    channel_versions: dict[str, Any]
    inline: dict[str, str]  # channel -> serialized small value
    stored: dict[str, Any]  # channel -> blob version key, or item-log segments (logs.Segments)
    # Item-log channel -> the element objects of that version (handed to a put, or
    # returned by a read), so the next put finds the unchanged prefix by identity.
    elements: dict[str, Held] = field(default_factory=dict)
    # Whether a read may give these elements again (a put's, with `reuse_objects`).
    lendable: bool = False


class Journal:
    """One thread (its key and epoch) as of record `seq`: checkpoints by namespace and
    id, pending writes by checkpoint, item logs, blobs, and what was last put or read in
    each namespace.

    A `partial` journal, built from the thread's digests and the records after the last
    one, holds every item row, each namespace's head with its writes, and what the
    records after the digests saved; other checkpoints it may hold stale or not at all
    (see `knows`)."""

    def __init__(self, key: int, epoch: int) -> None:
        self.key = key
        self.epoch = epoch
        self.seq = 0
        self.checkpoints: dict[Place, CheckpointEntry] = {}
        self.ids: dict[str, list[str]] = {}  # checkpoint_ns -> checkpoint ids, sorted
        # (ns, checkpoint id) -> (task id, idx) -> (channel, task path, value as JSON)
        self.writes: dict[Place, dict[tuple[str, int], tuple[str, str, JsonText]]] = {}
        self.logs: dict[Log, Chunks] = {}
        self.log_ends: dict[Log, int] = {}
        # Each log's elements by position as `Prepared` or `Stored` (`logs.UNPREPARED`
        # where not yet).
        self.elements: dict[Log, list[Any]] = {}
        self.blobs: dict[BlobKey, JsonText] = {}
        self.known: dict[str, Known] = {}
        # The version this process last appended to each log: the next version of another
        # namespace that holds the same objects after the same prefix shares its rows.
        self.tips: dict[Log, Tip] = {}
        self.size = 0  # characters of text held, and prepared elements at twice theirs
        self.prepared = 0  # the prepared elements' part of it
        self.partial = False
        self.undigested = 0  # records applied since the last digest it knows of
        # The stream of the record at `seq` (None after a digest), to inflate the next.
        self.stream: bytes | None = None
        # What the thread's record `chain[0] + 1` is deflated against: the stream of the
        # record before it, unless that one is digested (None). A journal new to the
        # thread reads the records after its last digest, so the first of them must
        # stand alone; every journal knows where the last digest is (`add`), so writers
        # agree on it. The seq and the stream are one value, set once a record is
        # applied: a writer in another thread (a sync `invoke()` in a node runs its own
        # loop) may encode the next record meanwhile, and a new seq read with the stream
        # before it deflated a record that nothing could inflate again.
        self.chain: tuple[int, bytes | None] = (0, None)
        # Held while a record is applied (`add`, and a writer's `_Draft.commit`): the two
        # threads' reads and writes would otherwise apply records out of turn, and
        # inflate one against the stream of another.
        self.lock = threading.Lock()

    def add(self, seq: int, data: bytes | None) -> None:
        """Apply a stored row not applied yet: a record, or the digest of the records up
        to -`seq` (the journal is then partial). A digest of records already applied
        (`data` may then be None) only says that they are digested."""
        with self.lock:
            if abs(seq) <= self.seq:
                if seq < 0 and abs(seq) == self.seq:
                    self.undigested = 0
                    self.chain = (self.seq, None)
                return
            if data is None:
                raise ValueError(f"Save record {seq} of a thread, read without its data")
            record, stream = decode(data, self.stream)  # a digest stands alone: not chained
            self.apply(abs(seq), record)
            self.partial = self.partial or seq < 0
            self.undigested = self.undigested + 1 if seq > 0 else 0
            self.stream = stream if seq > 0 else None
            self.chain = (abs(seq), self.stream)

    def apply(self, seq: int, record: Record) -> None:
        """Apply the record numbered `seq` (one already applied is skipped). A checkpoint
        put again replaces the first; an ordinary write keeps the first save of its task
        and index (a retried save), a special one (idx < 0: interrupt, resume, error)
        the last."""
        if seq <= self.seq:
            return
        self.seq = seq
        size = 0
        for entry in record.checkpoints:
            place = (entry.ns, entry.id)
            if place not in self.checkpoints:
                insort(self.ids.setdefault(entry.ns, []), entry.id)
            self.checkpoints[place] = entry
            size += 200 + len(entry.inline or "")
        for ns, checkpoint_id, task_id, idx, channel, task_path, data in record.writes:
            writes = self.writes.setdefault((ns, checkpoint_id), {})
            if idx < 0 or (task_id, idx) not in writes:
                writes[(task_id, idx)] = (channel, task_path, data)
            size += _size(data)
        for ns, channel, start, count, data in record.items:
            log = (ns, channel)
            self.logs.setdefault(log, {})[start] = (count, data)
            self.log_ends[log] = max(self.log_ends.get(log, 0), start + count)
            size += len(data)
        for ns, channel, version, data in record.blobs:
            self.blobs[(ns, channel, version)] = data
            size += _size(data)
        self.size += size

    def version_runs(self, ns: str, channel: str, segments: Segments) -> list[str]:
        """The elements of a list version that namespace `ns` holds, as runs of elements
        joined by SEP, from whichever namespaces' logs hold them."""
        return version_runs(lambda owner: self.logs[(owner, channel)], segments, ns)

    def text(self, ns: str, data: JsonText) -> str:
        """The JSON of a value stored in namespace `ns`, with the elements of the lists it
        shares with the item logs in place."""
        if type(data) is str:
            return data
        return "".join(
            part
            if type(part) is str
            else ",".join(self.version_runs(ns, part.channel, part.segments))
            for part in data
        )

    def latest(self, ns: str) -> CheckpointEntry | None:
        ids = self.ids.get(ns)
        return self.checkpoints[(ns, ids[-1])] if ids else None

    def knows(self, ns: str, checkpoint_id: str | None) -> bool:
        """Whether the journal can answer a read of the checkpoint (the namespace's head
        without an id): a partial one knows only heads, and not a blob that a head shares
        with a checkpoint that is not one (a fork from an older checkpoint)."""
        head = self.latest(ns)
        if not self.partial or head is None:  # a namespace with checkpoints has its head
            return True
        return checkpoint_id in (None, head.id) and all(
            (ns, channel, ref) in self.blobs
            for channel, ref in head.stored.items()
            if isinstance(ref, str)
        )

    def digest(self, tail: list[tuple[int, bytes]], seq: int, record: Record) -> Record:
        """The digest of the records after the last digest (`tail`) and of `record`, the
        save numbered `seq`: what a read of a head needs of them. That is the checkpoints
        that are their namespace's head in the whole thread, their writes, the blobs they
        use (those the journal holds), and every item row (a run of rows as one). A
        checkpoint that is a head now was one when each record that saved it or a write
        to it was digested, so a journal built from the digests holds each head whole."""
        merged = Journal(self.key, self.epoch)
        for at, data in tail:
            merged.add(at, data)
        merged.apply(seq, record)
        whole = merged.whole()
        heads = {
            ns: max((*self.ids.get(ns, ())[-1:], *merged.ids.get(ns, ())[-1:]), default=None)
            for ns in {entry.ns for entry in whole.checkpoints} | {w[0] for w in whole.writes}
        }
        digest = Record(
            [entry for entry in whole.checkpoints if heads[entry.ns] == entry.id],
            [write for write in whole.writes if heads.get(write[0]) == write[1]],
            joined(whole.items),
        )
        blobs = ChainMap(merged.blobs, self.blobs)
        used = {
            (entry.ns, channel, ref)
            for entry in digest.checkpoints
            for channel, ref in entry.stored.items()
            if isinstance(ref, str)
        }
        digest.blobs = [(*key, blobs[key]) for key in sorted(used) if key in blobs]
        return digest

    def pending(self, ns: str, checkpoint_id: str) -> list[tuple[str, str, str]]:
        """(task id, channel, value as JSON) of the checkpoint's pending writes, by task
        and index."""
        writes = self.writes.get((ns, checkpoint_id), {})
        return [
            (task, writes[task, idx][0], self.text(ns, writes[task, idx][2]))
            for task, idx in sorted(writes)
        ]

    def interrupted(self) -> set[Place]:
        return {
            place
            for place, writes in self.writes.items()
            if any(channel == INTERRUPT for channel, _, _ in writes.values())
        }

    def whole(self) -> Record:
        """Everything the journal holds, as one record."""
        record = Record([entry for _, entry in sorted(self.checkpoints.items())])
        for (ns, checkpoint_id), writes in sorted(self.writes.items()):
            record.writes += [
                (ns, checkpoint_id, task, idx, channel, path, data)
                for (task, idx), (channel, path, data) in sorted(writes.items())
            ]
        record.items = [
            (*log, start, count, data)
            for log, chunks in sorted(self.logs.items())
            for start, (count, data) in sorted(chunks.items())
        ]
        record.blobs = [(*key, data) for key, data in sorted(self.blobs.items())]
        return record

    def without(self, doomed: set[Place], relinked: dict[Place, str | None]) -> Record:
        """The thread as one record, without the `doomed` checkpoints and their writes,
        kept ones relinked to new parents, and only the blobs and item rows that a kept
        checkpoint, write or blob uses, in whichever namespace's log (item positions stay
        as they are)."""
        whole = self.whole()
        kept = [
            replace(entry, parent=relinked[place]) if place in relinked else entry
            for entry in whole.checkpoints
            if (place := (entry.ns, entry.id)) not in doomed
        ]
        used_blobs: set[BlobKey] = set()
        used_spans: dict[Log, Segments] = {}

        def use(ns: str, channel: str, segments: Segments) -> None:
            for owner, plain in pieces(segments, ns):
                used_spans.setdefault((owner, channel), []).extend(plain)

        for entry in kept:
            for channel, ref in entry.stored.items():
                if isinstance(ref, str):
                    used_blobs.add((entry.ns, channel, ref))
                else:
                    use(entry.ns, channel, ref)
        writes = [write for write in whole.writes if write[:2] not in doomed]
        blobs = [blob for blob in whole.blobs if blob[:3] in used_blobs]
        for ns, data in [(w[0], w[6]) for w in writes] + [(b[0], b[3]) for b in blobs]:
            for shared in references(data):
                use(ns, shared.channel, shared.segments)
        spans = {log: merge(found) for log, found in used_spans.items()}
        return Record(
            kept,
            writes,
            [
                (ns, channel, start, count, data)
                for ns, channel, start, count, data in whole.items
                if any(start < b and a < start + count for a, b in spans.get((ns, channel), []))
            ],
            blobs,
        )


def _size(data: JsonText) -> int:
    """Characters a stored value's JSON keeps in memory (not those it shares)."""
    return len(data) if type(data) is str else sum(len(p) for p in data if type(p) is str)


def prune_plan(
    journal: Journal, keep_last_turns: int
) -> tuple[set[Place], dict[Place, str | None]]:
    """Which checkpoints to delete to keep the last turns (a turn starts at an input
    checkpoint), and the new parent of each kept one whose parent goes. Branch points,
    branch tips and checkpoints with an interrupt are kept."""
    interrupted = journal.interrupted()
    doomed: set[Place] = set()
    for ns, ids in journal.ids.items():
        entries = [journal.checkpoints[(ns, i)] for i in ids]
        inputs = sorted(
            (e.id for e in entries if e.metadata.get("source") == "input"), reverse=True
        )
        if len(inputs) <= keep_last_turns:
            continue
        cutoff = inputs[keep_last_turns - 1]
        children = Counter(e.parent for e in entries)
        doomed |= {
            (ns, e.id)
            for e in entries
            if e.id < cutoff
            and children[e.id] == 1  # neither a branch point nor a tip
            and (ns, e.id) not in interrupted
        }
    relinked: dict[Place, str | None] = {}
    for (ns, checkpoint_id), entry in journal.checkpoints.items():
        parent = entry.parent
        if (ns, checkpoint_id) in doomed or (ns, parent) not in doomed:
            continue
        while parent is not None and (ns, parent) in doomed:
            parent = journal.checkpoints[(ns, parent)].parent
        relinked[(ns, checkpoint_id)] = parent
    return doomed, relinked


def latest_plan(journal: Journal) -> tuple[set[Place], dict[Place, str | None]]:
    """LangGraph's `keep_latest` prune: each namespace's latest checkpoint alone, as the
    root of what is left."""
    doomed: set[Place] = set()
    relinked: dict[Place, str | None] = {}
    for ns, ids in journal.ids.items():
        if not ids:
            continue
        latest = max(ids)
        doomed |= {(ns, i) for i in ids if i != latest}
        if journal.checkpoints[(ns, latest)].parent is not None:
            relinked[(ns, latest)] = None
    return doomed, relinked


class Journals:
    """The journals of the threads this process served lately, bounded in characters
    (and in threads); the least recently used go first, never the one just used."""

    def __init__(self, budget: int, threads: int) -> None:
        self._budget = budget
        self._threads = threads
        # Each journal with its size when it was last kept, and the sum of those: a
        # journal's growth since (its saves) counts from its next keep, which every read
        # of it makes.
        self._journals: OrderedDict[str, tuple[Journal, int]] = OrderedDict()
        self._size = 0

    def get(self, thread_id: str) -> Journal | None:
        kept = self._journals.get(thread_id)
        if kept is None:
            return None
        self._journals.move_to_end(thread_id)
        return kept[0]

    def keep(self, thread_id: str, journal: Journal) -> None:
        self.drop(thread_id)
        self._journals[thread_id] = (journal, journal.size)
        self._size += journal.size
        while len(self._journals) > 1 and (
            self._size > self._budget or len(self._journals) > self._threads
        ):
            _, (_, size) = self._journals.popitem(last=False)
            self._size -= size

    def drop(self, thread_id: str) -> None:
        kept = self._journals.pop(thread_id, None)
        if kept is not None:
            self._size -= kept[1]
