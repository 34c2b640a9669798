"""What is worked out once per function or class and kept only while that object lives.

A compile reads each node function's signature and each schema's annotations; keeping
the answers makes compiling again cheap. A plain `lru_cache` keeps its keys alive too:
a graph factory's closures, and all they hold (once, a finished run through a task it
kept), stayed in memory until a thousand later keys pushed them out.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

V = TypeVar("V")


def weakly_cached(work: Callable[[Any], V]) -> Callable[[Any], V]:
    """`work(key)` worked out once per key while the key lives. A key that cannot be
    hashed or weakly referred to is worked out each time; a failure is not kept."""
    kept: weakref.WeakKeyDictionary[Any, V] = weakref.WeakKeyDictionary()

    @functools.wraps(work)
    def cached(key: Any) -> V:
        try:
            return kept[key]
        except KeyError:
            pass
        except TypeError:
            return work(key)
        value = kept[key] = work(key)
        return value

    return cached
