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
import inspect
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from engine.store._rules import check_page, check_put, matches, namespace_matches
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
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

__all__ = ["InMemoryStore"]

Namespace = tuple[str, ...]
Vector = tuple[list[float], float]  # the numbers and their norm, computed once per put


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
        self._index = _Index(index) if index else None
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
        if op.max_depth is not None and op.max_depth < 1:
            raise ValueError(f"max_depth must be at least 1, got {op.max_depth}.")
        check_page(op.limit, op.offset)
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
                ranked = _rank(queries[op.query], candidates)[page]
            else:
                ranked = [(stored, None) for stored in candidates[page]]
            plan.results[position] = [stored.search_item(score) for stored, score in ranked]
        item_vectors: dict[tuple[Namespace, str], list[Vector]] = {}
        for owners, numbers in zip(plan.texts.values(), vectors, strict=True):
            vector = (numbers, math.sqrt(sum(x * x for x in numbers)))
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


class _Index:
    """The store's semantic index: which fields to embed and how to call the model."""

    def __init__(self, config: IndexConfig) -> None:
        unknown = set(config) - {"dims", "embed", "fields"}
        if unknown:
            raise ValueError(
                f"InMemoryStore index does not support {sorted(unknown)}: it takes dims, "
                "embed and fields (and always ranks by cosine similarity)."
            )
        if "embed" not in config:
            raise ValueError("An index needs `embed`: an embeddings model or function.")
        embed = config["embed"]
        if isinstance(embed, str):
            raise NotImplementedError(
                f"Embeddings named by a string ({embed!r}) are not supported: pass an "
                "embeddings model (with embed_documents and embed_query) or a function."
            )
        if not hasattr(embed, "embed_documents") and not callable(embed):
            raise TypeError(
                "index embed must be an embeddings model (with embed_documents and "
                f"embed_query) or a function of a list of texts, got {type(embed).__name__}."
            )
        fields = config.get("fields") or ["$"]
        if not isinstance(fields, list | tuple) or not all(isinstance(f, str) for f in fields):
            raise TypeError(f"index fields must be a list of paths, got {fields!r}.")
        for path in fields:
            tokenize_path(path)  # a malformed path fails here, not at the first put
        self.fields = list(fields)
        self.dims = config.get("dims")
        # An object with embed_documents is a model; anything else callable is a function.
        self._model: Any = embed if hasattr(embed, "embed_documents") else None
        self._func: Any = None if self._model is not None else embed
        self._is_async = self._func is not None and (
            inspect.iscoroutinefunction(embed)
            or inspect.iscoroutinefunction(getattr(embed, "__call__", None))  # noqa: B004
        )

    def texts(self, op: PutOp) -> list[str]:
        """What a put embeds: the text at each path of its own index or the store's."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else op.index
        return [text for path in paths for text in get_text_at_path(op.value, path)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._model is not None:
            return self._checked(self._model.embed_documents(texts), len(texts))
        if self._is_async:
            raise TypeError(
                "The index embed function is async: use the store's async methods "
                "(aput, asearch, abatch), or give a sync function."
            )
        return self._checked(self._func(texts), len(texts))

    def embed_query(self, text: str) -> list[float]:
        if self._model is not None:
            return self._checked([self._model.embed_query(text)], 1)[0]
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._model is not None:
            if hasattr(self._model, "aembed_documents"):
                vectors = await self._model.aembed_documents(texts)
            else:
                vectors = await asyncio.to_thread(self._model.embed_documents, texts)
        elif self._is_async:
            vectors = await self._func(texts)
        else:
            vectors = await asyncio.to_thread(self._func, texts)
        return self._checked(vectors, len(texts))

    async def aembed_query(self, text: str) -> list[float]:
        if self._model is None:
            return (await self.aembed_documents([text]))[0]
        if hasattr(self._model, "aembed_query"):
            vector = await self._model.aembed_query(text)
        else:
            vector = await asyncio.to_thread(self._model.embed_query, text)
        return self._checked([vector], 1)[0]

    def _checked(self, vectors: Sequence[Sequence[float]], count: int) -> list[list[float]]:
        """Plain float lists (a model may return arrays), one per text, of `dims` numbers."""
        if len(vectors) != count:
            raise ValueError(f"The embeddings returned {len(vectors)} vectors for {count} texts.")
        result = [[float(x) for x in vector] for vector in vectors]
        for vector in result:
            if self.dims is not None and len(vector) != self.dims:
                raise ValueError(
                    f"The embeddings returned a vector of {len(vector)} numbers; "
                    f"the index expects dims={self.dims}."
                )
        return result


def _rank(query: list[float], candidates: list[_Stored]) -> list[tuple[_Stored, float | None]]:
    """Items with vectors by their best cosine similarity, highest first (ties keep store
    order), then the items without vectors, unscored."""
    norm = math.sqrt(sum(x * x for x in query))
    scored: list[tuple[_Stored, float | None]] = []
    unscored: list[tuple[_Stored, float | None]] = []
    for stored in candidates:
        if stored.vectors:
            scored.append((stored, max(_cosine(query, norm, vector) for vector in stored.vectors)))
        else:
            unscored.append((stored, None))
    scored.sort(key=lambda pair: -cast(float, pair[1]))
    return scored + unscored


def _cosine(query: list[float], norm: float, vector: Vector) -> float:
    numbers, vector_norm = vector
    if not norm or not vector_norm:
        return 0.0
    return sum(a * b for a, b in zip(query, numbers, strict=True)) / (norm * vector_norm)


def _check_put(op: PutOp) -> None:
    if op.ttl is not None:
        raise NotImplementedError(
            "TTL is not supported by InMemoryStore: its items never expire. Use ttl=None."
        )
    check_put(op)
