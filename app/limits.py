"""Limits on what one request may hold, in one place (`docs/api.md` lists them): how deep
its JSON nests and how many values it holds, how long ids, names and keys are, how big
filters and lists are, and the ranges of numbers. Each is checked before anything is
stored, the same way on every database; a value beyond one is answered 422 naming the
field and the limit (413 for a body of too many values).

They keep every accepted value readable (response models and JSON parsers have depth
limits of their own, far above these), within what every database column and index
holds, and the work of one request bounded: every step walks a body's values, and a
filter is matched against every row a search reads.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints

# Objects and arrays nested in a request body, the body itself counting as one; and the
# values in it (objects, arrays, scalars and object keys): every step of a request
# (parsing, validating, storing, answering) walks them all.
MAX_JSON_DEPTH = 64
MAX_JSON_VALUES = 100_000
# Characters no text the server stores may hold: a lone surrogate cannot be written as
# UTF-8; NUL cannot be stored in PostgreSQL text.
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Ids, names (graphs, nodes, assistants), store keys, metadata keys, the keys of filters
# at any depth, a store namespace's labels joined: columns and indexes hold this many on
# both databases.
MAX_KEY_LENGTH = 200
# A namespace of one-character labels, joined by separators, is this long at most.
MAX_NAMESPACE_LABELS = (MAX_KEY_LENGTH + 1) // 2
# A filter (of metadata, values, a store item's value): keys and array elements in all,
# how deep it nests, and the characters of its JSON (matching a row reads all of it).
MAX_FILTER_ENTRIES = 100
MAX_FILTER_DEPTH = 8
MAX_FILTER_SIZE = 64 * 1024
# Ids in one request (threads to search or prune, runs to cancel).
MAX_IDS = 1000
# Fields named in a `select`, node names in `interrupt_before`/`interrupt_after`.
MAX_NAMES = 100
# Runs in one `POST /runs/batch`.
MAX_BATCH_RUNS = 100
# Items in one page of a search or list, and how far pages go.
MAX_PAGE_SIZE = 1000
# A page of a thread's history ends at the version that takes its values past this many
# characters of JSON (a page has one version at least).
HISTORY_PAGE_TEXT = 16 * 1024 * 1024
MAX_OFFSET = 2**31 - 1
# A thread's time to live: at most ten years, in minutes.
MAX_TTL_MINUTES = 10 * 365 * 24 * 60
# An assistant's versions are counted in a 32-bit integer column.
MAX_VERSION = 2**31 - 1
# Event ids of a run's stream fit a 32-bit integer, as does the one after the last.
MAX_EVENT_ID = 2**31 - 2
# `after_seconds`: a run may be put off by a year at most.
MAX_DELAY_S = 365 * 24 * 3600


def canonical_uuid(value: str) -> str:
    """A UUID given by a client in its canonical form (lowercase, with dashes). ASCII
    only: `uuid.UUID` reads any Unicode digit as one, so '１' (fullwidth) would name the
    same thread as '1'. ValueError when it is none."""
    if not isinstance(value, str) or not value.isascii():
        raise ValueError(f"{value!r} is not a UUID")
    return str(uuid.UUID(value))


def _key(key: str) -> None:
    if len(key) > MAX_KEY_LENGTH:
        raise ValueError(f"key {key[:20]!r}... has {len(key)} characters; at most {MAX_KEY_LENGTH}")


def _measure(value: Any) -> tuple[int, int]:
    """How many keys and array elements `value` holds in all, and how deep it nests (a
    scalar 0, `{}` 1); ValueError for an object key longer than MAX_KEY_LENGTH."""
    if isinstance(value, dict):
        for key in value:
            _key(key)
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    else:
        return 0, 0
    entries, depth = len(children), 0
    for child in children:
        inner_entries, inner_depth = _measure(child)
        entries += inner_entries
        depth = max(depth, inner_depth)
    return entries, depth + 1


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    for key in value:
        _key(key)
    return value


def _filter(value: dict[str, Any]) -> dict[str, Any]:
    entries, depth = _measure(value)
    if entries > MAX_FILTER_ENTRIES:
        raise ValueError(
            f"the filter has {entries} keys and elements; at most {MAX_FILTER_ENTRIES}"
        )
    if depth > MAX_FILTER_DEPTH:
        raise ValueError(f"the filter nests {depth} levels deep; at most {MAX_FILTER_DEPTH}")
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_FILTER_SIZE:
        raise ValueError(f"the filter's JSON has {size} characters; at most {MAX_FILTER_SIZE}")
    return value


def graph_id_problem(graph_id: str) -> str | None:
    """Why a served graph's id could not be named by a request, or None: a run names its
    graph by an id of at most MAX_KEY_LENGTH characters, and one that reads as a UUID is
    taken for an assistant's."""
    if not graph_id.strip() or graph_id != graph_id.strip():
        return f"graph id {graph_id!r} is empty or starts or ends with spaces"
    if len(graph_id) > MAX_KEY_LENGTH or any(ord(c) < 32 for c in graph_id):
        return (
            f"graph id {graph_id[:40]!r}... is over {MAX_KEY_LENGTH} characters or holds a "
            "control character"
        )
    try:
        uuid.UUID(graph_id)
    except ValueError:
        return None
    return f"graph id {graph_id!r} reads as a UUID, which names an assistant"


Key = Annotated[str, StringConstraints(max_length=MAX_KEY_LENGTH)]
"""An id, a name or a key."""
Keys = Annotated[list[Key], Field(max_length=MAX_IDS)]
"""Ids of one request."""
Names = Annotated[list[Key], Field(max_length=MAX_NAMES)]
"""Field or node names."""
Metadata = Annotated[dict[str, Any], AfterValidator(_metadata)]
"""Metadata a client stores: keys of at most MAX_KEY_LENGTH characters."""
Filter = Annotated[dict[str, Any], AfterValidator(_filter)]
"""A JSON containment filter, bounded in size and depth."""
# Strict: JSON's `true` is not the page size 1, nor `2.0` the offset 2.
PageSize = Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, strict=True)]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, strict=True)]
