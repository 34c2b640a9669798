"""Tables of the server: assistants, threads, runs, their stream events, the store, users
and their API keys.

Checkpoint tables belong to the engine's SQL saver (`checkpoint_metadata`); one Alembic
history owns both. JSON columns hold client JSON only, never type-tagged objects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    inspect,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

app_metadata = MetaData()


class UTCDateTime(TypeDecorator[datetime]):
    """A time in UTC. SQLite stores times without their zone; they come back aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    metadata = app_metadata


def columns_of(row: Base) -> dict[str, Any]:
    """The values set on a new object, by column name, for a Core INSERT: hot paths
    insert without a session's unit of work (unset columns take their defaults)."""
    state = inspect(row)
    columns = state.mapper.column_attrs
    return {
        columns[key].columns[0].name: value for key, value in state.dict.items() if key in columns
    }


class Assistant(Base):
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


class Thread(Base):
    __tablename__ = "threads"

    thread_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="idle", index=True)
    # The head's values and open interrupts, refreshed after every run, so that reading
    # and searching threads never loads checkpoints.
    values: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    interrupts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        # The database itself refuses a second running run on one thread.
        Index(
            "one_running_run_per_thread",
            "thread_id",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
        Index("runs_pending", "status", "created_at"),
    )

    run_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    thread_id: Mapped[str] = mapped_column(String(36), index=True)
    assistant_id: Mapped[str] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    multitask_strategy: Mapped[str] = mapped_column(String(16), default="enqueue")
    kwargs: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # What the run ended with (values, interrupts or the error), for join and wait.
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    # Set by a cancel request; the worker running the run acts on it.
    cancel_action: Mapped[str | None] = mapped_column(String(16))
    worker_id: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    # A run asked for with `after_seconds` is not started before this time.
    not_before: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class RunEvent(Base):
    """The recorded stream of a run, so a client can rejoin from any event id."""

    __tablename__ = "run_events"

    run_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(200))
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class StoreItem(Base):
    __tablename__ = "store_items"

    # Each user has their own namespaces: the owner leads the key.
    owner: Mapped[str] = mapped_column(String(200), primary_key=True)
    # The namespace path joined with a unit separator, so prefix search is a LIKE.
    namespace: Mapped[str] = mapped_column(String(1000), primary_key=True)
    key: Mapped[str] = mapped_column(String(1000), primary_key=True)
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Reminder(Base):
    """The reminder agent's side effects: they stay when a thread forks or rolls back."""

    __tablename__ = "reminders"

    reminder_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    thread_id: Mapped[str] = mapped_column(String(36))
    text: Mapped[str] = mapped_column(Text)
    due: Mapped[str | None] = mapped_column(String(200))
    # One reminder per tool call: a re-run after a crash or resume does not act twice.
    tool_call_id: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class User(Base):
    """A user of `api_key` authentication (`threadline users add`)."""

    __tablename__ = "users"

    user_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ApiKey(Base):
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
