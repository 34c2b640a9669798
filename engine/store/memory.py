"""A store kept in process memory: for tests, notebooks and graphs run without a server.

It behaves like LangGraph's `InMemoryStore`: the same filters, result order (namespaces
and keys in the order they were written; a replaced item keeps its place), pagination and
optional semantic search. Where LangGraph's keeps leftovers, this one does not: a namespace
is listed only while it holds items, an item's vectors are those of its latest put, and a
replaced item keeps its created_at. Values are deep-copied in and out, so a caller cannot
change a stored item by mutating what it put or got.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from engine.store._index import Index, Vector, rank, with_norm
from engine.store._rules import check_listing, check_page, check_put, matches, namespace_matches
from engine.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

__all__ = ["InMemoryStore"]

Namespace = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Stored:
    """One item as kept: replaced on every put, never changed, so a search may read it
    outside the lock."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    vectors: list[Vector]

    def item(self) -> Item:
        return Item(
            namespace=self.namespace,
            key=self.key,
            value=copy.deepcopy(self.value),
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: float | None) -> SearchItem:
        return SearchItem(
            self.namespace,
            self.key,
            copy.deepcopy(self.value),
            self.created_at,
            self.updated_at,
            score,
        )


@dataclass(slots=True)
class _Plan:
    """A batch after its reads: what is left to embed, rank and write.

    Reads see the store as it was before the batch; its puts land last, as in LangGraph
    (whose database stores do the same), and the last put to a key wins.
    """

    results: list[Result]
    searches: list[tuple[int, SearchOp, list[_Stored]]] = field(default_factory=list)
    puts: dict[tuple[Namespace, str], PutOp] = field(default_factory=dict)
    # text to embed -> the items it belongs to, so a text shared by items is embedded once
    texts: dict[str, list[tuple[Namespace, str]]] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)


class InMemoryStore(BaseStore):
    """A store in a dict. With `index` (see IndexConfig) puts embed the configured fields
    and a search with a `query` ranks items by cosine similarity, best first.

    Without an index a `query` does not rank (items come in store order, score None) and
    nothing is embedded, as in LangGraph. TTL is not supported: items never expire.
    """

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None):
        if ttl is not None:
            raise NotImplementedError(
                "InMemoryStore does not support TTL (ttl=...): its items never expire."
            )
        # Public as in LangGraph: callers check it to know whether `query` ranks.
        self.index_config: IndexConfig | None = cast(IndexConfig, dict(index)) if index else None
        self._index = Index(index, type(self).__name__) if index else None
        self._data: dict[Namespace, dict[str, _Stored]] = {}
        self._lock = threading.Lock()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._read(ops)
        queries: dict[str, list[float]] = {}
        vectors: list[list[float]] = []
        if self._index:
            queries = {query: self._index.embed_query(query) for query in plan.queries}
            if plan.texts:
                vectors = self._index.embed_documents(list(plan.texts))
        return self._finish(plan, queries, vectors)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._read(ops)
        queries: dict[str, list[float]] = {}
        vectors: list[list[float]] = []
        if self._index:
            embedded = await asyncio.gather(*map(self._index.aembed_query, plan.queries))
            queries = dict(zip(plan.queries, embedded, strict=True))
            if plan.texts:
                vectors = await self._index.aembed_documents(list(plan.texts))
        return self._finish(plan, queries, vectors)

    def _read(self, ops: Iterable[Op]) -> _Plan:
        """Check every op, answer the reads and collect the searches and puts."""
        plan = _Plan(results=[])
        with self._lock:
            for op in ops:
                validate_op_namespace(op)
                if isinstance(op, GetOp):
                    stored = self._data.get(op.namespace, {}).get(op.key)
                    plan.results.append(stored.item() if stored else None)
                elif isinstance(op, SearchOp):
                    check_page(op.limit, op.offset)
                    ranked = bool(op.query and self._index)
                    plan.searches.append((len(plan.results), op, self._candidates(op, ranked)))
                    plan.results.append(None)
                    if ranked and op.query not in plan.queries:
                        plan.queries.append(cast(str, op.query))
                elif isinstance(op, ListNamespacesOp):
                    plan.results.append(self._namespaces(op))
                elif isinstance(op, PutOp):
                    _check_put(op)
                    # A private copy, made before anything is written: a value that
                    # cannot be copied fails the whole batch, not half of it.
                    value = None if op.value is None else copy.deepcopy(dict(op.value))
                    plan.puts[(op.namespace, op.key)] = op._replace(value=value)
                    plan.results.append(None)
                else:
                    raise ValueError(f"Unknown operation type: {type(op).__name__}")
        if self._index:
            for op in plan.puts.values():
                for text in self._index.texts(op):
                    plan.texts.setdefault(text, []).append((op.namespace, op.key))
        return plan

    def _candidates(self, op: SearchOp, ranked: bool) -> list[_Stored]:
        """Items under the prefix that pass the filter, in store order; an unranked search
        stops at the end of its page."""
        stop = None if ranked else op.offset + op.limit
        size = len(op.namespace_prefix)
        found: list[_Stored] = []
        for namespace, items in self._data.items():
            if namespace[:size] != op.namespace_prefix:
                continue
            for stored in items.values():
                if len(found) == stop:
                    return found
                if not op.filter or matches(stored.value, op.filter):
                    found.append(stored)
        return found

    def _namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        check_listing(op)
        conditions = op.match_conditions or ()
        found = {
            namespace[: op.max_depth] if op.max_depth is not None else namespace
            for namespace in self._data
            if all(namespace_matches(condition, namespace) for condition in conditions)
        }
        return sorted(found)[op.offset : op.offset + op.limit]

    def _finish(
        self, plan: _Plan, queries: dict[str, list[float]], vectors: list[list[float]]
    ) -> list[Result]:
        """Rank the searches, then write the puts with their new vectors."""
        for position, op, candidates in plan.searches:
            page = slice(op.offset, op.offset + op.limit)
            ranked: list[tuple[_Stored, float | None]]
            if op.query in queries:
                ranked = rank(queries[op.query], candidates, _vectors)[page]
            else:
                ranked = [(stored, None) for stored in candidates[page]]
            plan.results[position] = [stored.search_item(score) for stored, score in ranked]
        item_vectors: dict[tuple[Namespace, str], list[Vector]] = {}
        for owners, numbers in zip(plan.texts.values(), vectors, strict=True):
            vector = with_norm(numbers)
            for owner in owners:
                item_vectors.setdefault(owner, []).append(vector)
        now = datetime.now(UTC)
        with self._lock:
            for owner, put in plan.puts.items():
                self._write(put, now, item_vectors.get(owner, []))
        return plan.results

    def _write(self, op: PutOp, now: datetime, vectors: list[Vector]) -> None:
        items = self._data.get(op.namespace)
        if op.value is None:
            if items is not None:
                items.pop(op.key, None)
                if not items:
                    del self._data[op.namespace]
            return
        items = self._data.setdefault(op.namespace, {})
        old = items.get(op.key)
        items[op.key] = _Stored(
            namespace=op.namespace,
            key=op.key,
            value=dict(op.value),
            created_at=old.created_at if old else now,
            updated_at=now,
            vectors=vectors,
        )


def _vectors(stored: _Stored) -> list[Vector]:
    return stored.vectors


def _check_put(op: PutOp) -> None:
    if op.ttl is not None:
        raise NotImplementedError(
            "TTL is not supported by InMemoryStore: its items never expire. Use ttl=None."
        )
    check_put(op)
