"""Every name the engine reserves, in one place: a graph's entry and exit, the channels
and writes it keeps for itself, the keys it puts into a run's config, and the tags that
change what streams. Users see the first and the last; the rest are the engine's own."""

from typing import Any

__all__ = ["END", "PREVIOUS", "RETURN", "START", "TAG_HIDDEN", "TAG_NOSTREAM"]

START = "__start__"
"""The node a graph's input comes from: an edge from it says where a run begins."""
END = "__end__"
"""The node a run ends at."""

TAG_NOSTREAM = "nostream"
"""A chat model with this tag streams no tokens in `stream_mode="messages"`."""
TAG_HIDDEN = "langsmith:hidden"
"""A Runnable with this tag is left out of streams and traces."""

# Writes that describe a task's outcome rather than state. A task has at most one of each,
# so saving one again replaces the old one (a resume answers anew).
ERROR = "__error__"
INTERRUPT = "__interrupt__"
RESUME = "__resume__"
SCHEDULED = "__scheduled__"
ERROR_SOURCE = "__error_source_node__"
"""Saved with a failed task's error when its node's error handler takes the failure: a
resumed step runs the handler rather than the node again."""
CALLED_BY = "__called_by__"
"""Saved with the outcome of a `@task` call that stopped at an interrupt: the id of the
task that made the call. The call keeps its own answers (a resume by interrupt id finds
the call that asked), so a call whose result is saved is never handed another's."""
NO_WRITES = "__no_writes__"
"""Saved for a task that finished without writing anything, so a retry knows it finished."""

TASKS = "__pregel_tasks"
"""The channel of `Send` packets: each is one task of the next step."""
PREVIOUS = "__previous__"
"""The channel where an entrypoint keeps what it saved for its next call (`previous`)."""
RETURN = "__return__"
"""The write that saves a `@task` call's result, so a resumed entrypoint does not redo it."""

# How a task was scheduled: by a channel it reads (pull) or by a packet (push).
PULL = "__pregel_pull"
PUSH = "__pregel_push"

# `update_state(as_node=...)` names that are not nodes: the values as a run's input, and a
# sibling of the checkpoint with its values.
INPUT = "__input__"
COPY = "__copy__"

CONFIG_KEY_RUNTIME = "__pregel_runtime"
"""Where a node's config carries the run's `Runtime` (context, store, stream writer)."""
CONFIG_KEY_NODE_FINISHED = "__pregel_node_finished"
"""Where a run's config may carry a function told the name of each node that finishes
(every level; not a node that fails or is interrupted, nor a hidden one)."""
CONFIG_KEY_QUIET_CANCEL = "__pregel_quiet_cancel"
"""Where a run's config may say (true) that a cancel of the call itself saves nothing for
the tasks it cuts off: its host records the cancel its own way (a rollback undoes the
run, a worker that lost the run must write nothing more for it)."""
CONFIG_KEY_NODE_ERROR = "__pregel_node_error"
"""Where an error handler's config carries the `NodeError` it handles."""
CONFIG_KEY_READ_STATE = "__pregel_read_state"
"""Where a node's config carries a function that reads the state as an edge would give it:
how a node run by `Send("tools", [tool_call, ...])` finds the graph's state."""

NULL_TASK = "00000000-0000-0000-0000-000000000000"
"""The task id of writes that come from no task: a run's input, `update_state`."""
CACHE_NS = "__node__"
"""The first part of a node cache key's namespace."""
TASK_CACHE_NS = "__task__"
"""The first part of a `@task` cache key's namespace."""


def __getattr__(name: str) -> Any:
    """`Send` and `Interrupt` by their old LangGraph home, deprecated: engine.types."""
    if name in ("Send", "Interrupt"):
        import warnings

        from engine import types
        from engine.warnings import LangGraphDeprecatedSinceV10

        warnings.warn(
            f"Importing {name} from engine.constants is deprecated. Please use "
            f"'from engine.types import {name}' instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return getattr(types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
