"""What a chat turn costs, against the least a durable turn can cost and against
`langgraph dev`: the echo graph (one node that answers "You said: ...") through
`runs/wait`, so the figures are the server's own costs, not a model's.

    .venv/bin/python bench/turns.py [--users 20,100] [--total 500] [--setups floor,pg,...]

Setups, each started, measured and stopped in turn on a throwaway PostgreSQL with fsync
and full-page writes on (a durable database) and pg_stat_statements loaded:

| key | setup |
| --- | --- |
| `floor` | bench/floor.py: FastAPI + asyncpg, one INSERT of the message and reply a turn |
| `pg` | one `threadline serve` process |
| `pg2x2` | two `threadline serve --no-worker` and two `threadline worker` processes |
| `sqlite` | one `threadline serve` process on SQLite (a temporary file) |
| `langgraph` | `langgraph dev` serving bench/lg_agent/echo.py, the same graph, in memory |

Each user level is K users at once, each on its own thread, playing `--total / K` turns
(at least 5) one after another (bench/load.py). Before it, the same users only create
their threads (and the warm-up turn): what that costs is taken off, so the CPU and
statements per turn are the turns'. Printed per level and setup: turns/s, p50 and p99
latency, the server's CPU per turn (all its processes), PostgreSQL's CPU per turn, the
statements per turn (every statement PostgreSQL ran for the server, BEGIN and COMMIT
included), and the ratios of turns/s to the floor's and the reference's and of p99 to the
reference's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from load import LoadResult, process_usage, run_load
from servers import (
    Server,
    start_floor,
    start_langgraph_dev,
    start_postgres,
    start_threadline,
)
from sqlalchemy import make_url

MESSAGE = "hello there"
ASSISTANT = "echo"
# A durable database, as in production: PostgreSQL's defaults, which the tests turn off.
DURABLE = {
    "fsync": "on",
    "full_page_writes": "on",
    "shared_preload_libraries": "pg_stat_statements",
}
THREADLINE_ENV = {"THREADLINE_GRAPHS": json.dumps({ASSISTANT: "app.agents.echo:graph"})}
LOAD_CAP_S = 300.0


@dataclass
class Database:
    """The PostgreSQL a setup runs on: its URL, and how to read what it did."""

    url: str

    def _admin(self) -> psycopg.Connection:
        plain = make_url(self.url).set(drivername="postgresql", database="postgres")
        return psycopg.connect(plain.render_as_string(hide_password=False), autocommit=True)

    def statements(self) -> int:
        """Statements run so far in the setup's database (pg_stat_statements)."""
        with self._admin() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            row = conn.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s "
                "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s",
                (make_url(self.url).database,),
            ).fetchone()
        return int(row[0]) if row else 0

    def postmaster(self) -> int:
        """The server's process (its backends are its children)."""
        with self._admin() as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            stat = Path(f"/proc/{row[0]}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])


@dataclass(frozen=True)
class Setup:
    key: str
    title: str
    start: Callable[[], contextlib.AbstractContextManager[tuple[Server, Database | None]]]


@contextlib.contextmanager
def _on_postgres(
    start: Callable[[str], Server],
) -> Iterator[tuple[Server, Database | None]]:
    with start_postgres(DURABLE) as url, start(url) as server:
        yield server, Database(url)


@contextlib.contextmanager
def _sqlite() -> Iterator[tuple[Server, Database | None]]:
    with tempfile.TemporaryDirectory(prefix="threadline-bench-") as directory:
        url = f"sqlite+aiosqlite:///{directory}/bench.db"
        with start_threadline(url, THREADLINE_ENV) as server:
            yield server, None


@contextlib.contextmanager
def _langgraph() -> Iterator[tuple[Server, Database | None]]:
    with start_langgraph_dev("langgraph-echo.json") as server:
        yield server, None


SETUPS = (
    Setup(
        "floor", "floor: FastAPI + asyncpg, one INSERT a turn", lambda: _on_postgres(start_floor)
    ),
    Setup(
        "pg",
        "threadline, PostgreSQL, 1 process",
        lambda: _on_postgres(lambda url: start_threadline(url, THREADLINE_ENV)),
    ),
    Setup(
        "pg2x2",
        "threadline, PostgreSQL, 2 API + 2 worker processes",
        lambda: _on_postgres(lambda url: start_threadline(url, THREADLINE_ENV, apis=2, workers=2)),
    ),
    Setup("sqlite", "threadline, SQLite, 1 process", _sqlite),
    Setup("langgraph", "langgraph dev (reference, in memory)", _langgraph),
)


@dataclass
class Measured:
    """One setup at one user level: the load, and its costs per turn."""

    load: LoadResult
    cpu_ms: float | None
    db_cpu_ms: float | None
    statements: float | None
    client_cpu_ms: float


def measure(server: Server, db: Database | None, users: int, turns: int) -> Measured:
    """The threads alone (and the warm-up), then the same with `turns` turns each: the
    difference is what the turns cost."""
    costs = []
    for each in (0, turns):
        statements = db.statements() if db else 0
        postgres = [db.postmaster()] if db else []
        db_cpu = process_usage(postgres).cpu_s
        load = asyncio.run(
            run_load(
                server.urls,
                users,
                each,
                "wait",
                ASSISTANT,
                MESSAGE,
                server.pids,
                max_seconds=LOAD_CAP_S,
            )
        )
        db_cpu = process_usage(postgres).cpu_s - db_cpu
        costs.append((load, db.statements() - statements if db else 0, db_cpu))
    (bare, bare_statements, bare_db), (load, statements, db_cpu) = costs
    done = load.completed or 1
    cpu = None
    if load.server_cpu_s is not None and bare.server_cpu_s is not None:
        cpu = 1000 * (load.server_cpu_s - bare.server_cpu_s) / done
    return Measured(
        load,
        cpu,
        1000 * (db_cpu - bare_db) / done if db else None,
        (statements - bare_statements) / done if db else None,
        1000 * (load.client_cpu_s - bare.client_cpu_s) / done,
    )


def run(setups: list[Setup], levels: list[int], total: int) -> dict[tuple[str, int], Measured]:
    results: dict[tuple[str, int], Measured] = {}
    for setup in setups:
        print(f"\n== {setup.title}", flush=True)
        with setup.start() as (server, db):
            for users in levels:
                turns = max(5, total // users)
                measured = measure(server, db, users, turns)
                results[setup.key, users] = measured
                print(_row(setup.key, users, measured), flush=True)
    return results


HEADER = (
    f"{'users':>5} {'setup':<10}{'turns/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>7}"
    f"{'cpu ms':>8}{'db ms':>8}{'stmts':>7}{'client ms':>10}"
)


def _row(key: str, users: int, m: Measured) -> str:
    load = m.load
    return (
        f"{users:>5} {key:<10}{load.turns_per_s:>9.1f}{_cell(load.latency_p50_ms):>9}"
        f"{_cell(load.latency_p99_ms):>9}{load.errors:>7}{_cell(m.cpu_ms, 2):>8}"
        f"{_cell(m.db_cpu_ms, 2):>8}{_cell(m.statements, 1):>7}{_cell(m.client_cpu_ms, 2):>10}"
    )


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(results: dict[tuple[str, int], Measured], levels: list[int]) -> str:
    """Every setup's row per level, then ours against the floor and the reference."""
    keys = list(dict.fromkeys(key for key, _ in results))
    lines = [
        "per turn: cpu ms = the server's processes, db ms = PostgreSQL's, stmts = statements,"
        " client ms = the load generator's CPU (one process, on the same cores)",
        HEADER,
    ]
    for users in levels:
        lines += [_row(key, users, results[key, users]) for key in keys if (key, users) in results]
    lines.append(
        f"\n{'users':>5} {'setup':<10}{'/floor':>9}{'/lg':>9}{'p99/lg':>9}"
        "   (turns/s ratios; p99 ratio)"
    )
    for users in levels:
        floor, lg = results.get(("floor", users)), results.get(("langgraph", users))
        for key in keys:
            if key in ("floor", "langgraph") or (key, users) not in results:
                continue
            ours = results[key, users].load
            lines.append(
                f"{users:>5} {key:<10}"
                f"{_cell(_ratio(ours.turns_per_s, floor and floor.load.turns_per_s), 2):>9}"
                f"{_cell(_ratio(ours.turns_per_s, lg and lg.load.turns_per_s), 2):>9}"
                f"{_cell(_ratio(ours.latency_p99_ms, lg and lg.load.latency_p99_ms), 2):>9}"
            )
    return "\n".join(lines)


def _ratio(ours: float | None, other: float | None) -> float | None:
    return ours / other if ours is not None and other else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="20,100", help="concurrent users, one level each")
    parser.add_argument("--total", type=int, default=500, help="turns per level (about)")
    parser.add_argument("--setups", default=",".join(s.key for s in SETUPS))
    args = parser.parse_args()
    levels = [int(u) for u in args.users.split(",")]
    wanted = args.setups.split(",")
    results = run([s for s in SETUPS if s.key in wanted], levels, args.total)
    print("\n" + report(results, levels))


if __name__ == "__main__":
    main()
