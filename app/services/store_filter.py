"""A store search's `filter` in SQL, on PostgreSQL and SQLite: values the item's value
contains (PostgreSQL's `@>` meaning, as every filter of this server) and, on any field,
the comparison operators of LangGraph's stores (`{"score": {"$gte": 3}}`).

The operators are the engine's (engine/store/_rules.py, which its stores apply in
Python): the same ones are accepted and refused, and with the same meaning, but here they
run in the database, so a search still pages in SQL. As in LangGraph's database stores,
a field an operator names must be there (`{"a": {"$ne": 1}}` skips items without `a`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Numeric, TextClause, and_, case, cast, func, literal
from sqlalchemy.dialects.postgresql import JSONB

from app.errors import Invalid
from app.services.common import SqliteContains, json_contains
from engine.store._rules import matches

# The order operators, as SQL; `$eq` and `$ne` compare JSON values.
_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
# A string an order operator reads as a number: a JSON number, with JSON's whitespace
# around it, of at most this many characters. SQLite checks it with its JSON parser,
# PostgreSQL with this pattern; the bounds keep PostgreSQL's cast to numeric in range.
_NUMBER_TEXT_MAX = 1000
_JSON_NUMBER = r"^[ \t\n\r]*-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,4})?[ \t\n\r]*$"


@dataclass(frozen=True, slots=True)
class Comparison:
    """One operator on the field at `path`: its argument, a number for an order one."""

    path: tuple[str, ...]
    op: str
    argument: Any


def where(
    dialect: str, column: ColumnElement[Any], filter: dict[str, Any]
) -> ColumnElement[bool] | TextClause:
    """SQL for "the JSON in `column` passes `filter`" (a filter with at least one key);
    422 for an operator the engine's stores refuse, or one SQL here cannot apply."""
    contained, comparisons = split(filter)
    if dialect != "postgresql":
        # SQLite walks the filter itself, operators in place (their keys may be any text).
        return _SqliteFilter(column).where(filter)
    document = cast(column, JSONB)
    terms: list[ColumnElement[bool] | TextClause] = [
        _postgres(document, comparison) for comparison in comparisons
    ]
    if contained:
        terms.insert(0, json_contains(dialect, column, contained))
    return and_(*terms)


def split(filter: dict[str, Any]) -> tuple[dict[str, Any], list[Comparison]]:
    """The values a filter asks to contain (the objects around its operators kept, empty,
    so that each stays an object), and its comparisons; checked."""
    comparisons: list[Comparison] = []
    if _is_operators(filter):
        comparisons.extend(_comparison((), op, argument) for op, argument in filter.items())
    return _split(filter, (), comparisons), comparisons


def _split(
    value: dict[str, Any], path: tuple[str, ...], comparisons: list[Comparison]
) -> dict[str, Any]:
    contained: dict[str, Any] = {}
    for key, item in value.items():
        at = (*path, key)
        if _is_operators(item):
            comparisons.extend(_comparison(at, op, argument) for op, argument in item.items())
        elif isinstance(item, dict):
            contained[key] = _split(item, at, comparisons)
        else:
            _no_operators(item, at)
            contained[key] = item
    return contained


def _is_operators(value: Any) -> bool:
    """The engine's rule: an object with a key starting with "$" is a field's operators."""
    return isinstance(value, dict) and any(key.startswith("$") for key in value)


def _name(path: tuple[str, ...]) -> str:
    return ".".join(("filter", *path))


def _no_operators(value: Any, path: tuple[str, ...]) -> None:
    """422 for operators inside an array: an array is matched by the elements it
    contains, and an element is no field to compare."""
    if isinstance(value, list):
        for item in value:
            _no_operators(item, path)
    elif isinstance(value, dict):
        if _is_operators(value):
            raise Invalid(
                f"{_name(path)}: operators compare a field of an object, not an array's elements."
            )
        for key, item in value.items():
            _no_operators(item, (*path, key))


def _comparison(path: tuple[str, ...], op: str, argument: Any) -> Comparison:
    """One operator, checked by the engine's rules (an unknown one, or an order operator
    without a number, is refused there) and by what SQL can compare."""
    name = _name(path)
    if not op.startswith("$"):
        raise Invalid(f"{name}: {op!r} is not an operator; a field's operators take no keys.")
    try:
        # With no value to compare, this only raises, for what the engine cannot apply.
        matches(None, {op: argument})
    except ValueError as exc:
        raise Invalid(f"{name}: {exc}") from None
    if not path:
        raise Invalid(f'filter: an operator compares a field, such as {{"field": {{"{op}": …}}}}.')
    if op in _ORDER:
        # An integer stays one: as a double, a bound above 2**53 would be rounded.
        bound = argument if type(argument) is int else float(argument)
        if not math.isfinite(bound):
            raise Invalid(f"{name}: {op} needs a finite number, got {argument!r}.")
        return Comparison(path, op, bound)
    if isinstance(argument, dict | list):
        raise Invalid(
            f"{name}: {op} compares with a string, a number, a boolean or null; give an "
            "object or an array as a value to contain instead."
        )
    return Comparison(path, op, argument)


def _postgres(document: ColumnElement[Any], comparison: Comparison) -> ColumnElement[bool]:
    """A comparison on PostgreSQL; NULL (no match) where the field is missing."""
    field = document[comparison.path]  # `#>`: any key, whatever characters it has
    if comparison.op == "$eq":
        return field == literal(comparison.argument, JSONB)  # type: ignore[no-any-return]
    if comparison.op == "$ne":
        return field != literal(comparison.argument, JSONB)  # type: ignore[no-any-return]
    text = document[comparison.path].astext
    kind = func.jsonb_typeof(field)
    number = case(
        (kind == "number", cast(field, Numeric)),
        (
            and_(
                kind == "string",
                func.length(text) <= _NUMBER_TEXT_MAX,
                text.regexp_match(_JSON_NUMBER),
            ),
            cast(text, Numeric),
        ),
    )
    # As numeric, exact: a bound as a double would round big integers.
    bound = literal(Decimal(repr(comparison.argument)), Numeric)
    return number.op(_ORDER[comparison.op], is_comparison=True)(bound)


class _SqliteFilter(SqliteContains):
    """The containment filter of SQLite (app/services/common.py), which also compares
    a field where the filter gives it operators."""

    def _contains(self, doc: str, path: str, value: Any) -> str:
        if _is_operators(value):
            return self._compare(
                f"json_type({doc}, {self._bind(path)})",
                lambda: f"json_extract({doc}, {self._bind(path)})",
                value,
            )
        return super()._contains(doc, path, value)  # type: ignore[no-any-return]

    def _element(self, each: str, value: Any) -> str:
        # A key a JSON path cannot name is found in `json_each`, whose row tells the type.
        if _is_operators(value):
            return self._compare(f"{each}.type", lambda: f"{each}.value", value)
        return super()._element(each, value)  # type: ignore[no-any-return]

    def _compare(self, kind: str, extracted: Callable[[], str], operators: dict[str, Any]) -> str:
        """True when the JSON type `kind` and SQL value `extracted` pass every operator;
        a missing field (a NULL type) passes none."""
        terms = []
        for op, argument in operators.items():
            if op == "$eq":
                terms.append(self._scalar(kind, extracted, argument))
            elif op == "$ne":
                equal = self._scalar(kind, extracted, argument)
                terms.append(f"{kind} IS NOT NULL AND NOT ({equal})")
            else:
                number = self._number(kind, extracted)
                terms.append(f"{number} {_ORDER[op]} {self._bind(_sqlite_number(argument))}")
        return " AND ".join(f"({term})" for term in terms)

    @staticmethod
    def _number(kind: str, extracted: Callable[[], str]) -> str:
        """The field as a number: a number, or a string that spells one; else NULL. Nested
        CASEs, as SQLite may evaluate both sides of an AND and json_type raises for text
        that is no JSON."""
        value = extracted()
        return (
            f"CASE WHEN {kind} IN ('integer', 'real') THEN {value} "
            f"WHEN {kind} = 'text' THEN "
            f"CASE WHEN length({value}) <= {_NUMBER_TEXT_MAX} AND json_valid({value}) THEN "
            f"CASE WHEN json_type({value}) IN ('integer', 'real') "
            f"THEN json_extract({value}, '$') END END END"
        )


def _sqlite_number(bound: int | float) -> int | float:
    """A bound as SQLite compares it exactly: an integer as one where it fits SQLite's
    64 bits (a larger one is a double there, as in its JSON)."""
    return bound if type(bound) is int and -(2**63) <= bound < 2**63 else float(bound)
