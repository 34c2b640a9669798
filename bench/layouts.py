"""What other storage layouts would take on disk for the graph-driven chat of storage.py.

    .venv/bin/python bench/layouts.py [--url postgresql://user@host/db] [--turns 200]

Runs the chat through our saver (START -> chat -> END on MessagesState: an input
checkpoint and two step checkpoints a turn, with their pending writes), reads back what
the saver stored, and stores the same content in other layouts, each in a fresh
database, measuring the growth over the empty schema as storage.py does:

- "today": the saver's own tables;
- "batch rows": one row per save batch (the loop saves a turn of this graph in two:
  the input checkpoint, its writes and the first step's checkpoint; then the second
  step's writes and checkpoint), holding their checkpoints, writes, new list elements
  and blobs as one JSON document; "text once" stores a repeated string once within the
  document; "zlib" compresses it;
- "+ checkpoint rows": the same, plus a small row per checkpoint (its id, source, step
  and metadata, and its batch) with a primary-key index: what finding a checkpoint by
  id and filtering a list by metadata in SQL would need.

This measures the rows and pages only: no saver reads or writes these layouts. (A
document over 2 kB is compressed by PostgreSQL itself, which is why "batch rows" can come
out smaller than "text once".)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import zlib
from collections.abc import Iterator
from typing import Any

import psycopg
import storage

from tests.checkpoint.chat import turn_texts
from tests.pg import create_database

TABLE_DDL = {
    "threads": "CREATE TABLE threads (id bigserial PRIMARY KEY, thread_id text UNIQUE NOT NULL,"
    " put_count bigint NOT NULL, epoch bigint NOT NULL, last_write_at timestamptz NOT NULL)",
    "batches": "CREATE TABLE batches (thread bigint, ns text, seq int, data bytea NOT NULL,"
    " PRIMARY KEY (thread, ns, seq))",
    "checkpoint_rows": "CREATE TABLE checkpoint_rows (thread bigint, ns text,"
    " checkpoint_id text, source text, step int, run_id text, metadata jsonb, batch int,"
    " PRIMARY KEY (thread, ns, checkpoint_id))",
}
REPEATED = 40  # strings at least this long are stored once per document


def stored_rows(url: str) -> tuple[list[dict[str, Any]], dict[str, list[Any]], Any, Any]:
    """The saver's checkpoint rows (oldest first), pending writes by checkpoint, item
    rows by position and blobs by version."""
    with psycopg.connect(url) as conn:
        cursor = conn.execute("SELECT * FROM checkpoints ORDER BY checkpoint_id")
        names = [column.name for column in cursor.description or []]
        checkpoints = [dict(zip(names, row, strict=True)) for row in cursor]
        writes: dict[str, list[Any]] = {}
        for checkpoint_id, *write in conn.execute(
            "SELECT checkpoint_id, task_id, idx, channel, data FROM checkpoint_writes"
            " ORDER BY checkpoint_id, task_id, idx"
        ):
            writes.setdefault(checkpoint_id, []).append(write)
        items = dict(conn.execute("SELECT seq, data FROM checkpoint_items").fetchall())
        blobs = dict(conn.execute("SELECT version, data FROM checkpoint_blobs").fetchall())
    return checkpoints, writes, items, blobs


def batches(url: str, turns: int) -> Iterator[dict[str, Any]]:
    """The chat's saves as the loop batched them, two a turn."""
    checkpoints, writes, items, blobs = stored_rows(url)
    assert len(checkpoints) == 3 * turns, "one input and two step checkpoints a turn"
    for turn in range(turns):
        start, first, second = checkpoints[3 * turn : 3 * turn + 3]
        blob = [blobs[start["stored_values"]["__start__"]]]
        yield {
            "c": [start, first],
            "w": writes.get(start["checkpoint_id"], []),
            "i": [items[2 * turn]],
            "b": blob,
        }
        yield {
            "c": [second],
            "w": writes.get(first["checkpoint_id"], []),
            "i": [items[2 * turn + 1]],
            "b": [],
        }


def document(batch: dict[str, Any], slim: bool, once: bool, compress: bool) -> bytes:
    lifted = ("source", "step", "metadata", "run_id") if slim else ()
    doc = {
        "c": [{k: v for k, v in c.items() if k not in lifted} for c in batch["c"]],
        "w": [[*write[:-1], json.loads(write[-1])] for write in batch["w"]],
        "i": [json.loads(item) for item in batch["i"]],
        "b": [json.loads(blob) for blob in batch["b"]],
    }
    if once:
        doc = text_once(doc, {})
    data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=str).encode()
    return zlib.compress(data) if compress else data


def text_once(value: Any, seen: dict[str, int]) -> Any:
    """`value` with each repeat of a long string replaced by a reference to the first."""
    if isinstance(value, str) and len(value) >= REPEATED:
        if value in seen:
            return {"$ref": seen[value]}
        seen[value] = len(seen)
    elif isinstance(value, list):
        return [text_once(v, seen) for v in value]
    elif isinstance(value, dict):
        return {k: text_once(v, seen) for k, v in value.items()}
    return value


def growth(url: str, saves: list[dict[str, Any]], slim: bool, once: bool, compress: bool) -> int:
    tables = ["threads", "batches", *(["checkpoint_rows"] if slim else [])]
    with psycopg.connect(url) as conn:
        for table in tables:
            conn.execute(TABLE_DDL[table])
        conn.commit()
        empty = sum(storage.table_sizes(url).values())
        conn.execute(
            "INSERT INTO threads (thread_id, put_count, epoch, last_write_at)"
            " VALUES ('bench', 0, 0, now())"
        )
        for seq, batch in enumerate(saves):  # a transaction per save, as the saver's
            conn.execute("UPDATE threads SET put_count = put_count + 1, last_write_at = now()")
            data = document(batch, slim, once, compress)
            conn.execute("INSERT INTO batches VALUES (1, '', %s, %s)", (seq, data))
            for c in batch["c"] if slim else []:
                metadata = json.dumps(c["metadata"]) if c["metadata"] != {"parents": {}} else None
                conn.execute(
                    "INSERT INTO checkpoint_rows VALUES (1, '', %s, %s, %s, %s, %s, %s)",
                    (c["checkpoint_id"], c["source"], c["step"], c["run_id"], metadata, seq),
                )
            conn.commit()
    return sum(storage.table_sizes(url).values()) - empty


async def run_chat(url: str, turns: int) -> tuple[int, int]:
    """The chat through our saver: its text bytes and its growth."""
    async with storage.our_saver(url) as saver:
        empty = sum(storage.table_sizes(url).values())
        chat = await storage.graph_chat(saver, storage.OURS, turns)
    return chat.raw_bytes, sum(storage.table_sizes(url).values()) - empty


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a PostgreSQL server to create the databases on")
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    layouts = [
        ("batch rows", False, False, False),
        ("batch rows, text once", False, True, False),
        ("batch rows, text once, zlib", False, True, True),
        ("+ checkpoint rows, text once", True, True, False),
        ("+ checkpoint rows, text once, zlib", True, True, True),
    ]
    with storage.server(args.url) as server:
        url = create_database(server, "layouts_today")
        text, today = asyncio.run(run_chat(url, args.turns))
        saves = list(batches(url, args.turns))
        print(f"{args.turns}-turn graph chat, {text:,} bytes of message text")
        alone = [t.encode() for pair in turn_texts(args.turns) for t in pair]
        shrunk = sum(len(zlib.compress(t)) for t in alone) / sum(map(len, alone))
        print(f"  (zlib makes each message text alone {shrunk:.0%} of its size)")
        print(f"  {'layout':<38}{'growth':>12}{'per turn':>10}{'x text':>8}")
        results = [("today", today)]
        for n, (name, slim, once, compress) in enumerate(layouts):
            database = create_database(server, f"layouts_{n}")
            results.append((name, growth(database, saves, slim, once, compress)))
        for name, grown in results:
            print(f"  {name:<38}{grown:>12,}{grown / args.turns:>10,.0f}{grown / text:>8.2f}")


if __name__ == "__main__":
    main()
