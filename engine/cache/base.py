"""The cache protocol: values by (namespace, key), each with an optional time to live."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from engine.checkpoint.serde.jsonplus import JsonSerializer, default_serializer

__all__ = ["BaseCache", "FullKey", "Namespace"]

Namespace = tuple[str, ...]
FullKey = tuple[Namespace, str]


class BaseCache(ABC):
    """Where cached node results live; values are stored as serialized bytes, so a hit
    hands out a fresh copy and never an object another run holds."""

    def __init__(self, *, serde: JsonSerializer | None = None) -> None:
        self.serde = serde or default_serializer

    @abstractmethod
    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The cached values of those keys that are present and not expired."""

    @abstractmethod
    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        """Store each value with its time to live in seconds (None: no expiry)."""

    @abstractmethod
    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drop the given namespaces, or everything."""

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        return self.get(keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        self.set(pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        self.clear(namespaces)
