"""The SQL savers on a wide state: LangGraph's `wide_state` graph through our SQLSaver and
through LangGraph's AsyncPostgresSaver.

    .venv/bin/python bench/sql_wide.py [--url postgresql://...] [--repeat 5] [--n 300]

The graph and its input are those of the `wide_state_25x300` workload of LangGraph's
bench suite (bench/langgraph_suite.py loads them from its source archive): a 16-key
dataclass state whose lists of nested dicts grow until one holds more than `--n`
elements. Each setup runs in a process of its own, on a fresh database (PostgreSQL: one
throwaway server for all, unless --url names one; SQLite: a temporary file): ours on our
engine and SQLSaver on PostgreSQL and on SQLite, LangGraph's on langgraph and
AsyncPostgresSaver. Each streams the graph (`astream`, a new thread each run) with
durability "async" (LangGraph's default: every step saved) and "exit" (the last step
only): a warm-up run, then `--repeat` timed runs; the table shows the medians and the
ratio to LangGraph's. Goal: ours on PostgreSQL at most 0.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, the repo root is not on sys.path
    sys.path.insert(0, str(ROOT))

from tests.pg import create_database, throwaway_cluster  # noqa: E402

GOAL = 0.5
DURABILITIES = ("async", "exit")
SETUPS = ("langgraph postgres", "ours postgres", "ours sqlite")


def wide_input() -> dict[str, Any]:
    """The input of the suite's wide_state_25x300 workload."""
    row = ["hi?" * 10, True, 1, 6327816386138, None] * 5
    return {
        "messages": [{str(i) * 10: {str(j) * 10: list(row) for j in range(5)} for i in range(5)}]
    }


@contextlib.asynccontextmanager
async def open_saver(setup: str, url: str) -> AsyncIterator[Any]:
    if setup == "langgraph postgres":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver
        return
    from engine.checkpoint.sql.migrations import migrate
    from engine.checkpoint.sql.saver import SQLSaver

    await migrate(url)
    saver = SQLSaver.from_url(url)
    try:
        yield saver
    finally:
        await saver.aclose()


async def measure(setup: str, url: str, n: int, repeat: int) -> dict[str, Any]:
    """Milliseconds per run for each durability, and the steps of a run."""
    from langgraph_suite import prepare_side

    prepare_side("langgraph" if setup.startswith("langgraph") else "ours")
    from bench.wide_state import wide_state

    out: dict[str, Any] = {}
    async with open_saver(setup, url) as saver:
        graph = wide_state(n).compile(checkpointer=saver)
        for durability in DURABILITIES:
            times = []
            for i in range(repeat + 1):
                config = {"configurable": {"thread_id": str(uuid.uuid4())}}
                config["recursion_limit"] = 10**9
                start = time.perf_counter()
                steps = 0
                async for _ in graph.astream(wide_input(), config, durability=durability):
                    steps += 1
                if i:  # the first run is the warm-up
                    times.append((time.perf_counter() - start) * 1000)
            out[durability] = statistics.median(times)
            out["steps"] = steps
    return out


def measure_apart(setup: str, url: str, n: int, repeat: int) -> dict[str, Any]:
    """`measure` in a new process: each side imports `langgraph` as itself or as the
    engine, and a process does only one."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_measure, setup, url, n, repeat).result()


def _measure(setup: str, url: str, n: int, repeat: int) -> dict[str, Any]:
    return asyncio.run(measure(setup, url, n, repeat))


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with throwaway_cluster() as cluster:
        yield cluster.url()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a PostgreSQL server to create the databases on")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per durability")
    parser.add_argument("--n", type=int, default=300, help="the wide_state size")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    with postgres(args.url) as server, tempfile.TemporaryDirectory() as folder:
        for setup in SETUPS:
            if setup.endswith("sqlite"):
                url = f"sqlite:///{Path(folder) / 'wide.db'}"
            else:
                url = create_database(server, "bench_" + setup.replace(" ", "_"))
            results[setup] = measure_apart(setup, url, args.n, args.repeat)
    theirs = results["langgraph postgres"]
    steps = theirs["steps"]
    print(f"wide_state({args.n}), {steps} streamed steps, median of {args.repeat} runs (ms)")
    print(f"| setup | durability | ms | ratio | <= {GOAL} |")
    print("|---|---|---:|---:|---|")
    for setup, result in results.items():
        for durability in DURABILITIES:
            ratio = result[durability] / theirs[durability]
            verdict = "-" if setup == "langgraph postgres" else "PASS" if ratio <= GOAL else "MISS"
            row = f"| {setup} | {durability} | {result[durability]:.1f} | {ratio:.2f} | {verdict} |"
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
