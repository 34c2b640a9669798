"""The store: JSON documents by namespace and key, shared across a user's threads. Each
user has their own namespaces: every statement here is scoped to the owner.

A namespace is kept as its labels joined with the unit separator, so a prefix search is
one indexed LIKE; labels may hold neither that character nor a period (the dotted form
is how clients name a namespace in a query string).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, bindparam, delete, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite

from app.db.models import StoreItemRow
from app.errors import Invalid, NotFound
from app.limits import MAX_KEY_LENGTH
from app.schemas.store import ItemPut, ItemSearch, NamespaceSearch
from app.services import store_filter
from app.services.common import now

if TYPE_CHECKING:
    from app.db.database import Database


SEP = "\x1f"
_ITEMS = StoreItemRow.__table__.c
# An item's new end of life, by its key (an executemany's rows).
_RENEW = (
    update(StoreItemRow.__table__)
    .where(
        _ITEMS.owner == bindparam("at_owner"),
        _ITEMS.namespace == bindparam("at_namespace"),
        _ITEMS.key == bindparam("at_key"),
    )
    .values(expires_at=bindparam("until"))
)


def joined(namespace: list[str], what: str = "namespace") -> str:
    """The stored form of a namespace; 422 naming `what` for no label, a label it cannot
    hold, or labels longer than a key in all."""
    if not namespace:
        raise Invalid(f"{what}: give at least one label.")
    path = SEP.join(namespace)
    if len(path) > MAX_KEY_LENGTH:
        raise Invalid(
            f"{what}: the labels have {len(path)} characters, counting one between labels; "
            f"at most {MAX_KEY_LENGTH}."
        )
    for label in namespace:
        if not label or "." in label or SEP in label:
            raise Invalid(f"{what}: label {label!r} must be non-empty, without '.' or '\\x1f'.")
    return path


def labels(item: StoreItemRow) -> list[str]:
    """The namespace of a stored item, as labels."""
    return item.namespace.split(SEP)


def _live(stamp: datetime) -> ColumnElement[bool]:
    """Items whose time to live has not run out (the sweep deletes the others later)."""
    return or_(StoreItemRow.expires_at.is_(None), StoreItemRow.expires_at > stamp)


def _until(stamp: datetime, minutes: float | None) -> datetime | None:
    return stamp + timedelta(minutes=minutes) if minutes else None


def _under(prefix: list[str], field: str) -> ColumnElement[bool]:
    """Items whose namespace is `prefix` (given as `field`) or lies below it."""
    path = joined(prefix, field)
    return or_(
        StoreItemRow.namespace == path,
        StoreItemRow.namespace.startswith(path + SEP, autoescape=True),
    )


class StoreService:
    """The store's items in the database, each statement scoped to their owner."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._insert: Any = postgresql.insert if db.dialect == "postgresql" else sqlite.insert

    async def put(self, body: ItemPut, *, owner: str) -> None:
        """Create or replace an item in one statement (an upsert), keeping its created_at.
        The engine's stores (as LangGraph's) keep the "langgraph" tree for themselves."""
        namespace = joined(body.namespace)
        if body.namespace[0] == "langgraph":
            raise Invalid('namespace: the root label "langgraph" is reserved; use another.')
        stamp = now()
        statement = self._insert(StoreItemRow).values(
            owner=owner,
            namespace=namespace,
            key=body.key,
            value=body.value,
            created_at=stamp,
            updated_at=stamp,
            ttl_minutes=body.ttl,
            expires_at=_until(stamp, body.ttl),
        )
        new = statement.excluded
        async with self.db.write() as session:
            await session.execute(
                statement.on_conflict_do_update(
                    index_elements=["owner", "namespace", "key"],
                    set_={
                        "value": new.value,
                        "updated_at": stamp,
                        "ttl_minutes": new.ttl_minutes,
                        "expires_at": new.expires_at,
                    },
                )
            )

    async def get(
        self, namespace: list[str], key: str, *, refresh_ttl: bool = True, owner: str
    ) -> StoreItemRow:
        """`find`, or 404."""
        item = await self.find(namespace, key, refresh_ttl=refresh_ttl, owner=owner)
        if item is None:
            raise NotFound(f"No item {key!r} in namespace {namespace}.")
        return item

    async def find(
        self, namespace: list[str], key: str, *, refresh_ttl: bool = True, owner: str
    ) -> StoreItemRow | None:
        """One item by its primary key, or None (also once its time to live ran out): an
        absent item is an answer, as LangGraph's server gives it (`null`); with
        `refresh_ttl`, an item with a time to live has it all again."""
        stamp = now()
        async with self.db.read() as session:
            item = await session.get(StoreItemRow, (owner, joined(namespace), key))
        if item is None or (item.expires_at is not None and item.expires_at <= stamp):
            return None
        if refresh_ttl:
            await self._refresh([item], stamp)
        return item

    async def _refresh(self, items: list[StoreItemRow], stamp: datetime) -> None:
        """Give the items that have a time to live all of it again, from `stamp`."""
        lasting = [item for item in items if item.ttl_minutes]
        if not lasting:
            return
        for item in lasting:
            item.expires_at = _until(stamp, item.ttl_minutes)
        rows = [
            {
                "at_owner": item.owner,
                "at_namespace": item.namespace,
                "at_key": item.key,
                "until": item.expires_at,
            }
            for item in lasting
        ]
        async with self.db.write() as session:
            # One statement for them all (an executemany), not a round trip each.
            await session.execute(_RENEW, rows)

    async def expire(self, *, batch: int = 5000) -> int:
        """Delete the items whose time to live ran out; how many."""
        removed = 0
        while True:
            due = (
                select(StoreItemRow.owner, StoreItemRow.namespace, StoreItemRow.key)
                .where(StoreItemRow.expires_at <= now())
                .limit(batch)
            )
            async with self.db.write() as session:
                result = await session.execute(
                    delete(StoreItemRow).where(
                        tuple_(StoreItemRow.owner, StoreItemRow.namespace, StoreItemRow.key).in_(
                            due
                        )
                    )
                )
            count: int = result.rowcount  # type: ignore[attr-defined]
            removed += count
            if count < batch:
                return removed

    async def delete_item(self, namespace: list[str], key: str, *, owner: str) -> None:
        """Delete an item; deleting one that is not there is not an error."""
        async with self.db.write() as session:
            await session.execute(
                delete(StoreItemRow).where(
                    StoreItemRow.owner == owner,
                    StoreItemRow.namespace == joined(namespace),
                    StoreItemRow.key == key,
                )
            )

    async def search(self, body: ItemSearch, *, owner: str) -> list[StoreItemRow]:
        """Items under the prefix whose value passes the filter (values it contains,
        operators on its fields), last updated first; those with a time to live have it
        all again unless `refresh_ttl` is false."""
        stamp = now()
        query = select(StoreItemRow).where(StoreItemRow.owner == owner, _live(stamp))
        if body.namespace_prefix:
            query = query.where(_under(body.namespace_prefix, "namespace_prefix"))
        if body.filter:
            query = query.where(
                store_filter.where(self.db.dialect, StoreItemRow.value, body.filter)
            )
        query = query.order_by(
            StoreItemRow.updated_at.desc(), StoreItemRow.namespace, StoreItemRow.key
        )
        async with self.db.read() as session:
            found = list(await session.scalars(query.limit(body.limit).offset(body.offset)))
        if body.refresh_ttl is not False:
            await self._refresh(found, stamp)
        return found

    async def namespaces(self, body: NamespaceSearch, *, owner: str) -> list[list[str]]:
        """Distinct namespaces matching prefix and suffix ("*" matches any label), cut to
        `max_depth` labels, sorted."""
        prefix, suffix = body.prefix or [], body.suffix or []
        for labels, field in ((prefix, "prefix"), (suffix, "suffix")):
            if labels:
                joined(labels, field)  # 422 for a label no namespace can have
        literal = prefix[: prefix.index("*")] if "*" in prefix else prefix
        query = (
            select(StoreItemRow.namespace)
            .where(StoreItemRow.owner == owner, _live(now()))
            .distinct()
        )
        if literal:
            query = query.where(_under(literal, "prefix"))
        async with self.db.read() as session:
            paths = list(await session.scalars(query))
        found = set()
        for path in paths:
            parts = path.split(SEP)
            tail = parts[len(parts) - len(suffix) :]
            if _matches(parts[: len(prefix)], prefix) and _matches(tail, suffix):
                found.add(tuple(parts[: body.max_depth]))
        return [list(p) for p in sorted(found)][body.offset : body.offset + body.limit]


def _matches(parts: list[str], pattern: list[str]) -> bool:
    """Whether labels match a pattern of labels, "*" standing for any one label."""
    return len(parts) == len(pattern) and all(
        p in ("*", part) for p, part in zip(pattern, parts, strict=True)
    )
