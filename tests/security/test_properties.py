"""Property tests of the input limits (issue 22) over a real server, on both databases:
JSON values deep, wide and long, as metadata, store values and filters. A value is
accepted exactly when it is within the documented limits; an accepted one reads back as
it was written; a refused one is a 413 or 422 naming why, and leaves nothing behind. And
filters match on SQLite exactly as PostgreSQL's `@>` matches them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import psycopg
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import JSON, Column, MetaData, Table, create_engine, func, select

from app.limits import (
    MAX_FILTER_DEPTH,
    MAX_FILTER_ENTRIES,
    MAX_FILTER_SIZE,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_KEY_LENGTH,
)
from app.services.common import json_contains
from tests.security.conftest import budget, count_values

# Keys and strings around the length limit, in any script (four-byte characters too); no
# NUL, which no database stores (refused: tests/security/test_hardening.py).
characters = st.characters(codec="utf-8", exclude_characters="\x00")
texts = st.text(characters, max_size=8) | st.text(
    characters, min_size=MAX_KEY_LENGTH - 2, max_size=MAX_KEY_LENGTH + 2
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(texts, inner, max_size=6),
    max_leaves=30,
)


def around(*limits: int) -> st.SearchStrategy[int]:
    """Counts at and next to each limit, or any up to past the last (hypothesis favours
    small ones)."""
    near = [n for limit in reversed(limits) for n in (limit + 1, limit, limit - 1)]
    return st.sampled_from(near) | st.integers(min_value=0, max_value=limits[-1] + 2)


@st.composite
def deep(draw: st.DrawFn, inner: st.SearchStrategy[Any] = values) -> Any:
    """A value wrapped in objects and arrays, from none to past the depth limit."""
    value = draw(inner)
    levels = draw(around(MAX_FILTER_DEPTH - 1, MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH + 2))
    for wrap in draw(st.lists(st.booleans(), min_size=levels, max_size=levels)):
        value = [value] if wrap else {draw(texts): value}
    return value


@st.composite
def wide(draw: st.DrawFn) -> dict[str, Any]:
    """An object of many keys, around the filter's limit on entries."""
    size = draw(around(MAX_FILTER_ENTRIES))
    return {f"k{i}": draw(scalars) for i in range(size)}


documents = (
    st.dictionaries(texts, deep() | values, max_size=4) | wide() | deep().map(lambda v: {"v": v})
)


def depth(value: Any) -> int:
    """Objects and arrays nested in `value`, itself counting (a scalar 0)."""
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max(map(depth, children), default=0)
    return 0


def entries(value: Any) -> int:
    """Keys and array elements in `value`, at every depth."""
    if isinstance(value, dict | list):
        children = list(value.values()) if isinstance(value, dict) else value
        return len(children) + sum(map(entries, children))
    return 0


def keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [*value, *(k for v in value.values() for k in keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in keys(v)]
    return []


def fits_a_body(field: Any) -> bool:
    """Whether a body `{"field": field}` is within the limits on every body."""
    return depth(field) + 1 <= MAX_JSON_DEPTH and 2 + count_values(field) <= MAX_JSON_VALUES


def fits_metadata(metadata: dict[str, Any]) -> bool:
    return fits_a_body(metadata) and all(len(k) <= MAX_KEY_LENGTH for k in metadata)


def fits_a_filter(subset: dict[str, Any], where: str) -> bool:
    operators = [v for v in subset.values() if isinstance(v, dict) and any(k[:1] == "$" for k in v)]
    return (
        fits_a_body(subset)
        and not (where == "store" and operators)  # store filters take exact values only
        and entries(subset) <= MAX_FILTER_ENTRIES
        and depth(subset) <= MAX_FILTER_DEPTH
        and all(len(k) <= MAX_KEY_LENGTH for k in keys(subset))
        and len(json.dumps(subset, ensure_ascii=False)) <= MAX_FILTER_SIZE
    )


def refused(answer: httpx.Response, field: str) -> None:
    """A refusal of the client's, in JSON, naming `field` (or the body's size)."""
    assert answer.status_code in (413, 422), answer.text[:300]
    detail = answer.json()["detail"]
    if isinstance(detail, str):
        assert detail.startswith(field), detail
    elif answer.status_code == 422:
        assert detail[0]["loc"][:2] == ["body", field], detail[0]["loc"]


def test_metadata_is_accepted_exactly_within_the_limits_and_reads_back(server: str) -> None:
    with httpx.Client(base_url=server, timeout=60) as http:
        count = 0

        @budget(60)
        @given(metadata=documents)
        def check(metadata: dict[str, Any]) -> None:
            nonlocal count
            answer = http.post("/threads", json={"metadata": metadata})
            if not fits_metadata(metadata):
                refused(answer, "metadata")
                assert http.post("/threads/count", json={}).json() == count
                return
            assert answer.status_code == 200, answer.text[:300]
            count += 1
            thread = answer.json()
            assert thread["metadata"] == metadata
            assert http.get(f"/threads/{thread['thread_id']}").json()["metadata"] == metadata
            found = http.post("/threads/search", json={"limit": 1000})  # the largest page
            assert found.status_code == 200 and len(found.json()) == min(count, 1000)
            assert http.post("/threads/count", json={}).json() == count

        check()


def test_store_values_are_accepted_within_the_limits_and_read_back(server: str) -> None:
    with httpx.Client(base_url=server, timeout=60) as http:

        @budget(40)
        @given(value=documents, key=texts.filter(bool))
        def check(value: dict[str, Any], key: str) -> None:
            item = {"namespace": ["n"], "key": key, "value": value}
            answer = http.put("/store/items", json=item)
            if not (fits_a_body(value) and len(key) <= MAX_KEY_LENGTH):
                refused(answer, "key" if fits_a_body(value) else "value")
                return
            assert answer.status_code == 204, answer.text[:300]
            read = http.get("/store/items", params={"namespace": "n", "key": key})
            assert read.status_code == 200 and read.json()["value"] == value

        check()


def test_filters_are_accepted_exactly_within_the_limits(server: str) -> None:
    with httpx.Client(base_url=server, timeout=60) as http:
        thread = http.post("/threads", json={"metadata": {"k0": 0, "v": {"a": [1, "x"]}}})
        assert thread.status_code == 200

        @budget(60)
        @given(subset=documents, where=st.sampled_from(["threads", "assistants", "store"]))
        def check(subset: dict[str, Any], where: str) -> None:
            field = "filter" if where == "store" else "metadata"
            path = "/store/items/search" if where == "store" else f"/{where}/search"
            answer = http.post(path, json={field: subset})
            if not fits_a_filter(subset, where):
                refused(answer, field)
                return
            assert answer.status_code == 200, answer.text[:300]

        check()


@st.composite
def documents_and_filters(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A document and a filter: a part of it (which it contains), or that part changed a
    little somewhere, or anything."""
    document = draw(st.dictionaries(texts, values, max_size=5))

    def part(value: Any) -> Any:
        if isinstance(value, dict | list) and not value:
            return value
        if isinstance(value, dict):
            kept = draw(st.lists(st.sampled_from(sorted(value)), unique=True))
            return {key: part(value[key]) for key in kept}
        if isinstance(value, list):
            return [part(item) for item in draw(st.lists(st.sampled_from(value)))]
        return draw(st.sampled_from([value, value, None, 1, True, "1", [value], {"x": value}]))

    subset = draw(st.just(part(document)) | st.dictionaries(texts, values, max_size=3))
    return document, subset


def test_sqlite_matches_filters_as_postgresql_does(postgres_url: str) -> None:
    """`json_contains` on SQLite against PostgreSQL's own `@>`, on the same JSON."""
    table = Table("docs", MetaData(), Column("doc", JSON))
    lite = create_engine("sqlite://")
    table.create(lite)
    with psycopg.connect(postgres_url) as postgres, lite.connect() as sqlite:

        @budget(300)
        @given(documents_and_filters())
        def check(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
            document, subset = pair
            contains = "SELECT CAST(%s AS jsonb) @> CAST(%s AS jsonb)"
            [expected] = postgres.execute(contains, (json.dumps(document), json.dumps(subset)))
            sqlite.execute(table.delete())
            sqlite.execute(table.insert().values(doc=document))
            query = select(func.count()).select_from(table)
            query = query.where(json_contains("sqlite", table.c.doc, subset))
            assert sqlite.scalar(query) == int(expected[0]), (document, subset)

        check()
