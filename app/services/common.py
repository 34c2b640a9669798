"""Helpers every service uses: ids, clocks, parsing ids from paths, JSON filters in SQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, cast, exists, func, literal, select
from sqlalchemy.dialects.postgresql import JSONB

from app.errors import Invalid, NotFound, TooLarge
from app.graphs import GraphRegistry
from engine import CompiledGraph
from engine.checkpoint.ids import new_uuid7


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """Time-ordered (UUIDv7), so ids sort in creation order."""
    return str(new_uuid7())


def parse_uuid(value: str, what: str) -> str:
    """The canonical form of a UUID given by a client, or a 422 naming the field."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        raise Invalid(f"{what} must be a UUID, got {value!r}.") from None


def served_graph(graphs: GraphRegistry, graph_id: str) -> CompiledGraph:
    """The compiled graph of `graph_id`, or a 404 naming the graphs served here."""
    graph = graphs.get(graph_id)
    if graph is None:
        raise NotFound(f"Graph '{graph_id}' is not served here (graphs: {sorted(graphs.graphs)}).")
    return graph


def ordered(query: Select[Any], direction: str, *columns: Any) -> Select[Any]:
    """`query` sorted by `columns`, all in one direction; the last should be unique, so
    that pages of a search never overlap nor skip rows."""
    return query.order_by(*(c.asc() if direction == "asc" else c.desc() for c in columns))


def _check_keys(value: Any, what: str) -> None:
    """Keys a JSON filter may use: SQLite's JSON paths cannot spell a quote or backslash."""
    if isinstance(value, list):
        for item in value:
            _check_keys(item, what)
    elif isinstance(value, dict):
        for key, item in value.items():
            if '"' in key or "\\" in key:
                raise Invalid(f"{what}: key {key!r} must not contain a quote or a backslash.")
            _check_keys(item, what)


def json_contains(
    dialect: str, column: ColumnElement[Any], subset: dict[str, Any], what: str
) -> ColumnElement[bool]:
    """SQL for "the JSON in `column` contains `subset`", with PostgreSQL's `@>` meaning
    (objects match key by key, arrays contain every given element) on both dialects, so
    filters run in the database, never by loading rows."""
    _check_keys(subset, what)
    if dialect == "postgresql":
        return cast(column, JSONB).contains(subset)
    return _sqlite_contains(column, "$", subset)


def _sqlite_contains(doc: ColumnElement[Any], path: str, value: Any) -> ColumnElement[bool]:
    kind = func.json_type(doc, path)
    if isinstance(value, dict):
        if not value:
            return kind == "object"
        return and_(*(_sqlite_contains(doc, f'{path}."{k}"', v) for k, v in value.items()))
    if isinstance(value, list):
        return and_(kind == "array", *(_sqlite_has_element(doc, path, item) for item in value))
    return _sqlite_scalar(kind, func.json_extract(doc, path), value)


def _sqlite_has_element(doc: ColumnElement[Any], path: str, item: Any) -> ColumnElement[bool]:
    each = func.json_each(doc, path).table_valued("value", "type")
    if isinstance(item, dict | list):
        # Containers come out of json_each as JSON text, which the JSON functions read.
        match = _sqlite_contains(each.c.value, "$", item)
    else:
        match = _sqlite_scalar(each.c.type, each.c.value, item)
    return exists(select(literal(1)).select_from(each).where(match))


def _sqlite_scalar(
    kind: ColumnElement[Any], extracted: ColumnElement[Any], value: Any
) -> ColumnElement[bool]:
    if value is None:
        return kind == "null"
    if isinstance(value, bool):
        return kind == ("true" if value else "false")
    if isinstance(value, int | float):
        return and_(kind.in_(("integer", "real")), extracted == value)
    return and_(kind == "text", extracted == value)


MESSAGE_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError)
"""What LangChain raises for a value it cannot make a message of: a client's mistake."""


def error_message(exc: BaseException) -> str:
    """What went wrong, in words: a KeyError's text (LangChain's message coercion raises
    one for a missing field) is only the key."""
    return f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)


def check_messages(value: Any, limit: int, where: str) -> None:
    """413 when `value`'s `messages` list holds more than `limit` (0: no limit) messages:
    one request must not grow a thread without bound."""
    messages = value.get("messages") if isinstance(value, dict) else None
    if limit and isinstance(messages, list) and len(messages) > limit:
        raise TooLarge(
            f"{where}.messages has {len(messages)} messages; at most {limit} per request."
        )
