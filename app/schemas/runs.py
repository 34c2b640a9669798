"""Wire models of runs: what a client sends to start one and what it reads back."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

from app.limits import MAX_DELAY_S, MAX_NAMES, Key, Keys, Metadata, Names
from app.schemas.assistants import Context, RunnableConfig, refuse_engine_keys
from app.schemas.common import RequestModel, refusal

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
# What a thread's stream (`GET /threads/{id}/stream`) carries: every event of its runs
# (`run_modes`), or only each run's start and end (`lifecycle`); `state_update` (state
# changes outside runs) is not streamed here.
ThreadStreamMode = Literal["run_modes", "lifecycle", "state_update"]


def _json_arrays(values: Any) -> Any:
    """Query values each a name or a JSON array of names: LangGraph's JS client sends a
    list as one JSON array (`stream_mode=["values","updates"]`), the Python one as
    repeated keys."""
    names: list[Any] = []
    for value in values if isinstance(values, list) else [values]:
        listed = None
        if isinstance(value, str) and value.startswith("["):
            try:
                listed = json.loads(value)
            except (ValueError, RecursionError):
                listed = None  # then refused as a name: the answer shows it
        names.extend(listed if isinstance(listed, list) else [value])
    return names


# A stream's modes in a query (the JS client's array form included).
QueryStreamModes = Annotated[list[StreamModeName] | None, BeforeValidator(_json_arrays)]
QueryThreadStreamModes = Annotated[
    list[ThreadStreamMode | StreamModeName] | None, BeforeValidator(_json_arrays)
]
MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
RunStatus = Literal["pending", "running", "success", "error", "timeout", "interrupted"]


class CheckpointRef(RequestModel):
    """A version of a thread to start from (what `state.checkpoint` gives)."""

    checkpoint_id: Key | None = None
    checkpoint_ns: str = ""
    thread_id: Key | None = None
    checkpoint_map: dict[str, Any] | None = None


class Send(RequestModel):
    node: Key
    input: Any = None


class RunCommand(RequestModel):
    """Answer an interrupt (`resume`), change state (`update`) or jump (`goto`)."""

    resume: Any = None
    update: dict[str, Any] | list[Any] | None = None
    goto: Key | Send | Annotated[list[Key | Send], Field(max_length=MAX_NAMES)] | None = None


class RunConfig(RunnableConfig):
    """A run's config: as an assistant's, but for the engine's keys that LangGraph's
    `RemoteGraph`, a node of a local LangGraph graph, forwards from its caller's config
    (`__pregel_resuming` when the local graph resumes): dropped, as the engine sets its
    own; refused, the local graph could not be resumed."""

    @field_validator("configurable")
    @classmethod
    def _no_engine_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        return refuse_engine_keys({k: v for k, v in value.items() if k not in FORWARDED})


# LangGraph's keys of a node's config that hold plain values, which `RemoteGraph` sends on.
FORWARDED = frozenset({"__pregel_resuming", "__pregel_durability", "__pregel_resume_map"})


class RunCreate(RequestModel):
    assistant_id: Key = Field(description="An assistant id or a graph id.")
    # Any JSON: an `@entrypoint` may take a string or a number, as on LangGraph's server.
    input: Any = None
    command: RunCommand | None = None
    metadata: Metadata | None = None
    config: RunConfig | None = None
    context: Context | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: Key | None = None
    checkpoint_during: bool | None = Field(
        default=None,
        description="The older name of `durability`: true is `async`, false `exit` (only "
        "when `durability` is unset).",
    )
    interrupt_before: Literal["*"] | Names | None = None
    interrupt_after: Literal["*"] | Names | None = None
    stream_mode: StreamModeName | list[StreamModeName] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    feedback_keys: Names | None = None
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
    strict_resume: bool | None = Field(
        default=None,
        description="A resume that answers no waiting interrupt is always refused here (409).",
    )

    @model_validator(mode="after")
    def _durability_of_checkpoint_during(self) -> RunCreate:
        if self.durability is None and self.checkpoint_during is not None:
            self.durability = "async" if self.checkpoint_during else "exit"
        return self

    @model_validator(mode="after")
    def _no_input_beside_a_command(self) -> RunCreate:
        """An empty object beside a command is what chat clients send to answer an
        interrupt (`submit({}, {command})`): no input. Anything in it would be dropped,
        as LangGraph's server drops it, so it is refused."""
        if self.command is not None and self.input == {}:
            self.input = None
        if self.command is not None and self.input is not None:
            raise refusal(
                "give `input` or `command`, not both: a command's run takes no input "
                "(an empty `{}` is taken)"
            )
        return self


class BatchRunCreate(RunCreate):
    """A run of `POST /runs/batch`: on its thread if it names one (langgraph-sdk's
    `RunCreate` declares `thread_id`), else stateless."""

    thread_id: Key | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_camel_case(cls, data: Any) -> Any:
        """langgraph-sdk's JavaScript client sends each payload of `createBatch` as it was
        given, its keys in camelCase (`assistantId`, `streamMode`), beside the
        `assistant_id` it adds: each is read as its field, and one given both ways must
        say the same."""
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        read = dict(data)
        for key, value in data.items():
            name = _CAPITAL.sub(lambda capital: "_" + capital[0].lower(), key)
            if name == key or name not in fields:
                continue
            if name in read and read[name] != value:
                raise ValueError(f"{key} and {name} say different things")
            read[name] = read.pop(key)
        return read


_CAPITAL = re.compile("[A-Z]")


RunField = Literal[
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "multitask_strategy",
    "kwargs",
]


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
    thread_id: Key | None = None
    run_ids: Keys | None = None
    status: Literal["pending", "running", "all"] | None = None
