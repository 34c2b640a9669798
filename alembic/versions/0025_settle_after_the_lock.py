"""threads: a run's end settles its thread in a function that reads the runs again once it
holds the row

When a run ends, its thread's row is set to what the run left, and stays `busy` if other
runs of the thread wait. In one UPDATE, that check of the runs is read in the snapshot the
statement started with; when the UPDATE first waits for the row (an admission holding it
to add a run), PostgreSQL re-checks the row alone after the wait, and the runs read stay
those of before: a run added meanwhile is missed, or one stopped meanwhile counted. A
function (PostgreSQL only; SQLite's writers take turns) makes the UPDATE, then, holding
the row, checks the runs again in a statement of its own, whose snapshot is taken after
the lock, and corrects the status in the rare case they differ: still one round trip, and
no lock taken before the UPDATE (a row lock is written to the WAL, some 50 bytes a turn).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05 23:55:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WAITING = """
CREATE FUNCTION threadline_waiting(p_thread uuid, p_ended uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM runs
        WHERE runs.thread_id = p_thread
            AND runs.status IN ('pending', 'running')
            AND runs.run_id IS DISTINCT FROM p_ended
    )
$$
"""

SETTLE = """
CREATE FUNCTION threadline_settle(
    p_thread uuid,
    p_ended uuid,
    p_resting varchar,
    p_now timestamptz,
    p_changed text[],
    p_checkpoint_id uuid,
    p_values json,
    p_interrupts json
) RETURNS varchar
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    settled varchar;
    fresh varchar;
BEGIN
    UPDATE threads SET
        status = CASE WHEN threadline_waiting(p_thread, p_ended)
            THEN 'busy' ELSE p_resting END,
        updated_at = p_now,
        checkpoint_id = CASE WHEN 'checkpoint_id' = ANY (p_changed)
            THEN p_checkpoint_id ELSE threads.checkpoint_id END,
        "values" = CASE WHEN 'values' = ANY (p_changed)
            THEN p_values ELSE threads."values" END,
        interrupts = CASE WHEN 'interrupts' = ANY (p_changed)
            THEN p_interrupts ELSE threads.interrupts END
    WHERE thread_id = p_thread
    RETURNING threads.status INTO settled;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    fresh := CASE WHEN threadline_waiting(p_thread, p_ended) THEN 'busy' ELSE p_resting END;
    IF fresh <> settled THEN
        UPDATE threads SET status = fresh WHERE thread_id = p_thread;
    END IF;
    RETURN fresh;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(WAITING)
        op.execute(SETTLE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION threadline_settle")
        op.execute("DROP FUNCTION threadline_waiting")
