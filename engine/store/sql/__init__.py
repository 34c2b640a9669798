"""A store in a SQL database, PostgreSQL or SQLite: what LangGraph's `PostgresStore` and
`SqliteStore` keep, under the engine's names (`engine.store.postgres`,
`engine.store.sqlite`), on the SQL saver's engines (`engine.checkpoint.sql.connect`).

It behaves as the in-memory store does (the same checks, filters and pagination), with
LangGraph's database stores' order: a search gives the last updated items first, and a
batch's reads see the store as it was before its puts, which land last, the last put to
a key winning. Items may have a time to live (`ttl`, in minutes): `sweep_ttl()` (or the
sweeper) deletes expired items, and with `omit_expired` in the TTL config reads skip
them at once (as in LangGraph, they are read until swept otherwise). With a semantic
index (`index=`, as LangGraph's: `dims`, `embed`, `fields`) a put embeds the indexed
texts and a search with a `query` ranks the items under its prefix by cosine similarity,
here in Python (no pgvector), best first; without one a `query` does not rank.
"""

from __future__ import annotations

import array
import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Row, delete, or_, select, true, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import NullPool

from engine._json import plain_json
from engine.checkpoint.sql.connect import create_engine, write_transaction
from engine.checkpoint.sql.migrations import upgrade
from engine.pregel.sync import run_sync, running_loop
from engine.store._index import Index, Vector, rank, with_norm
from engine.store._rules import (
    check_listing,
    check_page,
    check_put,
    matches,
    namespace_matches,
)
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
from engine.store.sql.models import STORE, store_items

__all__ = ["SQLStore"]

Namespace = tuple[str, ...]
_ITEMS = store_items.c
_COLUMNS = (
    _ITEMS.prefix,
    _ITEMS.key,
    _ITEMS.value,
    _ITEMS.created_at,
    _ITEMS.updated_at,
    _ITEMS.ttl_minutes,
)
# The index options of LangGraph's Postgres store this one reads itself.
_POSTGRES_INDEX_OPTIONS = frozenset({"distance_type", "ann_index_config"})
# The most bytes a namespace (joined) and a key take together: PostgreSQL's B-tree index
# entries end near 2,700 bytes, and the primary key's entry holds both.
MAX_ADDRESS_BYTES = 2048
# A sweep deletes expired items this many at a time, so no transaction grows large.
_SWEEP_BATCH = 5000


@dataclass(slots=True)
class _Batch:
    """A batch, checked: its reads in order, and its writes, the last put to a key winning."""

    reads: list[tuple[int, GetOp | SearchOp | ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[Namespace, str], PutOp] = field(default_factory=dict)
    values: dict[tuple[Namespace, str], str] = field(default_factory=dict)
    size: int = 0
    # With an index: each query's vector, and each put's vectors, packed.
    queries: dict[str, list[float]] = field(default_factory=dict)
    vectors: dict[tuple[Namespace, str], bytes] = field(default_factory=dict)


class SQLStore(BaseStore):
    """A store in the tables `setup()` makes (`engine_store_items`), on an async engine.

    Async code calls the `a` methods; sync code the others, each of which runs the async
    one to completion (as the SQL saver's sync methods do). A store on a pooled engine
    (the `aio` stores') hands a sync call from another thread to the event loop its
    connections belong to, and refuses one made on that loop, which it would block.
    """

    supports_ttl = True

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        owns_engine: bool = False,
    ) -> None:
        self.engine = engine
        self.index_config: IndexConfig | None = dict(index) if index else None  # type: ignore[assignment]
        self._index = _index(index, type(self).__name__) if index else None
        self.ttl_config = _checked_ttl(ttl)
        self._owns_engine = owns_engine
        # A pooled engine's connections belong to the event loop that opened or first
        # awaited the store: sync calls from other threads are handed to that loop while
        # it runs (`batch`).
        self._pooled = not isinstance(engine.sync_engine.pool, NullPool)
        self.home_loop = running_loop() if self._pooled else None
        self._insert: Any = (
            postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        **engine_options: Any,
    ) -> SQLStore:
        """A store on the database `url` names, with a pool of its own (`aclose()` it)."""
        return cls(create_engine(url, **engine_options), index=index, ttl=ttl, owns_engine=True)

    async def setup(self) -> None:
        """Create or upgrade the store's table (its own Alembic history)."""
        await upgrade(self.engine, STORE)

    async def aclose(self) -> None:
        if self._owns_engine:
            await self.engine.dispose()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops`; the embeddings are called as sync code."""
        batch = _check(ops)
        if self._index:
            for query in _queries(batch):
                batch.queries[query] = self._index.embed_query(query)
            texts = self._texts(batch)
            if texts:
                self._pack(batch, texts, self._index.embed_documents(list(texts)))
        home = self.home_loop
        if home is None or not home.is_running():
            return run_sync(lambda: self._run(batch))
        if running_loop() is home:
            raise RuntimeError(
                f"{type(self).__name__}'s sync methods would block the event loop its "
                "connections belong to: in async code, call its async methods (aget, aput, "
                "asearch, ...)."
            )
        return asyncio.run_coroutine_threadsafe(self._run(batch), home).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        batch = _check(ops)
        if self._index:
            queries = _queries(batch)
            embedded = await asyncio.gather(*map(self._index.aembed_query, queries))
            batch.queries = dict(zip(queries, embedded, strict=True))
            texts = self._texts(batch)
            if texts:
                self._pack(batch, texts, await self._index.aembed_documents(list(texts)))
        if self._pooled and self.home_loop is None:
            self.home_loop = asyncio.get_running_loop()
        return await self._run(batch)

    def _texts(self, batch: _Batch) -> dict[str, list[tuple[Namespace, str]]]:
        """Each text the batch's puts embed, with the items it belongs to (a text shared
        by items is embedded once)."""
        assert self._index is not None
        texts: dict[str, list[tuple[Namespace, str]]] = {}
        for where, op in batch.puts.items():
            for text in self._index.texts(op):
                texts.setdefault(text, []).append(where)
        return texts

    def _pack(
        self,
        batch: _Batch,
        texts: dict[str, list[tuple[Namespace, str]]],
        vectors: list[list[float]],
    ) -> None:
        packed: dict[tuple[Namespace, str], array.array[float]] = {}
        for owners, numbers in zip(texts.values(), vectors, strict=True):
            for owner in owners:
                packed.setdefault(owner, array.array("f")).extend(numbers)
        batch.vectors = {owner: numbers.tobytes() for owner, numbers in packed.items()}

    async def _run(self, batch: _Batch) -> list[Result]:
        results: list[Result] = [None] * batch.size
        stamp = datetime.now(UTC)
        renewed: list[Row[Any]] = []
        if batch.reads:
            async with self.engine.connect() as conn:
                for position, op in batch.reads:
                    results[position] = await self._read(conn, op, stamp, batch, renewed)
        if batch.puts or renewed:
            async with write_transaction(self.engine) as conn:
                await self._renew(conn, renewed, stamp)
                await self._write(conn, batch, stamp)
        return results

    def _shown(self, stamp: datetime) -> ColumnElement[bool]:
        """The items reads return: with `omit_expired`, those whose time has not run
        out; else, as in LangGraph, every item until a sweep deletes it."""
        return _live(stamp) if (self.ttl_config or {}).get("omit_expired") else _ALL

    async def asweep_ttl(self) -> int:
        """Delete the items whose time to live ran out; how many."""
        removed = 0
        while True:
            due = (
                select(_ITEMS.prefix, _ITEMS.key)
                .where(_ITEMS.expires_at <= datetime.now(UTC))
                .limit(_SWEEP_BATCH)
            )
            async with write_transaction(self.engine) as conn:
                result = await conn.execute(
                    delete(store_items).where(tuple_(_ITEMS.prefix, _ITEMS.key).in_(due))
                )
            removed += result.rowcount
            if result.rowcount < _SWEEP_BATCH:
                return removed

    async def _read(
        self,
        conn: AsyncConnection,
        op: GetOp | SearchOp | ListNamespacesOp,
        stamp: datetime,
        batch: _Batch,
        renewed: list[Row[Any]],
    ) -> Result:
        if isinstance(op, GetOp):
            query = select(*_COLUMNS).where(
                _ITEMS.prefix == _joined(op.namespace), _ITEMS.key == op.key, self._shown(stamp)
            )
            row = (await conn.execute(query)).first()
            if row is None:
                return None
            if op.refresh_ttl and row.ttl_minutes:
                renewed.append(row)
            return Item(**_fields(row))
        if isinstance(op, SearchOp):
            found = await self._search(conn, op, stamp, batch.queries.get(op.query or ""))
            if op.refresh_ttl:
                renewed.extend(row for row, _ in found if row.ttl_minutes)
            return [SearchItem(**_fields(row), score=score) for row, score in found]
        return await self._namespaces(conn, op, stamp)

    async def _search(
        self, conn: AsyncConnection, op: SearchOp, stamp: datetime, query: list[float] | None
    ) -> list[tuple[Any, float | None]]:
        """The page of live items under the prefix that pass the filter: ranked by their
        similarity to the query's vector when there is one, else last updated first.

        A filter is applied here, as the in-memory store applies it, but for one rule of
        LangGraph's database stores: an item without a field the filter names does not
        match (`{"a": {"$ne": 1}}` skips items without "a"). Without a filter or a query
        the database pages."""
        columns = (*_COLUMNS, _ITEMS.vectors) if query else _COLUMNS
        statement = select(*columns).where(self._shown(stamp))
        if op.namespace_prefix:
            statement = statement.where(_under(op.namespace_prefix))
        statement = statement.order_by(_ITEMS.updated_at.desc(), _ITEMS.prefix, _ITEMS.key)
        if not op.filter and not query:
            page = statement.limit(op.limit).offset(op.offset)
            return [(row, None) for row in await conn.execute(page)]
        kept: list[Any] = []
        end = None if query else op.offset + op.limit
        result = await conn.stream(statement)
        try:
            async for row in result:
                if len(kept) == end:
                    break
                if op.filter:
                    value = orjson.loads(row.value)
                    if not all(key in value for key in op.filter) or not matches(value, op.filter):
                        continue
                kept.append(row)
        finally:
            await result.close()
        page = slice(op.offset, op.offset + op.limit)
        if query:
            return rank(query, kept, self._unpacked)[page]
        return [(row, None) for row in kept[page]]

    def _unpacked(self, row: Any) -> list[Vector]:
        """A row's vectors, with their norms; none when they were made for other `dims`."""
        if not row.vectors:
            return []
        numbers = array.array("f", row.vectors).tolist()
        dims = self._index.dims if self._index and self._index.dims else len(numbers)
        if len(numbers) % dims:
            return []
        return [with_norm(numbers[at : at + dims]) for at in range(0, len(numbers), dims)]

    async def _namespaces(
        self, conn: AsyncConnection, op: ListNamespacesOp, stamp: datetime
    ) -> list[Namespace]:
        query = select(_ITEMS.prefix).where(self._shown(stamp)).distinct()
        conditions = op.match_conditions or ()
        for condition in conditions:
            literal = _literal_head(condition.path) if condition.match_type == "prefix" else ()
            if literal:
                query = query.where(_under(literal))
        found = set()
        for (prefix,) in await conn.execute(query):
            namespace = tuple(prefix.split("."))
            if all(namespace_matches(condition, namespace) for condition in conditions):
                found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset : op.offset + op.limit]

    async def _renew(self, conn: AsyncConnection, rows: list[Row[Any]], stamp: datetime) -> None:
        """Give the items read with a time to live all of it again, from `stamp`."""
        for row in {(row.prefix, row.key): row for row in rows}.values():
            await conn.execute(
                update(store_items)
                .where(_ITEMS.prefix == row.prefix, _ITEMS.key == row.key)
                .values(expires_at=stamp + timedelta(minutes=row.ttl_minutes))
            )

    async def _write(self, conn: AsyncConnection, batch: _Batch, stamp: datetime) -> None:
        for (namespace, key), op in batch.puts.items():
            prefix = _joined(namespace)
            if op.value is None:
                await conn.execute(
                    delete(store_items).where(_ITEMS.prefix == prefix, _ITEMS.key == key)
                )
                continue
            expires = stamp + timedelta(minutes=op.ttl) if op.ttl else None
            statement = self._insert(store_items).values(
                prefix=prefix,
                key=key,
                value=batch.values[(namespace, key)],
                created_at=stamp,
                updated_at=stamp,
                ttl_minutes=op.ttl,
                expires_at=expires,
                vectors=batch.vectors.get((namespace, key)),
            )
            new = statement.excluded
            await conn.execute(
                statement.on_conflict_do_update(
                    index_elements=["prefix", "key"],
                    set_={
                        "value": new.value,
                        "updated_at": new.updated_at,
                        "ttl_minutes": new.ttl_minutes,
                        "expires_at": new.expires_at,
                        "vectors": new.vectors,
                    },
                )
            )


def _index(config: IndexConfig, store: str) -> Index:
    """An index as LangGraph's Postgres store takes it, ranking by cosine similarity."""
    options: dict[str, Any] = dict(config)
    distance = options.get("distance_type", "cosine")
    if distance != "cosine":
        raise NotImplementedError(
            f"{store} ranks by cosine similarity only; distance_type={distance!r} is not supported."
        )
    if options.get("ann_index_config") is not None:
        raise NotImplementedError(
            f"{store} compares a query with every item under the prefix (there is no "
            "pgvector index to tune): leave ann_index_config out."
        )
    dims = options.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ValueError(f"{store} index needs dims, the length of a vector, got {dims!r}.")
    return Index(config, store, also=_POSTGRES_INDEX_OPTIONS)


def _queries(batch: _Batch) -> list[str]:
    """The queries of the batch's searches, each once."""
    return list(
        dict.fromkeys(op.query for _, op in batch.reads if isinstance(op, SearchOp) and op.query)
    )


def _check(ops: Iterable[Op]) -> _Batch:
    """Check every op before anything is read or written: a bad one fails the batch."""
    batch = _Batch()
    for position, op in enumerate(ops):
        batch.size += 1
        validate_op_namespace(op)
        if isinstance(op, GetOp | PutOp) and "\x00" in op.key:
            raise ValueError(f"A key cannot hold a NUL character: {op.key!r}.")
        if isinstance(op, PutOp):
            check_put(op)
            _check_size(op)
            if op.ttl is not None:
                positive_minutes(op.ttl, "ttl must be a number of minutes above 0 (or None)")
            where = (op.namespace, op.key)
            batch.puts[where] = op
            if op.value is not None:
                batch.values[where] = _dumps(op.value, op)
        elif isinstance(op, GetOp | SearchOp | ListNamespacesOp):
            if isinstance(op, SearchOp):
                check_page(op.limit, op.offset)
            elif isinstance(op, ListNamespacesOp):
                check_listing(op)
            batch.reads.append((position, op))
        else:
            raise ValueError(f"Unknown operation type: {type(op).__name__}")
    return batch


def positive_minutes(value: Any, rule: str) -> float:
    """`value` as minutes, when it is a number above 0; else `rule` is the error."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{rule}, got {value!r}.")
    return float(value)


def _check_size(op: PutOp) -> None:
    """A namespace and key the primary key's index can hold (PostgreSQL's index entries
    end near 2.7 kB): refused before the batch writes, naming the limit."""
    size = len(_joined(op.namespace).encode()) + len(op.key.encode())
    if size > MAX_ADDRESS_BYTES:
        raise ValueError(
            f"The namespace and key of an item take {size:,} bytes (UTF-8) together; at "
            f"most {MAX_ADDRESS_BYTES:,}."
        )


def _dumps(value: Any, op: PutOp) -> str:
    """A value's JSON: dates, times, UUIDs, enums and dataclasses as orjson writes them
    (so they read back as strings and dicts, as from LangGraph's database stores), a
    pydantic model as its JSON form; anything else is refused, naming the item."""
    try:
        return orjson.dumps(value, default=plain_json).decode()
    except TypeError as exc:
        raise TypeError(
            f"The value of item {op.key!r} in namespace {op.namespace} is not JSON: {exc}."
        ) from None


def _checked_ttl(ttl: TTLConfig | None) -> TTLConfig | None:
    if ttl is None:
        return None
    known = {"default_ttl", "refresh_on_read", "omit_expired", "sweep_interval_minutes"}
    unknown = set(ttl) - known
    if unknown:
        raise ValueError(
            f"ttl: unknown option(s) {sorted(unknown)}; the options are {sorted(known)}."
        )
    return ttl


def _fields(row: Any) -> dict[str, Any]:
    return {
        "namespace": tuple(row.prefix.split(".")),
        "key": row.key,
        "value": orjson.loads(row.value),
        "created_at": _aware(row.created_at),
        "updated_at": _aware(row.updated_at),
    }


def _aware(stamp: datetime) -> datetime:
    """SQLite gives back the UTC times it was given without their zone."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _joined(namespace: Namespace) -> str:
    return ".".join(namespace)


def _live(stamp: datetime) -> ColumnElement[bool]:
    return or_(_ITEMS.expires_at.is_(None), _ITEMS.expires_at > stamp)


_ALL: ColumnElement[bool] = true()


def _under(prefix: Namespace) -> ColumnElement[bool]:
    """Items whose namespace is `prefix` or lies below it."""
    path = _joined(prefix)
    return or_(_ITEMS.prefix == path, _ITEMS.prefix.startswith(path + ".", autoescape=True))


def _literal_head(path: tuple[str, ...]) -> Namespace:
    """The labels of a prefix condition before its first wildcard."""
    return tuple(path[: path.index("*")]) if "*" in path else tuple(path)
