"""The store interface: JSON-like documents by namespace and key that outlive a thread.

It mirrors `langgraph.store.base` (names, operation tuples, item classes, namespace rules)
so that nodes and tools written against LangGraph's store run on ours unchanged.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Any, Literal, NamedTuple, Protocol, cast

from langchain_core.embeddings import Embeddings
from typing_extensions import TypedDict

__all__ = [
    "AEmbeddingsFunc",
    "BaseStore",
    "Embeddings",
    "EmbeddingsFunc",
    "EmbeddingsModel",
    "GetOp",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "NOT_PROVIDED",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "get_text_at_path",
    "tokenize_path",
    "validate_op_namespace",
]

# `Item` has a method named `dict`, which hides the builtin inside its class body.
Value = dict[str, Any]


class Item:
    """A stored document with where it lives and when it was written.

    Timestamps may be given as ISO strings, so an item read back from JSON (the HTTP API,
    a serialized state) is rebuilt with datetimes.
    """

    __slots__ = ("namespace", "key", "value", "created_at", "updated_at")

    def __init__(
        self,
        *,
        value: Value,
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime | str,
        updated_at: datetime | str,
    ) -> None:
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = _as_datetime(created_at)
        self.updated_at = _as_datetime(updated_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        return (
            self.namespace == other.namespace
            and self.key == other.key
            and self.value == other.value
            and self.created_at == other.created_at
            and self.updated_at == other.updated_at
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.dict().items())
        return f"{type(self).__name__}({fields})"

    def dict(self) -> Value:
        """The item as JSON-ready data: namespace as a list, timestamps as ISO strings."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


class SearchItem(Item):
    """An item found by a search; `score` is its similarity to the query, None unranked."""

    __slots__ = ("score",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Value,
        created_at: datetime | str,
        updated_at: datetime | str,
        score: float | None = None,
    ) -> None:
        super().__init__(
            value=value,
            key=key,
            namespace=namespace,
            created_at=created_at,
            updated_at=updated_at,
        )
        self.score = score

    def dict(self) -> Value:
        return {**super().dict(), "score": self.score}


def _as_datetime(value: datetime | str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


class GetOp(NamedTuple):
    """Read one item; its result is the Item or None."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


class SearchOp(NamedTuple):
    """Find items under `namespace_prefix`, filtered by value and ranked by `query` when the
    store has an index; its result is a list of SearchItem."""

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True


NamespacePath = tuple[str | Literal["*"], ...]
"""A namespace pattern for listing; a "*" label matches any one label."""

NamespaceMatchType = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    """Namespaces that start (prefix) or end (suffix) with `path`."""

    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """List the namespaces that hold items; its result is a sorted list of tuples."""

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """Create, replace or (with `value` None) delete an item; its result is None.

    `index` picks what to embed: None the store's configured fields, False nothing, or a
    list of paths for this item only.
    """

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]  # LangGraph's name
    ttl: float | None = None


Op = GetOp | SearchOp | PutOp | ListNamespacesOp
Result = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None


class InvalidNamespaceError(ValueError):
    """A namespace a store cannot hold: empty, or with a label that is not a plain word."""


class TTLConfig(TypedDict, total=False):
    """How a store that supports TTL expires items (minutes)."""

    refresh_on_read: bool
    omit_expired: bool
    default_ttl: float | None
    sweep_interval_minutes: int | None


class EmbeddingsModel(Protocol):
    """What a store needs of an embeddings model; LangChain's `Embeddings` fits."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


EmbeddingsFunc = Callable[[Sequence[str]], list[list[float]]]
AEmbeddingsFunc = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


class IndexConfig(TypedDict, total=False):
    """Semantic search: vectors of `dims` numbers made by `embed` from the text at each of
    `fields` (JSON paths into the value; default "$", the whole value)."""

    dims: int
    embed: EmbeddingsModel | EmbeddingsFunc | AEmbeddingsFunc | str
    fields: list[str] | None


class NotProvided(Enum):
    """Tells "ttl left out" (use the store's default) from an explicit None (no TTL),
    under LangGraph's names: a store of a project's own imports them for its `put`."""

    NOT_PROVIDED = "NOT_PROVIDED"

    def __bool__(self) -> bool:
        return False


NOT_PROVIDED = NotProvided.NOT_PROVIDED


class BaseStore(ABC):
    """A store of documents grouped by namespace, shared by the threads of a graph.

    Subclasses implement `batch` and `abatch`; every other method builds one operation
    and runs it through them, so a store does its work in one place.
    """

    supports_ttl: bool = False
    ttl_config: TTLConfig | None = None

    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` and return one result per op, in order."""

    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` for async callers."""

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at `namespace` and `key`, or None."""
        return cast(Item | None, self.batch([self._get_op(namespace, key, refresh_ttl)])[0])

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items under `namespace_prefix` whose values match `filter`, most similar to
        `query` first when the store has an index."""
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)
        return cast(list[SearchItem], self.batch([op])[0])

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """Create or replace the item at `namespace` and `key`."""
        self.batch([self._put_op(namespace, key, value, index, ttl)])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Remove the item at `namespace` and `key`; nothing happens when there is none."""
        self.batch([self._delete_op(namespace, key)])

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Namespaces holding items, sorted; `max_depth` cuts them to their first labels."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], self.batch([op])[0])

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """`get` for async callers."""
        op = self._get_op(namespace, key, refresh_ttl)
        return cast(Item | None, (await self.abatch([op]))[0])

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """`search` for async callers."""
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)
        return cast(list[SearchItem], (await self.abatch([op]))[0])

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """`put` for async callers."""
        await self.abatch([self._put_op(namespace, key, value, index, ttl)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """`delete` for async callers."""
        await self.abatch([self._delete_op(namespace, key)])

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """`list_namespaces` for async callers."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], (await self.abatch([op]))[0])

    def _refresh(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        return self.ttl_config.get("refresh_on_read", True) if self.ttl_config else True

    def _get_op(self, namespace: tuple[str, ...], key: str, refresh_ttl: bool | None) -> GetOp:
        _check_labels(namespace)
        return GetOp(namespace, str(key), self._refresh(refresh_ttl))

    def _search_op(
        self,
        namespace_prefix: tuple[str, ...],
        query: str | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
    ) -> SearchOp:
        _check_labels(namespace_prefix)
        return SearchOp(namespace_prefix, filter, limit, offset, query, self._refresh(refresh_ttl))

    def _put_op(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None,
        ttl: float | None | NotProvided,
    ) -> PutOp:
        _check_namespace(namespace)
        if ttl is NOT_PROVIDED:
            ttl = self.ttl_config.get("default_ttl") if self.ttl_config else None
        elif ttl is not None and not self.supports_ttl:
            raise NotImplementedError(
                f"TTL is not supported by {type(self).__name__}: its items never expire. "
                "Leave ttl out (or pass ttl=None), or use a store that supports TTL."
            )
        return PutOp(namespace, str(key), value, index, ttl)

    def _delete_op(self, namespace: tuple[str, ...], key: str) -> PutOp:
        _check_labels(namespace)
        return PutOp(namespace, str(key), None)


def _list_op(
    prefix: NamespacePath | None,
    suffix: NamespacePath | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> ListNamespacesOp:
    conditions: list[MatchCondition] = []
    for match_type, path in (("prefix", prefix), ("suffix", suffix)):
        if path:
            _check_labels(path)
            conditions.append(MatchCondition(cast(NamespaceMatchType, match_type), path))
    return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)


def _check_namespace(namespace: tuple[str, ...]) -> None:
    """Rules for a namespace that receives an item: not empty, and not the "langgraph"
    tree, which LangGraph keeps for its own use."""
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    _check_labels(namespace)
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph". Got: {namespace}'
        )


def _check_labels(namespace: Sequence[str]) -> None:
    """Labels are non-empty strings without "." (the separator in dotted names and HTTP
    paths) or NUL (which databases refuse in text)."""
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {namespace}. Namespace labels "
                f"must be strings, but got {type(label).__name__}."
            )
        if not label:
            raise InvalidNamespaceError(
                f"Namespace labels cannot be empty strings. Got {label!r} in {namespace}"
            )
        for char, name in ((".", "periods"), ("\x00", "NUL bytes")):
            if char in label:
                raise InvalidNamespaceError(
                    f"Invalid namespace label {label!r} found in {namespace}. "
                    f"Namespace labels cannot contain {name} ({char!r})."
                )


def validate_op_namespace(op: Op) -> None:
    """Raise InvalidNamespaceError when an op names a namespace with a bad label."""
    if isinstance(op, GetOp | PutOp):
        _check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _check_labels(condition.path)


def tokenize_path(path: str) -> list[str]:
    """Split a field path into steps: `a.b[0].{c,d}` gives `a`, `b`, `[0]`, `{c,d}`.

    A step is a key, `*` (every value), `[n]` or `[*]` (list items) or `{x,y}` (several
    keys). A leading `$` (the whole value) is kept; `get_text_at_path` skips it.
    """
    tokens: list[str] = []
    name = ""
    i = 0
    while i < len(path):
        char = path[i]
        if char in "[{":
            if name:
                tokens.append(name)
                name = ""
            end = _closing(path, i)
            token = path[i : end + 1]
            if char == "[" and not _is_index(token[1:-1]):
                raise ValueError(f"Invalid list index {token!r} in path {path!r}.")
            tokens.append(token)
            i = end + 1
            continue
        if char == ".":
            if name:
                tokens.append(name)
                name = ""
        else:
            name += char
        i += 1
    if name:
        tokens.append(name)
    return tokens


def _closing(path: str, start: int) -> int:
    """Where the bracket opened at `start` closes (brackets of its kind may nest)."""
    opening = path[start]
    closing = "]" if opening == "[" else "}"
    depth = 0
    for i in range(start, len(path)):
        if path[i] == opening:
            depth += 1
        elif path[i] == closing:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"Unclosed {opening!r} in path {path!r}.")


def _is_index(text: str) -> bool:
    if text == "*":
        return True
    try:
        int(text)
    except ValueError:
        return False
    return True


def get_text_at_path(obj: Any, path: str | list[str]) -> list[str]:
    """The texts to embed at `path` in `obj`: strings and numbers as text, lists and
    objects as JSON (sorted keys); missing fields and nulls give nothing."""
    tokens = tokenize_path(path) if isinstance(path, str) else list(path)
    if tokens[:1] == ["$"]:
        tokens = tokens[1:]
    if isinstance(obj, Mapping):
        obj = dict(obj)
    if not tokens:
        return [_to_json(obj)]
    return _texts(obj, tokens)


def _texts(obj: Any, tokens: list[str]) -> list[str]:
    if not tokens:
        if isinstance(obj, str | int | float):  # bool is an int
            return [str(obj)]
        if isinstance(obj, list | dict):
            return [_to_json(obj)]
        return []
    token, rest = tokens[0], tokens[1:]
    if token.startswith("["):
        if not isinstance(obj, list):
            return []
        if token == "[*]":
            return [text for element in obj for text in _texts(element, rest)]
        index = int(token[1:-1])
        return _texts(obj[index], rest) if -len(obj) <= index < len(obj) else []
    if token.startswith("{"):
        if not isinstance(obj, dict):
            return []
        fields = [field.strip() for field in token[1:-1].split(",")]
        return [text for field in fields for text in _texts(obj, tokenize_path(field) + rest)]
    if token == "*":
        children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else []
        return [text for child in children for text in _texts(child, rest)]
    if isinstance(obj, dict) and token in obj:
        return _texts(obj[token], rest)
    return []


def _to_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)
