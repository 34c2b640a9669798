"""Wire models of crons: runs on a schedule, each on the same thread or on a new one, as
clients create, search, change and read them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from app.db.models import CronRow
from app.limits import MAX_NAMES, Filter, Key, Metadata, Names, Offset, PageSize
from app.schedules import check_schedule, check_timezone, in_utc
from app.schemas.assistants import Context, RunnableConfig
from app.schemas.common import RequestModel, SortOrder
from app.schemas.runs import MultitaskStrategy, StreamModeName

Schedule = Annotated[
    Key,
    AfterValidator(check_schedule),
    Field(
        description="Five cron fields (minute hour day-of-month month day-of-week), or "
        "@hourly, @daily, @weekly, @monthly, @yearly."
    ),
]
TimeZone = Annotated[
    Key,
    AfterValidator(check_timezone),
    Field(description="The IANA time zone the schedule is read in; UTC when unset."),
]
EndTime = Annotated[
    datetime,
    AfterValidator(in_utc),
    Field(description="No run starts after this time (UTC when it names no zone)."),
]
OnRunCompleted = Literal["delete", "keep"]
CronSortBy = Literal[
    "cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time"
]
CronField = Literal[
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "enabled",
]
# The fields of the runs a cron starts, kept in its `payload` (metadata is the cron's own).
RUN_FIELDS = frozenset(
    {
        "assistant_id",
        "input",
        "config",
        "context",
        "checkpoint_during",
        "interrupt_before",
        "interrupt_after",
        "webhook",
        "multitask_strategy",
        "stream_mode",
        "stream_subgraphs",
        "stream_resumable",
        "durability",
    }
)


class CronRunFields(RequestModel):
    """What each run of a cron is started with, as in `POST /threads/{id}/runs`."""

    input: Any = None
    metadata: Metadata | None = Field(
        default=None, description="The cron's metadata, given to each of its runs too."
    )
    config: RunnableConfig | None = None
    context: Context | None = None
    webhook: str | None = None
    interrupt_before: Literal["*"] | Names | None = None
    interrupt_after: Literal["*"] | Names | None = None
    stream_mode: StreamModeName | list[StreamModeName] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None


class ThreadCronCreate(CronRunFields):
    """A cron whose runs take turns on one thread (`POST /threads/{id}/runs/crons`)."""

    assistant_id: Key = Field(description="An assistant id or a graph id.")
    schedule: Schedule
    timezone: TimeZone | None = None
    end_time: EndTime | None = None
    enabled: bool = True
    checkpoint_during: bool | None = None
    multitask_strategy: MultitaskStrategy | None = Field(
        default=None, description="When a run of it is due while the thread is busy."
    )
    # langgraph-sdk's JavaScript client offers it for a thread's cron too.
    on_run_completed: Literal["keep"] | None = Field(
        default=None,
        description="Its runs keep their thread, the cron's: only 'keep' is taken.",
    )

    def payload(self) -> dict[str, Any]:
        """The run fields as the client sent them."""
        return self.model_dump(include=set(RUN_FIELDS), exclude_unset=True, mode="json")


class CronCreate(ThreadCronCreate):
    """A cron whose every run gets a new thread (`POST /runs/crons`)."""

    on_run_completed: OnRunCompleted = Field(
        default="delete", description="Delete each run's thread when the run ends, or keep it."
    )


class CronPatch(CronRunFields):
    """Fields to change: `metadata` is merged into the old; a run field set to null goes
    back to its default. A new `schedule`, `timezone` or `end_time`, or enabling a
    disabled cron, counts the next run from now."""

    schedule: Schedule | None = None
    timezone: TimeZone | None = None
    end_time: EndTime | None = Field(default=None, description="null: the cron never ends.")
    enabled: bool | None = None
    on_run_completed: OnRunCompleted | None = Field(
        default=None, description="Only for a cron whose runs get a new thread."
    )


class CronFilter(RequestModel):
    assistant_id: Key | None = Field(default=None, description="An assistant id or a graph id.")
    thread_id: Key | None = None
    enabled: bool | None = None
    metadata: Filter | None = Field(
        default=None, description="Crons whose metadata contains this object."
    )


class CronSearch(CronFilter):
    limit: PageSize = 10
    offset: Offset = 0
    sort_by: CronSortBy = "created_at"
    sort_order: SortOrder = "desc"
    select: list[CronField] | None = Field(default=None, max_length=MAX_NAMES)


class Cron(BaseModel):
    cron_id: str
    assistant_id: str
    thread_id: str | None = Field(description="null: each run gets a new thread.")
    on_run_completed: OnRunCompleted | None = Field(
        description="What becomes of each run's new thread; null for a cron on a thread."
    )
    end_time: datetime | None
    schedule: str
    timezone: str | None = Field(description="null: the schedule is read in UTC.")
    created_at: datetime
    updated_at: datetime
    payload: dict[str, Any] = Field(description="The fields each run is started with.")
    user_id: str = Field(description="The owner: its runs are theirs.")
    next_run_date: datetime | None = Field(description="null once the cron has ended.")
    metadata: dict[str, Any]
    enabled: bool

    @classmethod
    def of(cls, row: CronRow) -> Cron:
        return cls(
            cron_id=row.cron_id,
            assistant_id=row.assistant_id,
            thread_id=row.thread_id,
            on_run_completed=row.on_run_completed,  # type: ignore[arg-type]
            end_time=row.end_time,
            schedule=row.schedule,
            timezone=row.timezone,
            created_at=row.created_at,
            updated_at=row.updated_at,
            payload=row.payload or {},
            user_id=row.owner,
            next_run_date=row.next_run_at,
            metadata=row.metadata_ or {},
            enabled=row.enabled,
        )
