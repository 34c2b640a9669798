"""Revision 0004 turns a thread's checkpoint, write, item and blob rows into one save
record, and its downgrade replays records back into those rows, on both dialects."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from alembic import command
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import run_alembic
from engine.checkpoint.sql.records import CheckpointEntry, Record, decode, encode
from engine.checkpoint.sql.saver import SQLSaver
from tests.message_samples import OLD_CLASS_FORM, assert_same_messages

OLD_TABLES = {"checkpoints", "checkpoint_blobs", "checkpoint_items", "checkpoint_writes"}
THREAD = 1  # the thread with old rows
EMPTY = 2  # a thread without any: it gets no record, and its records come back later

# The tables of revision 0001, as the test writes and reads them.
_json = sa.JSON(none_as_null=True)
_old = sa.MetaData()
threads = sa.Table(
    "checkpoint_threads",
    _old,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("thread_id", sa.Text),
    sa.Column("put_count", sa.BigInteger),
    sa.Column("epoch", sa.BigInteger),
    sa.Column("last_write_at", sa.DateTime(timezone=True)),
    sa.Column("deleted_at", sa.DateTime(timezone=True)),
)
checkpoints = sa.Table(
    "checkpoints",
    _old,
    sa.Column("thread", sa.Integer),
    sa.Column("checkpoint_ns", sa.Text),
    sa.Column("checkpoint_id", sa.Text),
    sa.Column("parent_checkpoint_id", sa.Text),
    sa.Column("v", sa.Integer),
    sa.Column("ts", sa.Text),
    sa.Column("source", sa.Text),
    sa.Column("step", sa.Integer),
    sa.Column("run_id", sa.Text),
    sa.Column("metadata", _json),
    sa.Column("channel_versions", _json),
    sa.Column("versions_seen", _json),
    sa.Column("updated_channels", _json),
    sa.Column("inline_values", sa.Text),
    sa.Column("stored_values", _json),
)
blobs = sa.Table(
    "checkpoint_blobs",
    _old,
    sa.Column("thread", sa.Integer),
    *(sa.Column(name, sa.Text) for name in ("checkpoint_ns", "channel", "version", "data")),
)
items = sa.Table(
    "checkpoint_items",
    _old,
    sa.Column("thread", sa.Integer),
    sa.Column("checkpoint_ns", sa.Text),
    sa.Column("channel", sa.Text),
    sa.Column("seq", sa.Integer),
    sa.Column("count", sa.Integer),
    sa.Column("data", sa.Text),
)
writes = sa.Table(
    "checkpoint_writes",
    _old,
    sa.Column("thread", sa.Integer),
    sa.Column("checkpoint_ns", sa.Text),
    sa.Column("checkpoint_id", sa.Text),
    sa.Column("task_id", sa.Text),
    sa.Column("idx", sa.Integer),
    sa.Column("channel", sa.Text),
    sa.Column("task_path", sa.Text),
    sa.Column("data", sa.Text),
)
saves = sa.Table(
    "checkpoint_saves",
    _old,
    sa.Column("thread", sa.Integer),
    sa.Column("seq", sa.BigInteger),
    sa.Column("data", sa.LargeBinary),
)

# Three checkpoints of a chain, inserted newest first: an input, a loop step with every
# metadata column, and one with nothing in its optional columns.
CHECKPOINT_ROWS: list[dict[str, Any]] = [
    {
        "checkpoint_ns": "",
        "checkpoint_id": "1ef-0003",
        "parent_checkpoint_id": "1ef-0002",
        "v": 4,
        "ts": "2026-12-01T00:00:03.000000+00:00",
        "source": None,
        "step": None,
        "run_id": None,
        "metadata": None,
        "channel_versions": {"__start__": "2", "messages": "3"},
        "versions_seen": {"__input__": {}},
        "updated_channels": None,
        "inline_values": None,
        "stored_values": None,
    },
    {
        "checkpoint_ns": "",
        "checkpoint_id": "1ef-0002",
        "parent_checkpoint_id": "1ef-0001",
        "v": 4,
        "ts": "2026-12-01T00:00:02.000000+00:00",
        "source": "loop",
        "step": 1,
        "run_id": "run-1",
        "metadata": {"parents": {}, "x": 1},
        "channel_versions": {"__start__": "2", "messages": "2", "branch:to:chat": "2"},
        "versions_seen": {"__start__": {"__start__": "1"}, "chat": {"branch:to:chat": "1"}},
        "updated_channels": ["messages"],
        "inline_values": '{"branch:to:chat":null}',
        "stored_values": {"__start__": "1", "messages": [[0, 2]]},
    },
    {
        "checkpoint_ns": "",
        "checkpoint_id": "1ef-0001",
        "parent_checkpoint_id": None,
        "v": 4,
        "ts": "2026-12-01T00:00:01.000000+00:00",
        "source": "input",
        "step": -1,
        "run_id": None,
        "metadata": {"parents": {}},
        "channel_versions": {"__start__": "1"},
        "versions_seen": {"__input__": {}},
        "updated_channels": ["__start__"],
        "inline_values": "{}",
        "stored_values": {"__start__": "1"},
    },
]
ITEM_ROWS = [
    {"checkpoint_ns": "", "channel": "messages", "seq": 0, "count": 2, "data": '"a",\n"b"'}
]
BLOB_ROWS = [
    {"checkpoint_ns": "", "channel": "__start__", "version": "1", "data": '{"messages":["a"]}'}
]
WRITE_ROWS = [
    {
        "checkpoint_ns": "",
        "checkpoint_id": "1ef-0002",
        "task_id": "task-b",
        "idx": 0,
        "channel": "messages",
        "task_path": "~__pregel_pull, chat",
        "data": '["b"]',
    },
    {
        "checkpoint_ns": "",
        "checkpoint_id": "1ef-0002",
        "task_id": "task-a",
        "idx": -3,
        "channel": "__interrupt__",
        "task_path": "~__pregel_pull, ask",
        "data": '[{"value":"sure?"}]',
    },
    {
        "checkpoint_ns": "",
        "checkpoint_id": "1ef-0002",
        "task_id": "task-a",
        "idx": 0,
        "channel": "answer",
        "task_path": "~__pregel_pull, ask",
        "data": '"yes"',
    },
]

EXPECTED = Record(
    checkpoints=[
        CheckpointEntry(
            ns="",
            id="1ef-0001",
            parent=None,
            metadata={"source": "input", "step": -1, "parents": {}},
            v=4,
            ts="2026-12-01T00:00:01.000000+00:00",
            channel_versions={"__start__": "1"},
            versions_seen={"__input__": {}},
            updated_channels=["__start__"],
            inline="{}",
            stored={"__start__": "1"},
        ),
        CheckpointEntry(
            ns="",
            id="1ef-0002",
            parent="1ef-0001",
            metadata={"source": "loop", "step": 1, "run_id": "run-1", "parents": {}, "x": 1},
            v=4,
            ts="2026-12-01T00:00:02.000000+00:00",
            channel_versions={"__start__": "2", "messages": "2", "branch:to:chat": "2"},
            versions_seen={"__start__": {"__start__": "1"}, "chat": {"branch:to:chat": "1"}},
            updated_channels=["messages"],
            inline='{"branch:to:chat":null}',
            stored={"__start__": "1", "messages": [[0, 2]]},
        ),
        CheckpointEntry(
            ns="",
            id="1ef-0003",
            parent="1ef-0002",
            metadata={},
            v=4,
            ts="2026-12-01T00:00:03.000000+00:00",
            channel_versions={"__start__": "2", "messages": "3"},
            versions_seen={"__input__": {}},
            updated_channels=None,
            inline=None,
            stored={},
        ),
    ],
    writes=[
        (
            "",
            "1ef-0002",
            "task-a",
            -3,
            "__interrupt__",
            "~__pregel_pull, ask",
            '[{"value":"sure?"}]',
        ),
        ("", "1ef-0002", "task-a", 0, "answer", "~__pregel_pull, ask", '"yes"'),
        ("", "1ef-0002", "task-b", 0, "messages", "~__pregel_pull, chat", '["b"]'),
    ],
    items=[("", "messages", 0, 2, '"a",\n"b"')],
    blobs=[("", "__start__", "1", '{"messages":["a"]}')],
)


class Database:
    """Statements on the database at `url`, each batch in a transaction of its own."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)

    async def run(self, *statements: Any) -> list[sa.Row[Any]]:
        """Run the statements (a statement, or a (statement, rows) pair to insert many);
        the rows the last one returned."""
        found: list[sa.Row[Any]] = []
        async with self.engine.begin() as conn:
            for statement in statements:
                result = await conn.execute(
                    *statement if isinstance(statement, tuple) else [statement]
                )
                found = list(result) if result.returns_rows else []
        return found

    async def tables(self) -> set[str]:
        async with self.engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names()))

    async def epochs(self) -> dict[int, int]:
        return dict(await self.run(sa.select(threads.c.id, threads.c.epoch)))  # type: ignore[arg-type]


_JSON_COLUMNS = {c.name for c in checkpoints.c if isinstance(c.type, sa.JSON)}


def parsed(row: sa.Row[Any]) -> dict[str, Any]:
    """A row's columns but `thread`, JSON columns parsed (whichever way the driver gave them)."""
    values = {name: value for name, value in row._mapping.items() if name != "thread"}
    for name in _JSON_COLUMNS & values.keys():
        if isinstance(values[name], str):
            values[name] = json.loads(values[name])
    return values


async def rows_of(db: Database, table: sa.Table, thread: int, *order: str) -> list[dict[str, Any]]:
    query = sa.select(table).where(table.c.thread == thread).order_by(*(table.c[o] for o in order))
    return [parsed(row) for row in await db.run(query)]


async def test_upgrade_makes_one_record_per_thread_and_downgrade_restores_the_rows(
    empty_database: str,
) -> None:
    database = empty_database
    await run_alembic(database, command.upgrade, "0001")
    db = Database(database)
    try:
        now = datetime.now(UTC)
        await db.run(
            (
                sa.insert(threads),
                [
                    {
                        "id": THREAD,
                        "thread_id": "t-1",
                        "put_count": 3,
                        "epoch": 0,
                        "last_write_at": now,
                    },
                    {
                        "id": EMPTY,
                        "thread_id": "t-2",
                        "put_count": 1,
                        "epoch": 0,
                        "last_write_at": now,
                    },
                ],
            ),
            *(
                (sa.insert(table), [{"thread": THREAD, **row} for row in rows])
                for table, rows in (
                    (checkpoints, CHECKPOINT_ROWS),
                    (items, ITEM_ROWS),
                    (blobs, BLOB_ROWS),
                    (writes, WRITE_ROWS),
                )
            ),
        )

        await run_alembic(database, command.upgrade, "0004")
        tables = await db.tables()
        assert "checkpoint_saves" in tables and not tables & OLD_TABLES
        [(thread, seq, data)] = await db.run(sa.select(saves))
        assert (thread, seq) == (THREAD, 3)
        record = decode(data).record
        assert record == EXPECTED
        # The metadata columns come first, then the metadata column's keys, in order.
        assert [list(c.metadata) for c in record.checkpoints] == [
            ["source", "step", "parents"],
            ["source", "step", "run_id", "parents", "x"],
            [],
        ]
        assert await db.epochs() == {THREAD: 1, EMPTY: 0}
        # The saver reads the converted thread as the old one read its rows.
        loaded = await SQLSaver(db.engine).aget_tuple(
            {"configurable": {"thread_id": "t-1", "checkpoint_id": "1ef-0002"}}
        )
        assert loaded is not None
        assert loaded.checkpoint["channel_values"] == {
            "__start__": {"messages": ["a"]},
            "messages": ["a", "b"],
            "branch:to:chat": None,
        }
        assert loaded.metadata == EXPECTED.checkpoints[1].metadata
        assert loaded.pending_writes == [
            ("task-a", "__interrupt__", [{"value": "sure?"}]),
            ("task-a", "answer", "yes"),
            ("task-b", "messages", ["b"]),
        ]

        # Two records of the other thread, replayed on downgrade: a checkpoint saved again
        # replaces the first; a task's write keeps its first value, a special write its last.
        # Their digest (seq -2), which comes first in seq order, is not replayed. The
        # second is chained to the first, as a saver writes it.
        first, again = EXPECTED.checkpoints[0], EXPECTED.checkpoints[1]
        replaced = dataclasses.replace(first, ts="later", stored={})
        write = ("", "1ef-0001", "task-c", 0, "messages", "", '"first"')
        special = ("", "1ef-0001", "task-c", -3, "__interrupt__", "", '"first"')
        records = [
            Record([first, again], [write, special], [("", "m", 0, 1, '"x"')], []),
            Record(
                [replaced],
                [write[:-1] + ('"second"',), special[:-1] + ('"second"',)],
                [("", "m", 0, 1, '"y"'), ("", "m", 1, 1, '"z"')],
                [("", "__start__", "1", "{}")],
            ),
        ]
        earlier = encode(records[0])
        await db.run(
            (
                sa.insert(saves),
                [
                    {"data": earlier.data, "thread": EMPTY, "seq": 1},
                    {"data": encode(records[1], earlier.stream).data, "thread": EMPTY, "seq": 2},
                ]
                + [
                    {
                        "data": encode(Record(writes=[write[:-1] + ('"stale"',)])).data,
                        "thread": EMPTY,
                        "seq": -2,
                    }
                ],
            )
        )

        await run_alembic(database, command.downgrade, "0001")
        tables = await db.tables()
        assert tables >= OLD_TABLES and "checkpoint_saves" not in tables
        assert await db.epochs() == {THREAD: 2, EMPTY: 1}
        key = ("checkpoint_ns", "checkpoint_id")
        assert await rows_of(db, checkpoints, THREAD, *key) == sorted(
            CHECKPOINT_ROWS, key=lambda r: r["checkpoint_id"]
        )
        assert await rows_of(db, items, THREAD, "seq") == ITEM_ROWS
        assert await rows_of(db, blobs, THREAD, "version") == BLOB_ROWS
        assert await rows_of(db, writes, THREAD, *key, "task_id", "idx") == sorted(
            WRITE_ROWS, key=lambda r: (r["task_id"], r["idx"])
        )

        restored = await rows_of(db, checkpoints, EMPTY, *key)
        assert [(r["checkpoint_id"], r["ts"], r["stored_values"]) for r in restored] == [
            ("1ef-0001", "later", None),
            (
                "1ef-0002",
                "2026-12-01T00:00:02.000000+00:00",
                {"__start__": "1", "messages": [[0, 2]]},
            ),
        ]
        assert [(r["idx"], r["data"]) for r in await rows_of(db, writes, EMPTY, "idx")] == [
            (-3, '"second"'),
            (0, '"first"'),
        ]
        assert [(r["seq"], r["data"]) for r in await rows_of(db, items, EMPTY, "seq")] == [
            (0, '"y"'),
            (1, '"z"'),
        ]
        assert [r["data"] for r in await rows_of(db, blobs, EMPTY, "version")] == ["{}"]
    finally:
        await db.engine.dispose()


async def test_messages_in_rows_of_the_old_layout_read_as_langchain_messages(
    empty_database: str,
) -> None:
    """Rows written before revision 0004 by an engine that stored messages under their
    class names (before 99b7ecf) keep their texts in the records and read back as
    LangChain's messages."""
    (human_text, human), (ai_text, ai) = (
        (data.decode(), message) for data, message in OLD_CLASS_FORM[:2]
    )
    await run_alembic(empty_database, command.upgrade, "0001")
    db = Database(empty_database)
    try:
        thread = {"id": THREAD, "thread_id": "t-1", "put_count": 3, "epoch": 0}
        await db.run(
            (sa.insert(threads), [{**thread, "last_write_at": datetime.now(UTC)}]),
            (sa.insert(checkpoints), [{"thread": THREAD, **row} for row in CHECKPOINT_ROWS]),
            (
                sa.insert(items),
                [{"thread": THREAD, **ITEM_ROWS[0], "data": f"{human_text},\n{ai_text}"}],
            ),
            (
                sa.insert(blobs),
                [{"thread": THREAD, **BLOB_ROWS[0], "data": f'{{"messages":[{human_text}]}}'}],
            ),
            (sa.insert(writes), [{"thread": THREAD, **WRITE_ROWS[0], "data": f"[{ai_text}]"}]),
        )
        await run_alembic(empty_database, command.upgrade, "0004")
        loaded = await SQLSaver(db.engine).aget_tuple(
            {"configurable": {"thread_id": "t-1", "checkpoint_id": "1ef-0002"}}
        )
        assert loaded is not None
        values = loaded.checkpoint["channel_values"]
        assert_same_messages(values["messages"], [human, ai])
        assert_same_messages(values["__start__"]["messages"], [human])
        [(task, channel, written)] = loaded.pending_writes
        assert (task, channel) == ("task-b", "messages")
        assert_same_messages(written, [ai])
    finally:
        await db.engine.dispose()
