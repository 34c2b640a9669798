"""Wire models of runs: what a client sends to start one and what it reads back."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.schemas.assistants import RunnableConfig
from app.schemas.common import RequestModel

StreamModeName = Literal[
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "debug",
    "tasks",
    "checkpoints",
    "events",
]
MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
RunStatus = Literal["pending", "running", "success", "error", "timeout", "interrupted"]
MAX_DELAY_S = 365 * 24 * 3600


class CheckpointRef(RequestModel):
    """A version of a thread to start from (what `state.checkpoint` gives)."""

    checkpoint_id: str | None = None
    checkpoint_ns: str = ""
    thread_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class Send(RequestModel):
    node: str
    input: Any = None


class RunCommand(RequestModel):
    """Answer an interrupt (`resume`), change state (`update`) or jump (`goto`)."""

    resume: Any = None
    update: dict[str, Any] | list[Any] | None = None
    goto: str | Send | list[str | Send] | None = None


class RunCreate(RequestModel):
    assistant_id: str = Field(description="An assistant id or a graph id.")
    input: dict[str, Any] | list[Any] | None = None
    command: RunCommand | None = None
    metadata: dict[str, Any] | None = None
    config: RunnableConfig | None = None
    context: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    stream_mode: StreamModeName | list[StreamModeName] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    feedback_keys: list[str] | None = None
    multitask_strategy: MultitaskStrategy = "enqueue"
    if_not_exists: Literal["reject", "create"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: float | None = Field(
        default=None, ge=0, le=MAX_DELAY_S, description="Start no sooner (at most a year)."
    )
    webhook: str | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    langsmith_tracer: dict[str, Any] | None = None
    strict_resume: bool | None = None


class Run(BaseModel):
    run_id: str
    thread_id: str
    assistant_id: str
    created_at: datetime
    updated_at: datetime
    status: RunStatus
    metadata: dict[str, Any]
    multitask_strategy: MultitaskStrategy
    kwargs: dict[str, Any]


class CancelMany(RequestModel):
    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None
