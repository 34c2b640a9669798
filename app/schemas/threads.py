"""Wire models of threads: a conversation's row (metadata, status, the head's values and
open interrupts) as clients create, search, change, copy and prune them."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, StrictFloat, field_validator, model_validator

from app.db.models import ThreadRow, ThreadTTLRow
from app.limits import MAX_NAMES, MAX_TTL_MINUTES, Filter, Key, Keys, Metadata, Offset, PageSize
from app.schemas.common import Interrupt, OnConflict, RequestModel, SortOrder, refusal
from app.schemas.runs import RunCommand

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
ThreadSortBy = Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"]
ThreadField = Literal[
    "thread_id", "created_at", "updated_at", "metadata", "status", "values", "interrupts"
]


_PATH = re.compile(r"[^.\[\]]+(\[-?\d+\])*(\.[^.\[\]]+(\[-?\d+\])*)*")
_STEP = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


_ALIAS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a path may start from, as on LangGraph's server (a thread has no `config` here:
# a path into it finds nothing).
_ROOTS = ("values", "metadata", "interrupts", "config")


def check_paths(paths: dict[str, str] | None) -> dict[str, str] | None:
    for alias, path in (paths or {}).items():
        if not _ALIAS.fullmatch(alias) or alias in get_args(ThreadField):
            raise refusal(
                f"{alias!r} is not a name for an extracted value: letters, digits and "
                "underscores, not a thread field's name"
            )
        if not _PATH.fullmatch(path):
            raise refusal(f"{alias}: {path!r} is not a path such as 'values.messages[-1]'")
        if _STEP.match(path)[1] not in _ROOTS:  # type: ignore[index]
            raise refusal(f"{alias}: {path!r} does not start with one of {', '.join(_ROOTS)}")
    return paths


def follow(data: Any, path: str) -> Any:
    """The value at `path` (keys and [index]es, negative from the end); None if absent."""
    for key, index in _STEP.findall(path):
        if key and isinstance(data, dict):
            data = data.get(key)
        elif index and isinstance(data, list) and -len(data) <= int(index) < len(data):
            data = data[int(index)]
        else:
            return None
    return data


TTLStrategy = Literal["delete", "keep_latest"]


class ThreadTTL(RequestModel):
    """A thread's time to live, counted from its last change (its creation, a change of
    it, the end of a run on it, a change of its state)."""

    ttl: StrictFloat = Field(
        gt=0, le=MAX_TTL_MINUTES, allow_inf_nan=False, description="Minutes, more than 0."
    )
    strategy: TTLStrategy = Field(
        default="delete",
        description="`delete` removes the thread; `keep_latest` keeps it and its latest "
        "turn (as `POST /threads/prune` does), and counts again.",
    )

    @model_validator(mode="before")
    @classmethod
    def _minutes_alone(cls, value: Any) -> Any:
        """A bare number is the minutes, `delete` after them, as the SDKs send it."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return {"ttl": value}
        return value


class ThreadTTLInfo(BaseModel):
    strategy: TTLStrategy
    ttl_minutes: float
    expires_at: datetime = Field(
        description="When the sweep looks at the thread next: it goes then unless it "
        "changed since, in which case it goes `ttl_minutes` after that change."
    )

    @classmethod
    def of(cls, row: ThreadTTLRow) -> ThreadTTLInfo:
        return cls(strategy=row.strategy, ttl_minutes=row.minutes, expires_at=row.expires_at)  # type: ignore[arg-type]


class SuperstepUpdate(RequestModel):
    """One write of a superstep: `values` (or a `command`'s update and goto) as if node
    `as_node` wrote them."""

    values: dict[str, Any] | list[Any] | None = None
    command: RunCommand | None = None
    as_node: Key | None = None

    @model_validator(mode="after")
    def _values_or_command(self) -> SuperstepUpdate:
        if self.values is not None and self.command is not None:
            raise refusal("an update gives `values` or a `command`, not both")
        return self


class Superstep(RequestModel):
    updates: list[SuperstepUpdate] = Field(
        min_length=1, max_length=MAX_NAMES, description="Written together, as one step's."
    )


class ThreadCreate(RequestModel):
    thread_id: Key | None = Field(default=None, description="A UUID; one is made if unset.")
    metadata: Metadata | None = None
    if_exists: OnConflict = "raise"
    supersteps: list[Superstep] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAMES,
        description="State the new thread starts with: each superstep a version written "
        "by its updates, in the graph metadata `graph_id` names (as LangGraph's "
        "`bulk_update_state`). A thread that exists already is left as it is.",
    )
    ttl: ThreadTTL | None = Field(default=None, description="None: the thread stays.")


class ThreadPatch(RequestModel):
    metadata: Metadata = Field(
        default_factory=dict, description="Merged into the thread's metadata; none: unchanged."
    )
    ttl: ThreadTTL | None = Field(
        default=None, description="A new time to live, counted from now; None: unchanged."
    )


class ThreadFilter(RequestModel):
    metadata: Filter | None = Field(
        default=None, description="Threads whose metadata contains this object."
    )
    values: Filter | None = Field(
        default=None, description="Threads whose current values contain this object."
    )
    status: ThreadStatus | None = None
    ids: Keys | None = Field(default=None, description="Only these threads.")


class ThreadSearch(ThreadFilter):
    limit: PageSize = 10
    offset: Offset = 0
    sort_by: ThreadSortBy = Field(
        default="updated_at",
        description="`updated_at` (the default, as LangGraph's server sorts: the thread "
        "changed last first) is refreshed by the end of every run and every change of the "
        "thread; `state_updated_at` sorts by it too.",
    )
    sort_order: SortOrder = "desc"
    select: list[ThreadField] | None = Field(default=None, max_length=MAX_NAMES)
    extract: dict[Key, Key] | None = Field(
        default=None,
        max_length=10,
        description="Alias (an identifier, not a thread field's name) -> path into the "
        "thread's `values`, `metadata` or `interrupts`, such as `values.messages[-1]`; the "
        "values found come back in each thread's `extracted`.",
    )

    _paths = field_validator("extract")(check_paths)


class Thread(BaseModel):
    thread_id: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]
    status: ThreadStatus
    values: Any = Field(
        description="The head's values: an object, or any JSON value for a graph whose "
        "state is no mapping (an entrypoint returning text); null before any."
    )
    interrupts: dict[str, list[Interrupt]] = Field(
        description="Open interrupts of the head, by task id."
    )
    error: dict[str, Any] | None = Field(
        default=None,
        description="While the status is `error`: the error its failed run ended with "
        "(`error`, its type; `message`).",
    )
    extracted: dict[str, Any] | None = Field(
        default=None, description="Present only when the search asked to `extract`."
    )
    ttl: ThreadTTLInfo | None = Field(
        default=None, description="With `include=ttl`, its time to live (null: it stays)."
    )

    @classmethod
    def of(cls, row: ThreadRow, values: Any, error: dict[str, Any] | None = None) -> Thread:
        """The thread of `row`, with its values (which the row may only refer to)."""
        return cls(
            thread_id=row.thread_id,
            created_at=row.created_at,
            updated_at=row.updated_at,
            metadata=row.metadata_ or {},
            status=row.status,  # type: ignore[arg-type]
            values=values,
            interrupts=row.interrupts or {},
            error=error,
        )

    def with_extracted(self, paths: dict[str, str]) -> Thread:
        data = self.model_dump(mode="json")
        return self.model_copy(update={"extracted": {k: follow(data, p) for k, p in paths.items()}})


class ThreadCopy(RequestModel):
    """`POST /threads/{id}/copy` takes no options: a body, if any, is `{}`, so that a
    field meant for something else is refused rather than ignored."""


class ThreadPrune(RequestModel):
    thread_ids: Keys
    strategy: Literal["delete", "keep_latest"] = Field(
        default="delete",
        description="`delete` removes the threads; `keep_latest` keeps each thread and its "
        "latest turn, and deletes older checkpoints (branch points and open interrupts stay).",
    )


class Pruned(BaseModel):
    pruned_count: int = Field(description="How many of the given threads were pruned.")
