"""Scaling: 10, 100, 1,000 and 10,000 threads with one turn each; server memory and latency.

    .venv/bin/python bench/scaling.py [--sizes 10,100,1000,10000] [--concurrency 20]

One `threadline serve` process (the reminder agent, scripted model) on a throwaway
PostgreSQL. For each size, in order, users create threads until the server holds that
many, each playing one `runs/wait` turn (at most --concurrency at once); after a short
settle the server's RSS is read; then one more user alone plays PROBE_TURNS streamed turns:
the latency of a turn, and its first token, at that size. Between sizes the earlier threads
sit idle, so RSS should not grow with their number: an idle thread lives in the database,
not in the server.

Each new thread also brought a run, so last comes a control: --control-turns turns on
CONTROL_USERS threads only. Its RSS growth per turn is what runs alone cost; the growth
per new thread beyond it is the cost of an idle thread.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass

import httpx
from load import KEEPALIVE_S, LoadResult, process_usage, run_load
from servers import start_postgres, start_threadline

MESSAGE = "hello there"
PROBE_TURNS = 10
CONTROL_USERS = 20
SETTLE_S = 2.0


@dataclass
class Level:
    """One size: the batch that filled it, the server's RSS then, and the lone probe."""

    threads: int
    batch: LoadResult
    rss_mib: float
    probe: LoadResult


@dataclass
class Scaling:
    """Every size, then the control: `control_turns` turns on existing threads."""

    levels: list[Level]
    control_turns: int
    control_rss_mib: float  # RSS after the control; before it is the last level's

    @property
    def rss_growth_mib(self) -> float:
        """RSS at the largest size minus RSS at the smallest."""
        return self.levels[-1].rss_mib - self.levels[0].rss_mib

    @property
    def kib_per_new_thread(self) -> float:
        """RSS growth per thread (with its turn) between the last two sizes."""
        low, high = self.levels[-2], self.levels[-1]
        return (high.rss_mib - low.rss_mib) * 1024 / (high.threads - low.threads)

    @property
    def kib_per_turn(self) -> float:
        """RSS growth per turn of the control, which adds no threads but CONTROL_USERS."""
        return (self.control_rss_mib - self.levels[-1].rss_mib) * 1024 / self.control_turns

    @property
    def idle_thread_kib(self) -> float:
        """What a new thread costs beyond the run it had: the idle thread itself."""
        return self.kib_per_new_thread - self.kib_per_turn


async def _thread_count(http: httpx.AsyncClient) -> int:
    response = await http.post("/threads/count", json={})
    response.raise_for_status()
    return int(response.json())


async def _settled_rss_mib(pid: int) -> float:
    await asyncio.sleep(SETTLE_S)
    return process_usage([pid]).rss_kib / 1024


async def measure_scaling(
    url: str, pid: int, sizes: list[int], concurrency: int, control_turns: int
) -> Scaling:
    """Fill the server to each size in turn (sizes ascending) and measure it there, then
    run the control."""
    levels: list[Level] = []
    limits = httpx.Limits(keepalive_expiry=KEEPALIVE_S)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
        for size in sizes:
            # run_load's first request (does the server have POST /threads?) makes a thread.
            users = size - await _thread_count(http) - 1
            batch = await run_load(
                url, users, 1, "wait", "agent", MESSAGE, pid, concurrency=concurrency, warm_up=False
            )
            rss_mib = await _settled_rss_mib(pid)
            threads = await _thread_count(http)
            probe = await run_load(url, 1, PROBE_TURNS, "stream", "agent", MESSAGE, warm_up=False)
            levels.append(Level(threads, batch, rss_mib, probe))
    per_user = max(1, control_turns // CONTROL_USERS)
    await run_load(url, CONTROL_USERS, per_user, "wait", "agent", MESSAGE, warm_up=False)
    return Scaling(levels, CONTROL_USERS * per_user, await _settled_rss_mib(pid))


def run_scaling(sizes: list[int], concurrency: int = 20, control_turns: int = 1000) -> Scaling:
    with start_postgres() as database_url, start_threadline(database_url) as server:
        return asyncio.run(
            measure_scaling(server.url, server.pid, sizes, concurrency, control_turns)
        )


def format_scaling(result: Scaling) -> str:
    """One row per size; batch figures are under load, probe figures for a lone user."""

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    levels, base = result.levels, result.levels[0].rss_mib
    lines = [
        f"{'threads':>8} {'batch turns/s':>13} {'batch p50':>9} {'batch p99':>9} {'err':>4} "
        f"{'probe p50':>9} {'probe p99':>9} {'ttft p50':>8} {'RSS MiB':>8} {'growth':>7}"
    ]
    for level in levels:
        b, p = level.batch, level.probe
        lines.append(
            f"{level.threads:>8} {b.turns_per_s:>13.1f} {ms(b.latency_p50_ms):>9} "
            f"{ms(b.latency_p99_ms):>9} {b.errors + p.errors:>4} {ms(p.latency_p50_ms):>9} "
            f"{ms(p.latency_p99_ms):>9} {ms(p.ttft_p50_ms):>8} {level.rss_mib:>8.1f} "
            f"{level.rss_mib - base:>+7.1f}"
        )
    samples = [r.error_sample for level in levels for r in (level.batch, level.probe)]
    lines += [f"error sample: {sample}" for sample in samples if sample]
    if len(levels) > 1:
        lines += [
            f"RSS growth {levels[0].threads:,} -> {levels[-1].threads:,} threads: "
            f"{result.rss_growth_mib:+.1f} MiB; per new thread from {levels[-2].threads:,}: "
            f"{result.kib_per_new_thread:+.2f} KiB",
            f"control, {result.control_turns:,} turns on {CONTROL_USERS} threads: RSS "
            f"{result.control_rss_mib:.1f} MiB, {result.kib_per_turn:+.2f} KiB per turn; "
            f"so an idle thread costs {result.idle_thread_kib:+.2f} KiB",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,10000", help="thread counts, ascending")
    parser.add_argument("--concurrency", type=int, default=20, help="users playing at once")
    parser.add_argument("--control-turns", type=int, default=1000, help="turns of the control")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(format_scaling(run_scaling(sizes, args.concurrency, args.control_turns)))


if __name__ == "__main__":
    main()
