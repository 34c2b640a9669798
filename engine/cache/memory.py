"""A cache in this process's memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from engine.cache.base import BaseCache, FullKey, Namespace

__all__ = ["InMemoryCache"]


class InMemoryCache(BaseCache):
    """Entries by namespace and key, each with the monotonic time it expires at."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._entries: dict[Namespace, dict[str, tuple[bytes, float | None]]] = {}
        self._lock = threading.Lock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        now = time.monotonic()
        found: dict[FullKey, Any] = {}
        with self._lock:
            for ns, key in keys:
                entry = self._entries.get(ns, {}).get(key)
                if entry is None:
                    continue
                data, expires = entry
                if expires is not None and expires <= now:
                    del self._entries[ns][key]
                    continue
                found[(ns, key)] = self.serde.loads(data)
        return found

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        now = time.monotonic()
        with self._lock:
            for (ns, key), (value, ttl) in pairs.items():
                expires = None if ttl is None else now + ttl
                self._entries.setdefault(ns, {})[key] = (self.serde.dumps(value), expires)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._entries.clear()
            for ns in namespaces or ():
                self._entries.pop(ns, None)
