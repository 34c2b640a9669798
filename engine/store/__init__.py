"""The store: documents that outlive a thread, shared by the runs of a graph.

As in LangGraph, its names live in `engine.store.base` and `engine.store.memory`; only the
two a program most often needs are repeated here.
"""

from engine.store.base import BaseStore
from engine.store.memory import InMemoryStore

__all__ = ["BaseStore", "InMemoryStore"]
