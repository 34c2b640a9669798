"""The store: documents that outlive a thread, shared by the runs of a graph."""

from engine.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespacePath,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from engine.store.memory import InMemoryStore

__all__ = [
    "BaseStore",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespacePath",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
]
