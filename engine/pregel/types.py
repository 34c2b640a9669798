"""LangGraph's old home of its run types (`from langgraph.pregel.types import ...`), kept
so such programs port; importing it warns, as LangGraph's does: use `engine.types`."""

from warnings import warn

from engine.types import (
    All,
    CachePolicy,
    PregelTask,
    RetryPolicy,
    StateSnapshot,
    StateUpdate,
    StreamMode,
    StreamWriter,
    default_retry_on,
)
from engine.warnings import LangGraphDeprecatedSinceV10

__all__ = [
    "All",
    "CachePolicy",
    "PregelTask",
    "RetryPolicy",
    "StateSnapshot",
    "StateUpdate",
    "StreamMode",
    "StreamWriter",
    "default_retry_on",
]

warn(
    "Importing from engine.pregel.types is deprecated. "
    "Please use 'from engine.types import ...' instead.",
    LangGraphDeprecatedSinceV10,
    stacklevel=2,
)
