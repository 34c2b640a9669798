"""threads, runs and run events refer to checkpoints instead of copying their values

A thread's row kept its head's values, rewritten whole by every run; a run's row kept the
values it ended with; a `values` event the whole state. Now each names the checkpoint
whose saved values they are (`checkpoint_id`), and keeps only what that checkpoint does
not hold: a run its interrupts (and its last message, for the conversation tree), an
event what followed the values. Rows that no checkpoint's values match keep their copy.

Rows written before are moved where their checkpoint is known for sure: a run that
succeeded without interrupts ended at the last checkpoint it saved; a thread that rests
idle without interrupts is its latest checkpoint. The checkpoints are found in the save
records' summaries (the checkpoint tables are at their head: they upgrade first).
Everything else keeps its values, as does every `values` event recorded before (they go
with the event retention). The downgrade cannot turn references back into values (that
takes the graphs): it refuses a database holding any.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 00:00:00.000000
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from alembic import op
from engine.checkpoint.sql.records import thread_summaries

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REFERRING = ("threads", "runs", "run_events")
threads = sa.table(
    "threads",
    sa.column("thread_id", sa.String),
    sa.column("checkpoint_id", sa.String),
    sa.column("values", sa.JSON),
)
runs = sa.table(
    "runs",
    sa.column("run_id", sa.String),
    sa.column("checkpoint_id", sa.String),
    sa.column("result", sa.JSON),
    sa.column("last_message", sa.JSON),
)
# The records of a thread (digests, under negative numbers, repeat them).
RECORDS = sa.text(
    "SELECT s.data FROM checkpoint_saves s JOIN checkpoint_threads t ON s.thread = t.id "
    "WHERE t.thread_id = :thread AND s.seq > 0 ORDER BY s.seq"
)
# Per dialect: runs that succeeded without interrupts, with the last message of their
# values (as JSON text); threads resting idle, without interrupts, with values.
MOVABLE_RUNS = {
    "postgresql": "SELECT run_id, thread_id, (result::jsonb -> 'messages' -> -1)::text FROM runs "
    "WHERE status = 'success' AND jsonb_typeof(result::jsonb) = 'object' "
    "AND result::jsonb -> '__error__' IS NULL AND result::jsonb -> '__interrupt__' IS NULL",
    "sqlite": "SELECT run_id, thread_id, json_extract(result, '$.messages[#-1]') FROM runs "
    "WHERE status = 'success' AND json_type(result) = 'object' "
    "AND json_type(result, '$.__error__') IS NULL "
    "AND json_type(result, '$.__interrupt__') IS NULL",
}
MOVABLE_THREADS = {
    "postgresql": "SELECT thread_id FROM threads WHERE status = 'idle' "
    "AND json_typeof(\"values\") = 'object' AND interrupts::jsonb = '{}'::jsonb",
    "sqlite": "SELECT thread_id FROM threads WHERE status = 'idle' "
    "AND json_type(\"values\") = 'object' AND json(interrupts) = '{}'",
}


def upgrade() -> None:
    for table in REFERRING:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("checkpoint_id", sa.String(length=36), nullable=True))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_message", sa.JSON(), nullable=True))
    _refer(op.get_bind())


def downgrade() -> None:
    conn = op.get_bind()
    for table in REFERRING:
        referring = sa.text(f"SELECT count(*) FROM {table} WHERE checkpoint_id IS NOT NULL")
        found = conn.scalar(referring)
        if found:
            raise RuntimeError(
                f"{found} rows of {table} refer to checkpoints for their values, which only "
                "the server (with the graphs) can read: this database cannot go below 0008"
            )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("last_message")
    for table in REFERRING:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("checkpoint_id")


def _refer(conn: Connection) -> None:
    """Move the rows whose checkpoint is known for sure to references (see above)."""
    dialect = conn.dialect.name
    by_thread: dict[str, list[tuple[str, str | None]]] = {}
    for run_id, thread_id, last in conn.execute(sa.text(MOVABLE_RUNS[dialect])):
        by_thread.setdefault(thread_id, []).append((run_id, last))
    idle = {thread_id for (thread_id,) in conn.execute(sa.text(MOVABLE_THREADS[dialect]))}
    for thread_id in sorted(by_thread.keys() | idle):
        ended, latest = _ends(conn, thread_id)
        for run_id, last in by_thread.get(thread_id, ()):
            if run_id in ended:
                conn.execute(
                    runs.update()
                    .where(runs.c.run_id == run_id)
                    .values(
                        checkpoint_id=ended[run_id],
                        result={},
                        last_message=None if last is None else json.loads(last),
                    )
                )
        if thread_id in idle and latest is not None:
            conn.execute(
                threads.update()
                .where(threads.c.thread_id == thread_id)
                .values(checkpoint_id=latest, values=sa.null())
            )


def _ends(conn: Connection, thread_id: str) -> tuple[dict[str, str], str | None]:
    """The last checkpoint of the thread's graph that each run saved, by run id, and its
    latest checkpoint (None when it has none)."""
    ended: dict[str, str] = {}
    latest: str | None = None
    found = conn.execute(RECORDS, {"thread": thread_id}).scalars()
    for summary in thread_summaries(bytes(data) for data in found):
        if summary.ns:
            continue
        latest = max(latest or summary.id, summary.id)
        run_id = summary.metadata.get("run_id")
        if isinstance(run_id, str):
            ended[run_id] = max(ended.get(run_id, summary.id), summary.id)
    return ended, latest
