"""The rules every store applies alike: which namespaces a condition matches, which values
a filter keeps, and what a page and a put may hold."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from engine.store.base import ListNamespacesOp, MatchCondition, PutOp, tokenize_path

Namespace = tuple[str, ...]


def namespace_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    path = condition.path
    if condition.match_type == "prefix":
        labels = namespace[: len(path)]
    elif condition.match_type == "suffix":
        labels = namespace[len(namespace) - len(path) :] if len(path) <= len(namespace) else ()
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type!r}")
    return len(labels) == len(path) and all(
        want in ("*", label) for want, label in zip(path, labels, strict=True)
    )


def matches(value: Any, expected: Any) -> bool:
    """Whether a value passes a filter: a dict of fields, each a value to equal, a dict of
    operators ({"$gt": 3}), or a nested filter for a nested object or list."""
    if isinstance(expected, dict):
        if any(key.startswith("$") for key in expected):
            return all(_apply(value, op, argument) for op, argument in expected.items())
        return isinstance(value, dict) and all(
            matches(value.get(key), want) for key, want in expected.items()
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(expected)
            and all(matches(got, want) for got, want in zip(value, expected, strict=True))
        )
    return bool(value == expected)


_ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _apply(value: Any, op: str, argument: Any) -> bool:
    """One filter operator. Order operators compare numbers (or numeric strings, as
    LangGraph's float conversion does); a field that holds none does not match."""
    if op == "$eq":
        return bool(value == argument)
    if op == "$ne":
        return bool(value != argument)
    if op not in _ORDER:
        raise ValueError(
            f"Unsupported operator: {op}. Filters take $eq, $ne, $gt, $gte, $lt and $lte."
        )
    bound = _number(argument)
    if bound is None:
        raise ValueError(f"Filter operator {op} needs a number, got {argument!r}.")
    number = _number(value)
    return number is not None and _ORDER[op](number, bound)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def check_page(limit: int, offset: int) -> None:
    if limit < 0 or offset < 0:
        raise ValueError(f"limit and offset cannot be negative, got {limit} and {offset}.")


def check_listing(op: ListNamespacesOp) -> None:
    """A namespace listing's depth (at least one label) and page."""
    if op.max_depth is not None and op.max_depth < 1:
        raise ValueError(f"max_depth must be at least 1, got {op.max_depth}.")
    check_page(op.limit, op.offset)


def check_put(op: PutOp) -> None:
    """A put's value is a dict (or None, a delete) and its index paths can be read."""
    if op.value is not None and not isinstance(op.value, Mapping):
        raise TypeError(f"A store value must be a dict, got {type(op.value).__name__}.")
    if op.index not in (None, False) and (
        not isinstance(op.index, list | tuple)
        or not all(isinstance(path, str) for path in op.index)
    ):
        raise TypeError(f"index must be False, None or a list of paths, got {op.index!r}.")
    for path in op.index or ():
        tokenize_path(path)
