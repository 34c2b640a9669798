"""One long chat through the API, and what every table gains with it: storage grows with
what a turn adds, never with the length of the conversation (issue 21).

    .venv/bin/python bench/growth.py [--turns 1000] [--marks 100,500,1000]
        [--dialects postgres,sqlite] [--graphs echo,replies]

One `threadline serve` process on a throwaway PostgreSQL and on SQLite in turn, for each
graph: `echo` says the user's message back with "You said: ", `replies` (bench/replies.py)
answers as a model would, with 330 to 530 characters of new text. One thread, `--turns`
turns of `runs/wait` with the user texts of the storage benchmark (tests/checkpoint/chat.py;
120 to 280 characters), after one turn of another thread. At the start and at each mark:
the bytes of each table on disk with its indexes (PostgreSQL: with its TOAST and maps;
SQLite: its pages from `dbstat`), the bytes the database wrote so far (tests/written.py),
the time and the server's CPU time. Printed per graph and dialect: each table's size at
each mark and its growth per turn over each stretch, the total as a multiple of the message
text, and per turn in each stretch the bytes written, the time and the CPU time.

The chat's growth is counted from its start, on a database in use: the other thread's
turn gave every table and index its first pages (some 120 kB on PostgreSQL), which a
database pays once, not per chat. The growth from the empty schema is printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
from load import process_usage
from servers import start_postgres, start_threadline
from sqlalchemy import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.checkpoint.chat import turn_texts  # noqa: E402
from tests.written import bytes_written  # noqa: E402

GRAPHS = {"echo": "app.agents.echo:graph", "replies": "bench/replies.py:graph"}
ENV = {"THREADLINE_GRAPHS": json.dumps(GRAPHS)}
PG_TABLES = (
    "SELECT relname, pg_total_relation_size(oid) FROM pg_class"
    " WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
)
# Each b-tree's pages, counted for the table it belongs to (an index for its table).
SQLITE_TABLES = (
    "SELECT coalesce(m.tbl_name, s.name), sum(s.pgsize) FROM dbstat s"
    " LEFT JOIN sqlite_master m ON m.name = s.name GROUP BY 1"
)


@dataclass
class Mark:
    turn: int
    text: int  # bytes of message text so far
    written: int  # bytes the database wrote so far
    seconds: float  # since the first turn: wall time, and the server's CPU time
    cpu_s: float
    tables: dict[str, int] = field(default_factory=dict)


def table_sizes(database_url: str) -> dict[str, int]:
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(plain) as conn:
            return {name: int(size) for name, size in conn.execute(PG_TABLES)}
    with contextlib.closing(sqlite3.connect(url.database or "")) as conn:
        return {name: int(size) for name, size in conn.execute(SQLITE_TABLES)}


@contextlib.contextmanager
def database(dialect: str) -> Iterator[str]:
    if dialect == "postgres":
        with start_postgres() as url:
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="threadline-growth-") as directory:
        yield f"sqlite+aiosqlite:///{directory}/growth.db"


@dataclass
class Run:
    """A chat's marks, and the database before them: the empty schema, then one turn of
    another thread (whose text `warm_up_text` counts) that gives every table and index
    the first pages any database in use already has."""

    empty: int  # bytes of every table, before any turn
    warm_up_text: int
    marks: list[Mark]


def chat(database_url: str, graph: str, turns: int, marks: list[int]) -> Run:
    said = [human for human, _ in turn_texts(turns + 1)]
    found: list[Mark] = []
    with (
        start_threadline(database_url, ENV) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):

        def turn(thread: str, human: str) -> int:
            body = {
                "assistant_id": graph,
                "input": {"messages": [{"role": "user", "content": human}]},
            }
            answer = client.post(f"/threads/{thread}/runs/wait", json=body)
            answer.raise_for_status()
            return len(human.encode()) + len(answer.json()["messages"][-1]["content"].encode())

        empty = sum(table_sizes(database_url).values())
        warm_up_text = turn(client.post("/threads", json={}).json()["thread_id"], said.pop())
        thread = client.post("/threads", json={}).json()["thread_id"]
        text = 0
        started = time.perf_counter()

        def mark(turn: int) -> Mark:
            cpu = process_usage(server.pids).cpu_s
            spent = time.perf_counter() - started
            return Mark(turn, text, written(), spent, cpu, table_sizes(database_url))

        with bytes_written(database_url) as written:
            found.append(mark(0))
            for n, human in enumerate(said, start=1):
                text += turn(thread, human)
                if n in marks:
                    found.append(mark(n))
                    print(f"  turn {n}: {sum(found[-1].tables.values()):,} bytes", flush=True)
    return Run(empty, warm_up_text, found)


def report(dialect: str, run: Run) -> str:
    marks = run.marks
    first, last = marks[0], marks[-1]
    names = sorted(
        {n for m in marks for n in m.tables},
        key=lambda n: -(last.tables.get(n, 0) - first.tables.get(n, 0)),
    )
    stretches = list(zip(marks, marks[1:], strict=False))
    title = "".join(f"{f'at {m.turn}':>14}" for m in marks[1:]) + "".join(
        f"{f'/turn {a.turn}-{b.turn}':>16}" for a, b in stretches
    )
    lines = [
        f"{dialect}: {last.turn} turns, {last.text:,} bytes of message text",
        f"{'table':<22}{title}",
    ]

    def row(label: str, sizes: list[int]) -> str:
        grown = [s - sizes[0] for s in sizes[1:]]
        per_turn = [
            (b - a) / (mb.turn - ma.turn)
            for (a, b), (ma, mb) in zip(zip(sizes, sizes[1:], strict=False), stretches, strict=True)
        ]
        return (
            f"{label:<22}"
            + "".join(f"{g:>14,}" for g in grown)
            + "".join(f"{p:>16,.0f}" for p in per_turn)
        )

    for name in names:
        sizes = [m.tables.get(name, 0) for m in marks]
        if sizes[-1] != sizes[0]:
            lines.append(row(name, sizes))
    lines.append(row("all tables", [sum(m.tables.values()) for m in marks]))
    lines.append(row("written (WAL)", [m.written for m in marks]))
    lines.append(row("message text", [m.text for m in marks]))
    # Times of the stretches (their tables' measuring is not in them: small, and alike).
    lines.append(row("turn time (us)", [int(1e6 * m.seconds) for m in marks]))
    lines.append(row("server CPU (us)", [int(1e6 * m.cpu_s) for m in marks]))
    growth = sum(last.tables.values()) - sum(first.tables.values())
    fresh = (sum(last.tables.values()) - run.empty) / (last.text + run.warm_up_text)
    lines.append(
        f"growth of all tables: {growth / last.text:.2f}x the message text"
        f" ({fresh:.2f}x from the empty schema, with the first pages of every table and index)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--marks", default="100,500,1000")
    parser.add_argument("--dialects", default="postgres,sqlite")
    parser.add_argument("--graphs", default="echo,replies", help=f"of {', '.join(GRAPHS)}")
    args = parser.parse_args()
    marks = [int(m) for m in args.marks.split(",")]
    reports = []
    for graph in args.graphs.split(","):
        for dialect in args.dialects.split(","):
            print(f"== {graph}, {dialect}", flush=True)
            with database(dialect) as url:
                reports.append(report(f"{graph}, {dialect}", chat(url, graph, args.turns, marks)))
    print("\n" + "\n\n".join(reports))


if __name__ == "__main__":
    main()
