"""Item logs: how a version of a list channel is a few ranges into an append-only log.

Each put appends one row with the elements it added, so a growing chat stores every
message once; a version of the list is a short list of [start, end) ranges of positions
("segments"), and reading one joins the rows' text into a JSON array without re-encoding.

A log is a namespace's, and a range may be in the log of another namespace of the thread
(`[start, end, namespace]`): a subgraph's first checkpoint holds the history its graph
passed in, and shares it with the enclosing namespace's log instead of storing it again.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from engine.checkpoint.sql.records import ItemEntry

# [[start, end), ...] in list order: into the channel's log of the namespace that holds the
# version, or, as [start, end, namespace], into that namespace's.
Segments = list[list[Any]]
Chunks = dict[int, tuple[int, str]]  # a log's rows: seq -> (count, elements joined by SEP)

# Joins the elements of an item row. Compact JSON escapes newlines, so this cannot occur
# inside an element, and with the comma it is valid JSON between two array elements.
SEP = ",\n"
MAX_SEGMENTS = 16  # ranges a version may have before it is written out as one range
# A position of a log whose row has not been prepared yet.
UNPREPARED: Any = object()


def truncate(segments: Segments, length: int) -> Segments:
    """The segments of the first `length` elements."""
    kept: Segments = []
    for a, b, *log in segments:
        if length <= 0:
            break
        kept.append([a, min(b, a + length), *log])
        length -= b - a
    return kept


def extend(segments: Segments, start: int, count: int) -> Segments:
    """Append `count` entries of the own log from `start`, merging with a range of it
    that ends there."""
    if segments and len(segments[-1]) == 2 and segments[-1][1] == start:
        return [*segments[:-1], [segments[-1][0], start + count]]
    return [*segments, [start, start + count]]


def pieces(segments: Segments, ns: str) -> list[tuple[str, Segments]]:
    """The segments of a version that namespace `ns` holds, by the namespace whose log
    holds them: (namespace, its plain ranges) for each run of ranges in one log."""
    if all(len(span) == 2 for span in segments):  # every version but a subgraph's
        return [(ns, segments)] if segments else []
    found: list[tuple[str, Segments]] = []
    for a, b, *log in segments:
        owner = log[0] if log else ns
        if found and found[-1][0] == owner:
            found[-1][1].append([a, b])
        else:
            found.append((owner, [[a, b]]))
    return found


def rebase(segments: Segments, ns: str, to: str) -> Segments:
    """The segments of a version that `ns` holds, as namespace `to` holds them."""
    return [
        [a, b] if owner == to else [a, b, owner]
        for owner, plain in pieces(segments, ns)
        for a, b in plain
    ]


def enclosing(ns: str) -> str:
    """The namespace of the graph that runs the subgraph of namespace `ns`."""
    return ns.rpartition("|")[0]


def version_runs(
    chunks: Callable[[str], Mapping[int, tuple[int, str]]], segments: Segments, ns: str
) -> list[str]:
    """`element_runs` of a version that `ns` holds, over the namespaces' logs of its channel
    (`chunks`: a namespace's rows of that log)."""
    return [
        run for owner, plain in pieces(segments, ns) for run in element_runs(chunks(owner), plain)
    ]


def merge(spans: Segments) -> Segments:
    """Overlapping or touching ranges merged, so a log is read with few conditions."""
    merged: Segments = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def spanned_rows(
    chunks: Mapping[int, tuple[int, str]], segments: Segments
) -> Iterator[tuple[int, int, int, int, str]]:
    """The rows of a list version: (seq, count, the first of its elements the version
    takes, how many, data). Raises KeyError if a row is missing. Ranges start where a
    row starts (appends start new rows, and versions only ever cut ranges short), except
    in a row that joins several (`joined`): then the row is found by going back."""
    for a, b in segments:
        while a < b:
            start = a
            while start not in chunks and start > 0:
                start -= 1
            count, data = chunks[start]
            if a - start >= count:
                raise KeyError(a)
            yield start, count, a - start, min(count - (a - start), b - a), data
            a = start + count


def element_runs(chunks: Mapping[int, tuple[int, str]], segments: Segments) -> list[str]:
    """The elements of a list version in one log, as runs of elements joined by SEP."""
    return [
        data if taken == count else SEP.join(data.split(SEP)[skip : skip + taken])
        for _, count, skip, taken, data in spanned_rows(chunks, segments)
    ]


def joined(items: list[ItemEntry]) -> list[ItemEntry]:
    """The rows with each run of rows that follow one another in a log as one row: a
    few rows to decode and walk instead of one per save."""
    runs: list[list[ItemEntry]] = []
    for item in items:
        last = runs[-1][-1] if runs else None
        if last is not None and last[:2] == item[:2] and last[2] + last[3] == item[2]:
            runs[-1].append(item)
        else:
            runs.append([item])
    return [
        (*run[0][:3], sum(item[3] for item in run), SEP.join(item[4] for item in run))
        for run in runs
    ]


class ElementTexts:
    """The texts of single elements of one log, each row split at most once: for reads of
    scattered positions (the last message of every turn of a long chat)."""

    def __init__(self, chunks: Mapping[int, tuple[int, str]]) -> None:
        self._chunks = chunks
        self._starts = sorted(chunks)
        self._split: dict[int, list[str]] = {}

    def at(self, position: int) -> str:
        """Raises KeyError if no row holds `position`."""
        row = bisect_right(self._starts, position) - 1
        if row < 0:
            raise KeyError(position)
        start = self._starts[row]
        count, data = self._chunks[start]
        if position >= start + count:
            raise KeyError(position)
        if count == 1:
            return data
        if start not in self._split:
            self._split[start] = data.split(SEP)
        return self._split[start][position - start]


def json_array(runs: list[str]) -> str:
    """The JSON array of `runs` (each one or more elements). The brackets go onto the first
    and last run, so a long list is copied once instead of three times."""
    if not runs:
        return "[]"
    runs[0] = "[" + runs[0]
    runs[-1] += "]"
    return ",".join(runs)


def at_positions(elements: list[Any], segments: Segments) -> list[Any]:
    """The entries of a version's positions in a list indexed by log position."""
    if len(segments) == 1:
        a, b = segments[0]
        return elements[a:b]
    picked: list[Any] = []
    for a, b in segments:
        picked += elements[a:b]
    return picked


def unprepared(elements: list[Any], segments: Segments) -> Segments:
    """The parts of `segments` from the first position in each that is not prepared in
    `elements` (a list indexed by log position): where the rows to prepare are, after a
    turn only its own. Rows are prepared whole, so each part starts where a row starts."""
    parts: Segments = []
    for a, b in segments:
        end = max(a, min(b, len(elements)))
        try:
            first = elements.index(UNPREPARED, a, end)
        except ValueError:  # all prepared up to `end`
            first = end
        if first < b:
            parts.append([first, b])
    return parts


def place_prepared(elements: list[Any], start: int, prepared: list[Any]) -> int:
    """Put `prepared` at the positions from `start` of a list indexed by log position,
    padding it with UNPREPARED as needed; returns how many slots it grew by."""
    grown = max(0, start + len(prepared) - len(elements))
    elements += [UNPREPARED] * grown
    elements[start : start + len(prepared)] = prepared
    return grown
