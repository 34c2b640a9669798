"""A store in a SQL database, PostgreSQL or SQLite: what LangGraph's `PostgresStore` and
`SqliteStore` keep, under the engine's names (`engine.store.postgres`,
`engine.store.sqlite`), on the SQL saver's engines (`engine.checkpoint.sql.connect`).

It behaves as the in-memory store does (the same checks, filters and pagination), with
LangGraph's database stores' order: a search gives the last updated items first, and a
batch's reads see the store as it was before its puts, which land last, the last put to
a key winning. Items may have a time to live (`ttl`, in minutes): reads skip an expired
item at once, `sweep_ttl()` deletes them. There is no semantic index: `index=...` is
refused, and a search's `query` does not rank (as in LangGraph stores without one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Row, delete, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from engine.checkpoint.sql.connect import create_engine, write_transaction
from engine.checkpoint.sql.migrations import upgrade
from engine.pregel.sync import run_sync
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
    validate_op_namespace,
)
from engine.store.sql.models import STORE, store_items

__all__ = ["SQLStore"]

Namespace = tuple[str, ...]
_ITEMS = store_items.c
_COLUMNS = (_ITEMS.prefix, _ITEMS.key, _ITEMS.value, _ITEMS.created_at, _ITEMS.updated_at)
# A sweep deletes expired items this many at a time, so no transaction grows large.
_SWEEP_BATCH = 5000


@dataclass(slots=True)
class _Batch:
    """A batch, checked: its reads in order, and its writes, the last put to a key winning."""

    reads: list[tuple[int, GetOp | SearchOp | ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[Namespace, str], PutOp] = field(default_factory=dict)
    values: dict[tuple[Namespace, str], str] = field(default_factory=dict)
    size: int = 0


class SQLStore(BaseStore):
    """A store in the tables `setup()` makes (`engine_store_items`), on an async engine.

    Async code calls the `a` methods; sync code the others, each of which runs the async
    one to completion (as the SQL saver's sync methods do).
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
        if index is not None:
            raise NotImplementedError(
                f"{type(self).__name__} has no semantic index (index=...): its searches "
                "filter and page but do not rank by a query. InMemoryStore(index=...) "
                "ranks by embeddings."
            )
        self.engine = engine
        self.index_config: IndexConfig | None = None
        self.ttl_config = _checked_ttl(ttl)
        self._owns_engine = owns_engine
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
        ops = list(ops)
        return run_sync(lambda: self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        batch = _check(ops)
        results: list[Result] = [None] * batch.size
        stamp = datetime.now(UTC)
        renewed: list[Row[Any]] = []
        if batch.reads:
            async with self.engine.connect() as conn:
                for position, op in batch.reads:
                    results[position] = await self._read(conn, op, stamp, renewed)
        if batch.puts or renewed:
            async with write_transaction(self.engine) as conn:
                await self._renew(conn, renewed, stamp)
                await self._write(conn, batch, stamp)
        return results

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
        renewed: list[Row[Any]],
    ) -> Result:
        if isinstance(op, GetOp):
            query = select(*_COLUMNS, _ITEMS.ttl_minutes).where(
                _ITEMS.prefix == _joined(op.namespace), _ITEMS.key == op.key, _live(stamp)
            )
            row = (await conn.execute(query)).first()
            if row is None:
                return None
            if op.refresh_ttl and row.ttl_minutes:
                renewed.append(row)
            return Item(**_fields(row))
        if isinstance(op, SearchOp):
            rows = await self._search(conn, op, stamp)
            if op.refresh_ttl:
                renewed.extend(row for row in rows if row.ttl_minutes)
            return [SearchItem(**_fields(row), score=None) for row in rows]
        return await self._namespaces(conn, op, stamp)

    async def _search(self, conn: AsyncConnection, op: SearchOp, stamp: datetime) -> list[Any]:
        """The page of live items under the prefix that pass the filter, last updated
        first. A filter is applied here, as the in-memory store applies it, to the items
        in that order, but for one rule of LangGraph's database stores: an item without a
        field the filter names does not match (`{"a": {"$ne": 1}}` skips items without
        "a"). Without a filter the database pages."""
        query = select(*_COLUMNS, _ITEMS.ttl_minutes).where(_live(stamp))
        if op.namespace_prefix:
            query = query.where(_under(op.namespace_prefix))
        query = query.order_by(_ITEMS.updated_at.desc(), _ITEMS.prefix, _ITEMS.key)
        if not op.filter:
            page = query.limit(op.limit).offset(op.offset)
            return list(await conn.execute(page))
        kept: list[Any] = []
        end = op.offset + op.limit
        result = await conn.stream(query)
        try:
            async for row in result:
                if len(kept) == end:
                    break
                value = orjson.loads(row.value)
                if all(key in value for key in op.filter) and matches(value, op.filter):
                    kept.append(row)
        finally:
            await result.close()
        return kept[op.offset :]

    async def _namespaces(
        self, conn: AsyncConnection, op: ListNamespacesOp, stamp: datetime
    ) -> list[Namespace]:
        query = select(_ITEMS.prefix).where(_live(stamp)).distinct()
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
                    },
                )
            )


def _check(ops: Iterable[Op]) -> _Batch:
    """Check every op before anything is read or written: a bad one fails the batch."""
    batch = _Batch()
    for position, op in enumerate(ops):
        batch.size += 1
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            check_put(op)
            if op.ttl is not None and (
                isinstance(op.ttl, bool) or not isinstance(op.ttl, int | float) or op.ttl <= 0
            ):
                raise ValueError(
                    f"ttl must be a number of minutes above 0 (or None), got {op.ttl!r}."
                )
            where = (op.namespace, op.key)
            batch.puts[where] = op
            if op.value is not None:
                batch.values[where] = _dumps(op.value, op)
        elif isinstance(op, GetOp | SearchOp | ListNamespacesOp):
            if isinstance(op, SearchOp):
                check_page(op.limit, op.offset)
            elif isinstance(op, ListNamespacesOp):
                if op.max_depth is not None and op.max_depth < 1:
                    raise ValueError(f"max_depth must be at least 1, got {op.max_depth}.")
                check_page(op.limit, op.offset)
            batch.reads.append((position, op))
        else:
            raise ValueError(f"Unknown operation type: {type(op).__name__}")
    return batch


def _dumps(value: Any, op: PutOp) -> str:
    """A value's JSON: dates, times, UUIDs, enums and dataclasses as orjson writes them
    (so they read back as strings and dicts, as from LangGraph's database stores), a
    pydantic model as its JSON form; anything else is refused, naming the item."""
    try:
        return orjson.dumps(value, default=_jsonable).decode()
    except TypeError as exc:
        raise TypeError(
            f"The value of item {op.key!r} in namespace {op.namespace} is not JSON: {exc}."
        ) from None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} cannot be stored")


def _checked_ttl(ttl: TTLConfig | None) -> TTLConfig | None:
    if ttl is None:
        return None
    known = {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}
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


def _under(prefix: Namespace) -> ColumnElement[bool]:
    """Items whose namespace is `prefix` or lies below it."""
    path = _joined(prefix)
    return or_(_ITEMS.prefix == path, _ITEMS.prefix.startswith(path + ".", autoescape=True))


def _literal_head(path: tuple[str, ...]) -> Namespace:
    """The labels of a prefix condition before its first wildcard."""
    return tuple(path[: path.index("*")]) if "*" in path else tuple(path)
