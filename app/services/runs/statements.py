"""The runs' prebuilt SQL: built once, as each run executes them (building a statement
costs more than running it). Core statements on the tables' columns, not ORM ones: an
ORM-enabled statement is copied on every execution, and its cache key computed anew,
and the ORM's bulk machinery cost more than the statements."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    JSON,
    ColumnElement,
    ScalarSelect,
    String,
    and_,
    bindparam,
    cast,
    exists,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.db.models import PENDING, RUNNING, RunRow, ThreadRow
from app.runs.broker import NOTIFIED
from app.services.threads import settle_call

FINAL = frozenset({"success", "error", "timeout", "interrupted"})

# The run's row while one attempt holds it (bound with `_holder(run)`). Once its lease
# went to another worker (this process lost the database for too long), that attempt's
# outcome must not overwrite the other's.
HELD = and_(
    RunRow.run_id == bindparam("held_run"),
    RunRow.status == RUNNING,
    RunRow.worker_id == bindparam("held_by"),
    RunRow.attempt == bindparam("held_attempt"),
)
# Built once, as each run executes them: building a statement costs more than running it.
# Core statements on the table, not ORM ones: the ORM's bulk machinery cost more than
# the statements.
# An ended run keeps the worker that ran it (for whoever looks into it), not its lease.
RECORD = (
    update(RunRow.__table__)
    .where(HELD)
    .values(
        lease_expires_at=None,
        status=bindparam("outcome"),
        checkpoint_id=bindparam("outcome_checkpoint"),
        result=bindparam("outcome_result"),
        events=bindparam("outcome_events"),
        updated_at=bindparam("now"),
    )
)
REQUEUE = (
    update(RunRow.__table__)
    .where(HELD)
    .values(status="pending", worker_id=None, lease_expires_at=None, updated_at=bindparam("now"))
)
HOLDS = select(func.count()).select_from(RunRow).where(HELD)
# Statements on the tables' columns, not on ORM attributes: an ORM-enabled statement is
# copied on every execution, and its cache key computed anew.
THREADS, RUNS = ThreadRow.__table__.c, RunRow.__table__.c
# The thread's owner and metadata (not its values: a long chat's are big) and its active
# runs (their ids, space-separated, or null); no row when the thread does not exist. A
# SELECT, not the RETURNING of the update that follows: SQLite evaluated that subquery
# without the index on runs, holding the write lock (first token 110 -> 250 ms).
ACTIVE = (
    select(func.aggregate_strings(cast(RUNS.run_id, String), literal_column("' '")))
    .where(RUNS.thread_id == THREADS.thread_id, RUNS.status.in_((PENDING, RUNNING)))
    .scalar_subquery()
)
THREAD = select(THREADS.owner, THREADS.metadata, ACTIVE.label("active")).where(
    THREADS.thread_id == bindparam("thread")
)
# The thread's row, taken: admissions that stop the active runs take turns with it.
LOCK_THREAD = (
    select(THREADS.thread_id).where(THREADS.thread_id == bindparam("thread")).with_for_update()
)
BUSY = (
    update(ThreadRow.__table__)
    .where(THREADS.thread_id == bindparam("thread"))
    .values(status="busy", metadata=bindparam("metadata"))
)
ADD_RUN = insert(RunRow.__table__)


@functools.cache
def admit_at_once_statement(
    columns: tuple[str, ...],
    *,
    queued: bool = False,
    head_of: Callable[[ColumnElement[Any]], ScalarSelect[Any]] | None = None,
) -> Any:
    """PostgreSQL, one statement: mark the thread busy, add the run's graph and assistant
    to its metadata, and insert the run (with `columns`, as `run_<column>` parameters)
    if the thread is the caller's and idle; no row when it is not so. No other
    parameter may be named like a column of `runs`: an INSERT takes such a parameter as
    that column's value. A run started here also returns its thread's checkpoint head
    (`head`, by the saver's `head_of`), which its first read may then trust.

    `queued`: the run waits for a worker. It goes in only while the owner has fewer
    pending runs than `queue_limit` (the queue limit, checked as `_insert` checks it),
    and the statement notifies `channel` of it (`queue_key`), as `_insert`'s transaction
    does."""
    known = cast(THREADS.metadata, JSONB)
    metadata = known.op("||")(bindparam("thread_patch", type_=JSONB))
    conditions = [
        THREADS.thread_id == bindparam("thread"),
        THREADS.owner == bindparam("thread_owner"),
        func.jsonb_typeof(known) == "object",  # else `||` would not merge
        ~exists().where(
            RUNS.thread_id == THREADS.thread_id,
            RUNS.status.in_((PENDING, RUNNING)),
        ),
    ]
    if queued:
        conditions.append(_pending_of(bindparam("queue_owner")) < bindparam("queue_limit"))
    busy = (
        update(ThreadRow.__table__)
        .where(*conditions)
        .values(status="busy", metadata=cast(metadata, JSON))
        .returning(THREADS.thread_id)
        .cte("busy")
    )
    row = select(
        *[bindparam(f"run_{name}", type_=RUNS[name].type) for name in columns]
    ).select_from(busy)
    added = (
        insert(RunRow.__table__)
        .from_select(list(columns), row, include_defaults=False)
        .returning(RUNS.run_id)
    )
    if not queued:
        if head_of is None:
            return added
        thread = bindparam("run_thread_id", type_=RUNS.thread_id.type)
        return added.returning(head_of(thread).label("head"))
    inserted = added.cte("added")
    notified = select(
        func.count(func.pg_notify(bindparam("channel"), bindparam("queue_key")))
    ).select_from(inserted)
    return select(inserted.c.run_id, notified.scalar_subquery().label("notified"))


def _record_at_once() -> Any:
    """PostgreSQL, one statement: the run's outcome and last events (`RECORD`), its
    thread's rest (`settle`) and the notification of its end, all only if this attempt
    holds the run. Its row: `held`, and the thread's `status`."""
    ended = RECORD.returning(RUNS.run_id).cte("ended")
    held = exists(select(ended.c.run_id))
    settled = select(settle_call(ending=True).label("status")).where(held).cte("settled")
    notified = NOTIFIED.where(held)
    return select(
        held.label("held"),
        select(settled.c.status).scalar_subquery().label("status"),
        notified.scalar_subquery().label("notified"),
    )


RECORD_AT_ONCE = _record_at_once()


def _pending_of(owner: Any) -> Any:
    """How many pending runs `owner` has (planned on runs_active_by_owner)."""
    return (
        select(func.count())
        .select_from(RunRow)
        .where(
            RunRow.owner == owner,
            RunRow.status.in_((PENDING, RUNNING)),  # the condition of runs_active_by_owner
            RunRow.status == PENDING,
        )
        .scalar_subquery()
    )


QUEUED = select(_pending_of(bindparam("owner")))

# A run's status (no row: the run is gone).
STATUS = select(RUNS.status).where(RUNS.run_id == bindparam("run"))
# What the answer of a run that ended needs of its row (`RunResults.answer`).
ENDED = select(
    RUNS.run_id, RUNS.thread_id, RUNS.assistant_id, RUNS.status, RUNS.checkpoint_id, RUNS.result
).where(RUNS.run_id == bindparam("run"))
