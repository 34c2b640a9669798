"""Tables of the server: assistants and their versions, threads and their time to live,
runs, their stream events, the store, the reminders the agent sets, webhook deliveries,
crons, users and their API keys.

Checkpoint tables belong to the engine's SQL saver (`checkpoint_metadata`); each set has
an Alembic history of its own (`app.db.migrations`). JSON columns hold client JSON only,
never type-tagged objects.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    Uuid,
    false,
    inspect,
    literal_column,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeEngine

from app.db.packed import PackedJSON

app_metadata = MetaData()

# A run's status as an SQL constant, not a parameter, in the conditions that the partial
# indexes on active runs serve: SQLite uses a partial index only for a query that names
# its condition's constants, and PostgreSQL's generic plans cannot look into a parameter.
PENDING = literal_column("'pending'")
RUNNING = literal_column("'running'")
# The conditions of the runs table's partial indexes, the same on both dialects.
_RUNNING_ONLY = text("status = 'running'")
_PENDING_ONLY = text("status = 'pending'")
_ACTIVE_ONLY = text("status IN ('pending', 'running')")


class UTCDateTime(TypeDecorator[datetime]):
    """A time in UTC. SQLite stores times without their zone; they come back aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class UUIDText(TypeDecorator[str]):
    """A UUID, as text in Python (lowercase, with dashes: what `parse_uuid` gives).
    PostgreSQL keeps it as its own `uuid`, 16 bytes against 37 as text, in a row and in
    every index entry: a chat turn writes some twenty of them. SQLite keeps the text."""

    impl = String(36)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(Uuid(as_uuid=False))
        return dialect.type_descriptor(String(36))


class Base(DeclarativeBase):
    metadata = app_metadata


RowT = TypeVar("RowT", bound=Base)


def columns_of(row: Base) -> dict[str, Any]:
    """The values set on a new object, by column name, for a Core INSERT: hot paths
    insert without a session's unit of work (unset columns take their defaults)."""
    state = inspect(row)
    columns = state.mapper.column_attrs
    return {
        columns[key].columns[0].name: value for key, value in state.dict.items() if key in columns
    }


def from_columns(cls: type[RowT], row: Any) -> RowT:
    """An object of `cls` from a row of its columns (`columns_of` reversed; other
    columns of the row aside): what a Core statement returned, as the ORM would have
    loaded it."""
    keys = _attribute_keys(cls)
    fields = zip(row._fields, row, strict=True)
    return cls(**{keys[name]: value for name, value in fields if name in keys})


@functools.cache
def _attribute_keys(cls: type[Base]) -> dict[str, str]:
    return {attr.columns[0].name: attr.key for attr in inspect(cls).column_attrs}


class AssistantRow(Base):
    __tablename__ = "assistants"

    assistant_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    graph_id: Mapped[str] = mapped_column(String(200), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    context: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    version: Mapped[int] = mapped_column(Integer, default=1)
    # The user who created it; None for a graph's system assistant, which all users see.
    owner: Mapped[str | None] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AssistantVersionRow(Base):
    """What an assistant was at each of its versions: the first at its creation, one more
    at each change. The assistant's row is the version it is at (`version`), which may
    be an earlier one that `POST /assistants/{id}/latest` went back to."""

    __tablename__ = "assistant_versions"

    assistant_id: Mapped[str] = mapped_column(
        ForeignKey("assistants.assistant_id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    graph_id: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    context: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ThreadRow(Base):
    __tablename__ = "threads"

    thread_id: Mapped[str] = mapped_column(UUIDText(), primary_key=True)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    # Not indexed, and a run's admission changes no indexed column (it sets the status
    # and merges the metadata, not `updated_at`): PostgreSQL then updates the row in its
    # page (a HOT update) without an entry in every index, which a chat turn paid twice.
    status: Mapped[str] = mapped_column(String(16), default="idle")
    # The head's values as of the last run (or state change): the checkpoint whose saved
    # values they are, or, when no checkpoint's are (a step stopped with some tasks done),
    # the values themselves. Never a copy of what a checkpoint holds: a long chat's row
    # stays small, and a turn does not rewrite the conversation.
    checkpoint_id: Mapped[str | None] = mapped_column(UUIDText())
    values: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The head's open interrupts, by task id.
    interrupts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class ThreadTTLRow(Base):
    """A thread's time to live (`ttl` on create or PATCH): `minutes` after its last change
    (`threads.updated_at`: created, changed, a run ended) the thread is deleted, or pruned
    to its latest turn. `expires_at` is when the sweep looks next; the sweep then reads the
    thread's last change and either applies the strategy or looks again later, so a run
    never writes here."""

    __tablename__ = "thread_ttls"

    thread_id: Mapped[str] = mapped_column(
        UUIDText(), ForeignKey("threads.thread_id", ondelete="CASCADE"), primary_key=True
    )
    strategy: Mapped[str] = mapped_column(String(16))
    minutes: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class RunRow(Base):
    __tablename__ = "runs"
    __table_args__ = (
        # The database itself refuses a second running run on one thread.
        Index(
            "one_running_run_per_thread",
            "thread_id",
            unique=True,
            sqlite_where=_RUNNING_ONLY,
            postgresql_where=_RUNNING_ONLY,
        ),
        # Only active runs are indexed by what finds them (the claim, the queue limit,
        # cancel by owner): ended runs, nearly all of them, cost these indexes nothing,
        # and a run's end adds no entry to them.
        Index(
            "runs_pending",
            "thread_id",
            "run_id",
            sqlite_where=_PENDING_ONLY,
            postgresql_where=_PENDING_ONLY,
        ),
        Index(
            "runs_active_by_owner",
            "owner",
            sqlite_where=_ACTIVE_ONLY,
            postgresql_where=_ACTIVE_ONLY,
        ),
        # A thread's runs, and by status its active ones: a turn looks for those twice.
        # By `thread_id` alone, SQLite (no statistics) read every run the thread ever had
        # for them, as a partial index ties with it or cannot serve `status IN (...)`.
        Index("runs_by_thread_status", "thread_id", "status"),
    )

    run_id: Mapped[str] = mapped_column(UUIDText(), primary_key=True)
    thread_id: Mapped[str] = mapped_column(UUIDText())
    assistant_id: Mapped[str] = mapped_column(UUIDText())
    status: Mapped[str] = mapped_column(String(16), default="pending")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    multitask_strategy: Mapped[str] = mapped_column(String(16), default="enqueue")
    kwargs: Mapped[dict[str, Any]] = mapped_column(PackedJSON, default=dict)
    # What the run ended with, for join and wait: the values of `checkpoint_id` as saved,
    # followed by what `result` holds (its interrupts); without a checkpoint, `result`
    # whole (the error, or values no checkpoint holds: a stateless run deletes its own).
    checkpoint_id: Mapped[str | None] = mapped_column(UUIDText())
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    owner: Mapped[str] = mapped_column(String(200))
    # Set by a cancel request; the worker running the run acts on it.
    cancel_action: Mapped[str | None] = mapped_column(String(16))
    worker_id: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    # A run asked for with `after_seconds` is not started before this time; null for
    # every other run, which may start at once (revision 0021).
    not_before: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Made by a request that waits for its answer (`runs/wait`): a worker in another
    # process sends the answer with the notification of the run's end, when it fits.
    awaited: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The run's last events, recorded with its end: one row of `run_events` in its short
    # form (`app.runs.broker.folded`), kept here rather than in a row of its own.
    events: Mapped[str | None] = mapped_column(Text)


class RunEventRow(Base):
    """The recorded stream of a run, so a client can rejoin from any event id."""

    __tablename__ = "run_events"
    __table_args__ = (
        # Only retention looks events up by time, and they are written in time order: a
        # BRIN index on PostgreSQL (a few pages for any number of events, no entry per
        # insert); SQLite has none, and keeps a B-tree.
        Index("ix_run_events_created_at", "created_at", postgresql_using="brin"),
    )

    run_id: Mapped[str] = mapped_column(UUIDText(), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(200))
    # A `values` event is kept as the checkpoint whose saved values it showed, and `data`
    # holds only what followed them (its interrupts, as a JSON object; else empty): the
    # replay turns it back into the same text (`app.runs.broker`).
    checkpoint_id: Mapped[str | None] = mapped_column(UUIDText())
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The events recorded with this one (seq + 1 on), as a JSON array of [event,
    # checkpoint_id, data], and the seq of the last of them (none: the row is one event).
    # A run's events recorded together take one row: a chat turn's three (its metadata
    # and two `values` events) paid three rows' headers, keys and index entries.
    last_seq: Mapped[int | None] = mapped_column(Integer)
    more: Mapped[str | None] = mapped_column(Text)


class StoreItemRow(Base):
    __tablename__ = "store_items"

    # Each user has their own namespaces: the owner leads the key.
    owner: Mapped[str] = mapped_column(String(200), primary_key=True)
    # The namespace path joined with a unit separator, so prefix search is a LIKE.
    namespace: Mapped[str] = mapped_column(String(1000), primary_key=True)
    key: Mapped[str] = mapped_column(String(1000), primary_key=True)
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # An item put with a `ttl` (minutes) is gone once `expires_at` passes: reads skip it
    # at once, the sweep deletes it later; a read that refreshes moves `expires_at` on.
    ttl_minutes: Mapped[float | None] = mapped_column(Float)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)


class ReminderRow(Base):
    """The reminder agent's side effects: they stay when a thread forks or rolls back."""

    __tablename__ = "reminders"

    reminder_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    thread_id: Mapped[str] = mapped_column(UUIDText())
    text: Mapped[str] = mapped_column(Text)
    due: Mapped[str | None] = mapped_column(String(200))
    # One reminder per tool call: a re-run after a crash or resume does not act twice.
    tool_call_id: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # When `due` comes (None: no time could be read from it, so it never fires).
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)
    # unscheduled (no due_at), scheduled, sending (its delivery run exists), delivered, or
    # undeliverable (its thread or assistant is gone, or the assistant cannot say it).
    status: Mapped[str] = mapped_column(String(16), default="unscheduled")
    # The assistant whose agent set it, which says it when it is due.
    assistant_id: Mapped[str | None] = mapped_column(String(36))
    # A scheduler holds a due reminder until then while it makes its delivery run.
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The run that delivers it, and when that run said it in the thread.
    run_id: Mapped[str | None] = mapped_column(UUIDText())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class WebhookDeliveryRow(Base):
    """A run's webhook call, recorded with the run's outcome: sent (and retried) from here,
    so a crash loses no delivery. The body is kept only until the call is done."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("webhook_deliveries_due", "status", "next_attempt_at"),)

    # Sent as a header, the same on every attempt: receivers deduplicate by it.
    delivery_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(36), index=True)
    url: Mapped[str] = mapped_column(Text)
    # The JSON payload without `webhook_sent_at` (added on each attempt); None once done.
    body: Mapped[str | None] = mapped_column(Text)
    # pending, delivered or failed (refused, or out of attempts).
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # A pending delivery is sent once this has passed; an attempt in flight pushes it
    # past the attempt's timeout, so the delivery of a sender that died is sent again.
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class CronRow(Base):
    """Runs on a schedule (`/runs/crons`): on a thread, or each on a new thread. Each
    occurrence becomes one run; `next_run_at` moves on in the transaction that inserts it."""

    __tablename__ = "crons"

    cron_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    assistant_id: Mapped[str] = mapped_column(String(36), index=True)
    # None: each run gets a new thread.
    thread_id: Mapped[str | None] = mapped_column(String(36), index=True)
    schedule: Mapped[str] = mapped_column(String(200))
    # An IANA zone the schedule is read in; None for UTC.
    timezone: Mapped[str | None] = mapped_column(String(200))
    end_time: Mapped[datetime | None] = mapped_column(UTCDateTime())
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # What becomes of a new thread after its run (delete or keep); None on a thread.
    on_run_completed: Mapped[str | None] = mapped_column(String(16))
    # The fields of the runs it starts, as the client sent them.
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    # The next occurrence, not run yet; None once the cron ended (past `end_time`).
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class UserRow(Base):
    """A user of `api_key` authentication (`threadline users add`)."""

    __tablename__ = "users"

    user_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ApiKeyRow(Base):
    """An API key, stored as a salted hash: the key itself is shown once, when made.

    A key reads `tl_<prefix>_<secret>`; the prefix finds the row, the hash checks the secret.
    """

    __tablename__ = "api_keys"

    key_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), index=True)
    salt: Mapped[str] = mapped_column(String(64))
    digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
