"""What a running node can look up without being passed it: config, store, writer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.pregel.context import get_config, get_stream_writer

if TYPE_CHECKING:
    from engine.store.base import BaseStore

__all__ = ["get_config", "get_store", "get_stream_writer"]


def get_store() -> BaseStore | None:
    """The store the graph was compiled with (or the server's), None when it has none."""
    from engine.runtime import get_runtime

    return get_runtime().store
