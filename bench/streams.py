"""Many concurrent SSE streams on one server process: its memory and the slowest delay.

    .venv/bin/python bench/streams.py [--streams 1000] [--ticks 10] [--interval 0.15]

One `threadline serve` process (on a throwaway PostgreSQL, executing every run itself)
serves the `ticker` graph (bench/stream_graph.py). The client creates one thread per
stream, then opens the streams (`POST /threads/{id}/runs/stream`, custom mode), at most
50 waiting for their run to start at a time, as a crowd arriving rather than one burst,
and holds them all. Once every run has said `ready` it creates the start file, and each
run sends `ticks` events `interval` seconds apart. Reported: streams completed, the most
open at once, the server's RSS (before the streams, peak, after), and the delay from an
event's creation in the node to its receipt here: p50, p99 and the slowest stream's
worst delay.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from load import (
    FAILURES,
    KEEPALIVE_S,
    TurnError,
    percentile,
    process_usage,
    sample_peak_rss,
    sse_events,
)
from servers import ROOT, start_postgres, start_threadline

GRAPH_ID = "ticker"
CREATE_AT_ONCE = 50
OPENING_AT_ONCE = 50
# Bounds: opening may take this long per stream, and the ticks this long after their end.
OPEN_S_PER_STREAM = 0.2
FINISH_GRACE_S = 60.0


@dataclass
class StreamsResult:
    """What one run of many streams measured; times in milliseconds, memory in MiB."""

    streams: int
    completed: int
    errors: int
    error_sample: str | None
    peak_open: int
    ready_before_start: int
    open_s: float
    delay_p50_ms: float | None
    delay_p99_ms: float | None
    slowest_stream_ms: float | None
    rss_before_mib: float
    rss_peak_mib: float
    rss_after_mib: float
    client_cpu_s: float

    @property
    def kib_per_stream(self) -> float:
        return (self.rss_peak_mib - self.rss_before_mib) * 1024 / self.streams


@dataclass
class _Tracker:
    """Shared by all streams: how many are open and ready, and what each one measured."""

    opening: asyncio.Semaphore
    open: int = 0
    peak_open: int = 0
    ready: int = 0
    completed: int = 0
    worst_delays: list[float] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    errors: int = 0
    error_sample: str | None = None

    def error(self, message: str) -> None:
        self.errors += 1
        self.error_sample = self.error_sample or message


async def _follow(
    http: httpx.AsyncClient, thread_id: str, body: dict[str, Any], t: _Tracker
) -> None:
    """One stream from its run's creation to its end; an error is counted, not raised.
    It holds an opening slot until its run says `ready`."""
    opened = ready = False
    delays: list[float] = []
    await t.opening.acquire()
    try:
        async with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as resp:
            if not resp.is_success:
                raise TurnError(f"HTTP {resp.status_code}: {(await resp.aread())[:200]!r}")
            async for event, data in sse_events(resp):
                received = time.time()
                if event == "metadata" and not opened:
                    opened = True
                    t.open += 1
                    t.peak_open = max(t.peak_open, t.open)
                elif event == "custom":
                    payload = json.loads(data)
                    if "ready" in payload and not ready:
                        ready = True
                        t.ready += 1
                        t.opening.release()
                    elif "created" in payload:
                        delays.append(received - payload["created"])
                elif event == "error":
                    raise TurnError(f"error event: {data[:200]}")
        t.completed += 1
        t.delays += delays
        t.worst_delays.append(max(delays, default=0.0))
    except FAILURES as exc:
        t.error(f"{type(exc).__name__}: {exc}")
    finally:
        t.open -= opened
        if not ready:
            t.opening.release()


async def _create_threads(http: httpx.AsyncClient, count: int) -> list[str]:
    slots = asyncio.Semaphore(CREATE_AT_ONCE)

    async def create() -> str:
        async with slots:
            response = await http.post("/threads", json={})
            response.raise_for_status()
            return response.json()["thread_id"]

    return await asyncio.gather(*(create() for _ in range(count)))


async def measure_streams(
    url: str, pid: int, streams: int, ticks: int, interval: float
) -> StreamsResult:
    """Open `streams` streams, start their ticks once all runs are ready, measure."""
    open_limit_s = OPEN_S_PER_STREAM * streams + 10
    limits = httpx.Limits(max_connections=streams, keepalive_expiry=KEEPALIVE_S)
    timeout = httpx.Timeout(open_limit_s + ticks * interval + FINISH_GRACE_S)
    async with (
        httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as http,
        _start_file() as start_file,
    ):
        thread_ids = await _create_threads(http, streams)
        before = process_usage([pid])
        peak = [before.rss_kib]
        sampler = asyncio.create_task(sample_peak_rss([pid], peak))
        cpu_started = time.process_time()
        started = time.monotonic()
        tracker = _Tracker(asyncio.Semaphore(OPENING_AT_ONCE))
        body = {
            "assistant_id": GRAPH_ID,
            "input": {
                "start_file": str(start_file),
                "max_wait": open_limit_s,
                "ticks": ticks,
                "interval": interval,
            },
            "stream_mode": ["custom"],
        }
        tasks = [asyncio.create_task(_follow(http, tid, body, tracker)) for tid in thread_ids]
        while (
            tracker.ready + tracker.errors < streams and time.monotonic() - started < open_limit_s
        ):
            await asyncio.sleep(0.05)
        open_s, ready_before_start = time.monotonic() - started, tracker.ready
        start_file.touch()
        _, pending = await asyncio.wait(tasks, timeout=ticks * interval + FINISH_GRACE_S)
        for task in pending:
            task.cancel()
            tracker.error(f"did not finish {FINISH_GRACE_S:g} s after its last tick was due")
        await asyncio.gather(*pending, return_exceptions=True)
        client_cpu = time.process_time() - cpu_started
        sampler.cancel()
        await asyncio.gather(sampler, return_exceptions=True)
    after = process_usage([pid])
    return StreamsResult(
        streams=streams,
        completed=tracker.completed,
        errors=tracker.errors,
        error_sample=tracker.error_sample,
        peak_open=tracker.peak_open,
        ready_before_start=ready_before_start,
        open_s=open_s,
        delay_p50_ms=percentile(tracker.delays, 50),
        delay_p99_ms=percentile(tracker.delays, 99),
        slowest_stream_ms=percentile(tracker.worst_delays, 100),
        rss_before_mib=before.rss_kib / 1024,
        rss_peak_mib=max(peak[0], after.rss_kib) / 1024,
        rss_after_mib=after.rss_kib / 1024,
        client_cpu_s=client_cpu,
    )


@contextlib.asynccontextmanager
async def _start_file() -> AsyncIterator[Path]:
    """The path of the barrier file (not created yet), in a directory removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="threadline-streams-") as directory:
        yield Path(directory) / "start"


def raise_open_files(needed: int) -> None:
    """Each stream is a socket on both ends (the server inherits this process's limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


def run_streams(streams: int, ticks: int = 10, interval: float = 0.15) -> StreamsResult:
    """Start PostgreSQL and one server process sized for `streams` runs at once; measure."""
    raise_open_files(4 * streams + 1024)
    env = {
        "PYTHONPATH": str(ROOT),
        "THREADLINE_GRAPHS": json.dumps({GRAPH_ID: "bench.stream_graph:graph"}),
        # Every run executes at once, and no per-user limit refuses the benchmark's streams.
        "THREADLINE_WORKERS": str(streams),
        "THREADLINE_MAX_STREAMS_PER_USER": "0",
        "THREADLINE_MAX_QUEUED_RUNS_PER_USER": "0",
    }
    with start_postgres() as database_url, start_threadline(database_url, env) as server:
        return asyncio.run(measure_streams(server.url, server.pid, streams, ticks, interval))


def format_streams(r: StreamsResult) -> str:
    """A few labelled lines; the delays are wall clock, creation in the node to receipt."""
    lines = [
        f"streams: {r.streams} on one server process; {r.completed} completed, {r.errors} "
        f"errors; {r.peak_open} open at once (all ready after {r.open_s:.1f} s); "
        f"{r.ready_before_start} runs ready before the ticks started",
        f"  server RSS MiB before/peak/after: {r.rss_before_mib:.0f} / {r.rss_peak_mib:.0f} / "
        f"{r.rss_after_mib:.0f}  ({r.kib_per_stream:.0f} KiB per stream at the peak)",
        f"  event delay ms: p50 {_ms(r.delay_p50_ms)}, p99 {_ms(r.delay_p99_ms)}, slowest "
        f"stream {_ms(r.slowest_stream_ms)}  (client CPU {r.client_cpu_s:.1f} s)",
    ]
    if r.error_sample:
        lines.append(f"  error sample: {r.error_sample}")
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=10, help="events per stream")
    parser.add_argument("--interval", type=float, default=0.15, help="seconds between ticks")
    args = parser.parse_args()
    print(format_streams(run_streams(args.streams, args.ticks, args.interval)))


if __name__ == "__main__":
    main()
