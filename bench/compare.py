"""Side by side over HTTP: our server on SQLite, on PostgreSQL (1 process; 2 processes that
each serve the API and run workers; 2 API + 2 worker processes) and LangGraph's
development server, on the same graph and load.

    .venv/bin/python bench/compare.py [--users 20,100] [--turns 5]

Every setup is started, measured and stopped in turn, so they never share the machine.
Ours serves the reminder agent (`agent`, scripted model); the reference is `langgraph dev`
serving bench/lg_agent, the same agent written against LangGraph. Each load is K users
(--users, each level in turn) on their own threads, each sending T turns of "hello there",
first with `runs/wait`, then with `runs/stream` (bench/load.py); with two API processes the
users are split between them (round robin). The ratios divide ours by the reference.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from load import LoadResult, Mode, format_report, run_load
from servers import Server, start_langgraph_dev, start_postgres, start_threadline

MESSAGE = "hello there"
MODES: tuple[Mode, ...] = ("wait", "stream")
REFERENCE = "langgraph"
# Per load: a setup that stops answering costs minutes, not hours.
LOAD_CAP_S = 300.0


@contextlib.contextmanager
def _ours_sqlite() -> Iterator[Server]:
    with (
        tempfile.TemporaryDirectory(prefix="threadline-bench-") as directory,
        start_threadline(f"sqlite+aiosqlite:///{directory}/bench.db") as server,
    ):
        yield server


@contextlib.contextmanager
def _ours_postgres(apis: int = 1, workers: int = 0) -> Iterator[Server]:
    with start_postgres() as url, start_threadline(url, apis=apis, workers=workers) as server:
        yield server


@dataclass(frozen=True)
class Setup:
    key: str
    title: str
    start: Callable[[], contextlib.AbstractContextManager[Server]]


SETUPS = (
    Setup("sqlite", "ours, SQLite, 1 process", _ours_sqlite),
    Setup("pg", "ours, PostgreSQL, 1 process", _ours_postgres),
    Setup(
        "pg2",
        "ours, PostgreSQL, 2 processes (API + worker each)",
        functools.partial(_ours_postgres, 2),
    ),
    Setup("pg2x2", "ours, PostgreSQL, 2 API + 2 worker", functools.partial(_ours_postgres, 2, 2)),
    Setup(REFERENCE, "langgraph dev (reference)", start_langgraph_dev),
)


@dataclass
class Comparison:
    """Every load's result by (setup key, users, mode), and why a setup stopped early."""

    users: list[int]
    turns: int
    results: dict[tuple[str, int, Mode], LoadResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def get(self, setup: str, users: int, mode: Mode) -> LoadResult | None:
        return self.results.get((setup, users, mode))


def run_compare(
    users: list[int], turns: int, timeout: float = 30.0, log: Callable[[str], None] = print
) -> Comparison:
    """Measure every setup at every user level in both modes, logging each report; a
    request over `timeout` seconds is an error (and a failed warm-up stops the setup)."""
    comparison = Comparison(users, turns)
    for setup in SETUPS:
        log(f"\n== {setup.title}")
        try:
            with setup.start() as server:
                for level in users:
                    reports = [_load(server, level, turns, mode, timeout) for mode in MODES]
                    for report in reports:
                        comparison.results[setup.key, level, report.mode] = report
                    log(format_report(reports))
        except RuntimeError as exc:  # did not start, or its warm-up turn failed
            comparison.failures[setup.key] = str(exc).splitlines()[0]
            log(f"{setup.key} stopped: {exc}")
    return comparison


def _load(server: Server, users: int, turns: int, mode: Mode, timeout: float) -> LoadResult:
    return asyncio.run(
        run_load(
            server.urls,
            users,
            turns,
            mode,
            "agent",
            MESSAGE,
            server.pids,
            timeout=timeout,
            max_seconds=LOAD_CAP_S,
        )
    )


# What the side-by-side table shows: a label, and how to read it from a result.
FIGURES: tuple[tuple[str, Callable[[LoadResult], float | None]], ...] = (
    ("turns/s", lambda r: r.turns_per_s),
    ("p50 ms", lambda r: r.latency_p50_ms),
    ("p99 ms", lambda r: r.latency_p99_ms),
    ("ttft p50 ms", lambda r: r.ttft_p50_ms),
)


def ratio(ours: float | None, reference: float | None) -> float | None:
    return ours / reference if ours is not None and reference else None


def format_comparison(c: Comparison) -> str:
    """One row per (users, mode, figure): each setup's value, then ours / reference."""
    ours = [s.key for s in SETUPS if s.key != REFERENCE]
    columns = [s.key for s in SETUPS]
    lines = [
        f"side by side: {c.turns} turns per user; ratio = ours / {REFERENCE}",
        f"{'users':>5} {'mode':<6} {'figure':<12}"
        + "".join(f"{key:>10}" for key in columns)
        + "".join(f"{f'{key}/lg':>10}" for key in ours),
    ]
    for users in c.users:
        for mode in MODES:
            for label, read in FIGURES:
                if label.startswith("ttft") and mode != "stream":
                    continue
                values = {key: _read(c.get(key, users, mode), read) for key in columns}
                cells = [_cell(values[key], 1) for key in columns]
                ratios = [_cell(ratio(values[key], values[REFERENCE]), 2) for key in ours]
                lines.append(
                    f"{users:>5} {mode:<6} {label:<12}"
                    + "".join(f"{x:>10}" for x in cells + ratios)
                )
    lines += [
        f"{key}, {users} users, {mode}: {r.errors} errors ({r.error_sample})"
        for (key, users, mode), r in c.results.items()
        if r.errors
    ]
    lines += [f"{key} stopped: {why}" for key, why in c.failures.items()]
    return "\n".join(lines)


def _read(result: LoadResult | None, read: Callable[[LoadResult], float | None]) -> float | None:
    return None if result is None else read(result)


def _cell(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="20,100", help="concurrent users, one load each")
    parser.add_argument("--turns", type=int, default=5, help="turns per user")
    args = parser.parse_args()
    users = [int(u) for u in args.users.split(",")]
    print(format_comparison(run_compare(users, args.turns)))


if __name__ == "__main__":
    main()
