"""Every benchmark in one run, then one summary table against the goals: `make bench`.

    .venv/bin/python bench/run_all.py [--quick]

In order: the engine comparison (bench/engine.py), LangGraph's own bench suite on both
engines (bench/langgraph_suite.py), the serializers (bench/serde.py), the SQL savers on a
wide state (bench/sql_wide.py), the storage comparison (bench/storage.py) and its plot
(bench/plot_storage.py, docs/storage.png), the side-by-side HTTP load against
`langgraph dev` (bench/compare.py), durable turns against the floor (bench/turns.py), a
long chat's growth per table (bench/growth.py), the thread scaling run
(bench/scaling.py) and the many-streams run (bench/streams.py). Each part starts and stops
what it needs, prints its own table, and a part that crashes is reported without stopping
the others. --quick shrinks every part to a smoke test of about four minutes: its figures
are only indicative, and its plot goes to a temporary file, not docs/.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, TypeVar

import compare
import plot_storage
import scaling
import streams
import turns
from load import LoadResult

T = TypeVar("T")

BENCH = Path(__file__).resolve().parent
MB_PER_MIB = 1.048576  # the memory goal is in MB (10^6 bytes); RSS is read in MiB
# "Zero" for the idle thread cost, as RSS readings go: 5 MB per 10,000 threads.
IDLE_NOISE_KIB = 0.5


@dataclass(frozen=True)
class Plan:
    """The sizes of one run of everything."""

    engine_args: list[str]
    suite_args: list[str]
    serde_args: list[str]
    sql_wide_args: list[str]
    storage_args: list[str]
    plot_turns: list[int]
    users: list[int]  # the first level is the one the goals name
    turns: int
    request_timeout: float
    sizes: list[int]
    control_turns: int
    streams: int
    turn_users: list[int]  # bench/turns.py; the first level is the one the goals name
    turn_total: int
    growth_args: list[str]


FULL = Plan(
    engine_args=[],
    suite_args=[],
    serde_args=[],
    sql_wide_args=[],
    storage_args=[],
    plot_turns=[int(n) for n in plot_storage.DEFAULT_TURNS.split(",")],
    users=[20, 100],
    turns=5,
    request_timeout=30.0,
    sizes=[10, 100, 1000, 10000],
    control_turns=1000,
    streams=1000,
    turn_users=[20, 100],
    turn_total=500,
    growth_args=[],
)
QUICK = Plan(
    engine_args=["--quick"],
    suite_args=["--repeat", "1", "--only", "_10x|_25x300|sequential_10|allowlist"],
    serde_args=["--repeat", "3", "--number", "5"],
    sql_wide_args=["--repeat", "1"],
    storage_args=["--turns", "20", "--graph-turns", "10"],
    plot_turns=[10, 20, 40],
    users=[5],
    turns=2,
    request_timeout=10.0,
    sizes=[10, 50, 200],
    control_turns=100,
    streams=100,
    turn_users=[5],
    turn_total=50,
    growth_args=["--turns", "60", "--marks", "10,30,60"],
)


@dataclass
class Row:
    """One line of the summary; `result` is PASS, MISS or "-" (a figure without a goal)."""

    figure: str
    ours: str
    reference: str = "-"
    ratio: str = "-"
    goal: str = "-"
    result: str = "-"


def section(title: str) -> None:
    """A header with the time and the machine's load: other processes skew the figures."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{'=' * 12} {title}  ({time.strftime('%H:%M:%S')}, load average {load})", flush=True)


def run_script(name: str, args: list[str]) -> None:
    """A benchmark that is its own script, in its own process; its output goes straight out."""
    code = subprocess.run([sys.executable, str(BENCH / name), *args], check=False).returncode
    if code:
        raise RuntimeError(f"{name} exited with code {code}")


def guarded(title: str, part: Callable[[], Any], failed: list[str]) -> Any:
    """Run one part; a crash is printed and noted, and the next part still runs."""
    section(title)
    try:
        return part()
    except Exception:
        traceback.print_exc()
        failed.append(title)
        return None


def reported(
    title: str,
    run: Callable[[], T],
    report: Callable[[T], str],
    summary: Callable[[T], list[Row]],
    failed: list[str],
) -> list[Row]:
    """A guarded part whose result is printed, then summarised into rows (none if it
    crashed)."""

    def part() -> T:
        result = run()
        print(report(result))
        return result

    result = guarded(title, part, failed)
    return [] if result is None else summary(result)


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _verdict(met: bool | None) -> str:
    return "MISS" if met is None else ("PASS" if met else "MISS")


def comparison_rows(c: compare.Comparison) -> list[Row]:
    """The throughput, tail latency and first-token goals, at the first user level."""
    users = c.users[0]
    reference = c.get(compare.REFERENCE, users, "stream")
    rows = []
    for key, label in (
        ("pg", "PG 1 process"),
        ("pg2", "PG 2 processes"),
        ("pg2x2", "PG 2 API + 2 workers"),
    ):
        ours = c.get(key, users, "stream")
        pair = [
            _ratio_row(f"turns/s, {users} users, {label}", ours, reference, "turns_per_s", 3.0),
            _ratio_row(f"p99 ms, {users} users, {label}", ours, reference, "latency_p99_ms", 1 / 3),
        ]
        if key in c.failures:
            for row in pair:
                row.ours = "failed"
        rows += pair
    for key, label in (("pg", "PG 1 process"), ("pg2", "PG 2 processes"), ("sqlite", "SQLite")):
        ours = c.get(key, users, "stream")
        ttft = None if ours is None else ours.ttft_p50_ms
        ref_ttft = None if reference is None else reference.ttft_p50_ms
        rows.append(
            Row(
                f"first token p50 ms, {users} users, {label}",
                _num(ttft),
                _num(ref_ttft),
                _num(compare.ratio(ttft, ref_ttft), 2),
                "< 50 ms",
                _verdict(None if ttft is None else ttft < 50),
            )
        )
    for level in c.users[1:]:
        ours, ref = c.get("pg", level, "stream"), c.get(compare.REFERENCE, level, "stream")
        rows.append(_ratio_row(f"turns/s, {level} users, PG 1 process", ours, ref, "turns_per_s"))
    return rows


def _ratio_row(
    figure: str,
    ours: LoadResult | None,
    reference: LoadResult | None,
    attribute: str,
    goal: float | None = None,
) -> Row:
    """Ours against the reference; a goal above 1 is a minimum ratio, below 1 a maximum."""
    mine = None if ours is None else getattr(ours, attribute)
    theirs = None if reference is None else getattr(reference, attribute)
    value = compare.ratio(mine, theirs)
    row = Row(figure, _num(mine), _num(theirs), _num(value, 2))
    if goal is not None:
        row.goal = f">= {goal:g}x" if goal > 1 else f"<= {goal:.2f}x"
        met = None if value is None else (value >= goal if goal > 1 else value <= goal)
        row.result = _verdict(met)
    return row


def turns_rows(results: dict[tuple[str, int], turns.Measured], levels: list[int]) -> list[Row]:
    """Throughput against the floor and the reference, tail latency, costs per turn."""
    users = levels[0]
    floor = results.get(("floor", users))
    reference = results.get(("langgraph", users))
    rows = []
    for key, label in (("pg", "PG 1 process"), ("pg2x2", "PG 2 API + 2 workers")):
        ours = results.get((key, users))
        load = None if ours is None else ours.load
        rows += [
            _ratio_row(
                f"wait turns/s vs floor, {users} users, {label}",
                load,
                floor and floor.load,
                "turns_per_s",
                0.6,
            ),
            _ratio_row(
                f"wait turns/s, {users} users, {label}",
                load,
                reference and reference.load,
                "turns_per_s",
                3.0,
            ),
            _ratio_row(
                f"wait p99 ms, {users} users, {label}",
                load,
                reference and reference.load,
                "latency_p99_ms",
                1 / 3,
            ),
            Row(
                f"  per turn: server CPU ms / statements, {label}",
                "-" if ours is None else f"{_num(ours.cpu_ms, 2)} / {_num(ours.statements)}",
            ),
        ]
    for level in levels[1:]:
        ours, ref = results.get(("pg", level)), results.get(("langgraph", level))
        rows.append(
            _ratio_row(
                f"wait turns/s, {level} users, PG 1 process",
                ours and ours.load,
                ref and ref.load,
                "turns_per_s",
                2.0,
            )
        )
    return rows


def scaling_rows(result: scaling.Scaling) -> list[Row]:
    """RSS growth over the sizes, the cost of an idle thread, a lone turn at each end."""
    first, last = result.levels[0], result.levels[-1]
    growth_mb = result.rss_growth_mib * MB_PER_MIB
    return [
        Row(
            f"server RSS growth, {first.threads:,} -> {last.threads:,} threads",
            f"{growth_mb:+.1f} MB",
            goal="< 50 MB",
            result=_verdict(growth_mb < 50),
        ),
        Row("  RSS per new thread with its turn", f"{result.kib_per_new_thread:+.2f} KiB"),
        Row("  RSS per turn on existing threads", f"{result.kib_per_turn:+.2f} KiB"),
        Row(
            "idle thread cost (the difference)",
            f"{result.idle_thread_kib:+.2f} KiB",
            goal=f"0 (<= {IDLE_NOISE_KIB} KiB)",
            result=_verdict(result.idle_thread_kib <= IDLE_NOISE_KIB),
        ),
        Row(
            f"lone turn p50 ms at {first.threads:,} / {last.threads:,} threads",
            f"{_num(first.probe.latency_p50_ms)} / {_num(last.probe.latency_p50_ms)}",
        ),
    ]


def streams_rows(r: streams.StreamsResult) -> list[Row]:
    return [
        Row(
            f"{r.streams:,} SSE streams: server RSS peak (growth)",
            f"{r.rss_peak_mib:.0f} MiB (+{r.kib_per_stream:.0f} KiB/stream)",
        ),
        Row(
            f"{r.streams:,} SSE streams: slowest stream's delay",
            f"{_num(r.slowest_stream_ms, 0)} ms (p50 {_num(r.delay_p50_ms, 0)})",
        ),
        Row(
            f"{r.streams:,} SSE streams: completed / open at once",
            f"{r.completed:,} / {r.peak_open:,} ({r.errors} errors)",
        ),
    ]


def format_summary(rows: list[Row]) -> str:
    """Fixed-width columns: the figure left-aligned, the rest right-aligned."""
    table = [
        astuple(row)
        for row in [Row("figure", "ours", "reference", "ratio", "goal", "result"), *rows]
    ]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(
            [
                cells[0].ljust(widths[0]),
                *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)),
            ]
        )
        for cells in table
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    started = time.monotonic()
    failed: list[str] = []
    rows: list[Row] = []

    guarded("engine (bench/engine.py)", lambda: run_script("engine.py", plan.engine_args), failed)
    for title, script, script_args in (
        ("LangGraph's bench suite", "langgraph_suite.py", plan.suite_args),
        ("serializers", "serde.py", plan.serde_args),
        ("SQL savers on a wide state", "sql_wide.py", plan.sql_wide_args),
    ):
        guarded(
            f"{title} (bench/{script})",
            lambda s=script, a=script_args: run_script(s, a),
            failed,
        )
    guarded(
        "storage (bench/storage.py)", lambda: run_script("storage.py", plan.storage_args), failed
    )
    with tempfile.TemporaryDirectory(prefix="threadline-bench-") as scratch:
        out = Path(scratch) / "storage.png" if args.quick else plot_storage.DEFAULT_OUT

        def plot() -> None:
            series = plot_storage.measure_series(plan.plot_turns)
            print(plot_storage.format_series(series))
            plot_storage.plot(series, out)
            print(f"wrote {out}")

        guarded("storage plot (bench/plot_storage.py)", plot, failed)

    rows += reported(
        "side by side (bench/compare.py)",
        lambda: compare.run_compare(plan.users, plan.turns, plan.request_timeout),
        compare.format_comparison,
        comparison_rows,
        failed,
    )
    rows += reported(
        "durable turns against the floor (bench/turns.py)",
        lambda: turns.run(list(turns.SETUPS), plan.turn_users, plan.turn_total),
        lambda results: turns.report(results, plan.turn_users),
        lambda results: turns_rows(results, plan.turn_users),
        failed,
    )
    guarded(
        "a long chat's growth (bench/growth.py)",
        lambda: run_script("growth.py", plan.growth_args),
        failed,
    )
    rows += reported(
        "scaling (bench/scaling.py)",
        lambda: scaling.run_scaling(plan.sizes, control_turns=plan.control_turns),
        scaling.format_scaling,
        scaling_rows,
        failed,
    )
    rows += reported(
        "streams (bench/streams.py)",
        lambda: streams.run_streams(plan.streams),
        streams.format_streams,
        streams_rows,
        failed,
    )

    section(f"summary{' (--quick: indicative only)' if args.quick else ''}")
    print(format_summary(rows))
    print("\nreference: langgraph dev on the same agent; load figures are streamed turns")
    for title in failed:
        print(f"FAILED: {title} (traceback above)")
    print(f"total {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
