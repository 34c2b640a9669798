"""HTTP load generator: K chat users, each on its own thread, each sending T turns in a row.

It speaks only the Agent Server API, so the same run measures Threadline or LangGraph's
dev server. Per turn it times the whole request and, when streaming, the first token;
the report gives throughput, latency percentiles, errors and the server's memory and CPU.
Run `.venv/bin/python bench/load.py --url http://127.0.0.1:8123 --users 50 --turns 4
--mode both [--pid PID] [--json out.json]`; other scripts call `run_load` directly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import ssl
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

Mode = Literal["wait", "stream"]
STREAM_MODES = ["messages-tuple", "values"]
RSS_SAMPLE_S = 0.5
# Below uvicorn's 5 s keep-alive, so the client never reuses a connection the server is
# closing at that very moment (a spurious ReadError).
KEEPALIVE_S = 2.0
# One TLS context for every user's client: httpx makes one per client otherwise (17 ms
# of CPU each, loading the CA bundle), even for plain http.
TLS = ssl.create_default_context()
ONE_CONNECTION = httpx.Limits(
    max_connections=1, max_keepalive_connections=1, keepalive_expiry=KEEPALIVE_S
)


class TurnError(Exception):
    """A turn the server did not complete: its message goes into the report."""


# What a failed request can raise: a malformed body surfaces as ValueError or LookupError.
FAILURES = (TurnError, httpx.HTTPError, TimeoutError, ValueError, LookupError)


@dataclass
class Turn:
    """Timings of one completed turn, in seconds."""

    latency: float
    first_token: float | None = None


@dataclass
class ProcessUsage:
    """Resident memory and CPU time of a process tree at one moment."""

    rss_kib: int
    cpu_s: float


@dataclass
class LoadResult:
    """What one measured run produced; times in milliseconds, memory in MiB."""

    url: str
    mode: Mode
    users: int
    turns: int
    planned: int
    completed: int
    errors: int
    error_sample: str | None
    wall_s: float
    turns_per_s: float
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p99_ms: float | None
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    capped: bool
    client_cpu_s: float
    server_cpu_s: float | None = None
    rss_before_mib: float | None = None
    rss_peak_mib: float | None = None
    rss_after_mib: float | None = None
    # Threadline before its threads API: threads are created by the first run instead.
    threads_by_run: bool = False


@dataclass
class _Tally:
    """Shared by all users of a run, so one place collects turns and errors."""

    turns: list[Turn] = field(default_factory=list)
    errors: int = 0
    error_sample: str | None = None

    def error(self, message: str) -> None:
        self.errors += 1
        if self.error_sample is None:
            self.error_sample = message


class _Client:
    """One chat user's requests; knows how to open a thread and play a turn in one mode."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        mode: Mode,
        assistant: str,
        message: str,
        timeout: float,
        *,
        threads_by_run: bool = False,
    ) -> None:
        self.http = http
        self.mode = mode
        self.assistant = assistant
        self.message = message
        self.timeout = timeout
        self.body: dict[str, Any] = {
            "assistant_id": assistant,
            "input": {"messages": [{"role": "user", "content": message}]},
        }
        if mode == "stream":
            self.body["stream_mode"] = STREAM_MODES
        self.threads_by_run = False
        if threads_by_run:
            self._create_threads_by_run()

    def _create_threads_by_run(self) -> None:
        self.threads_by_run = True
        self.body["if_not_exists"] = "create"

    async def detect_threads_api(self) -> None:
        """Fall back to `if_not_exists: create` on a server that has no `POST /threads`."""
        response = await self.http.post("/threads", json={})
        if response.status_code == 404:
            self._create_threads_by_run()

    def sibling(self, http: httpx.AsyncClient) -> _Client:
        """Another user of the same server, on connections of its own."""
        return _Client(
            http,
            self.mode,
            self.assistant,
            self.message,
            self.timeout,
            threads_by_run=self.threads_by_run,
        )

    async def create_thread(self) -> str:
        if self.threads_by_run:
            return str(uuid.uuid4())
        async with asyncio.timeout(self.timeout):
            response = await self.http.post("/threads", json={})
        _check_status(response)
        return response.json()["thread_id"]

    async def turn(self, thread_id: str) -> Turn:
        started = time.perf_counter()
        async with asyncio.timeout(self.timeout):
            if self.mode == "wait":
                await self._wait(thread_id)
                return Turn(time.perf_counter() - started)
            first_token = await self._stream(thread_id, started)
        return Turn(time.perf_counter() - started, first_token)

    async def _wait(self, thread_id: str) -> None:
        response = await self.http.post(f"/threads/{thread_id}/runs/wait", json=self.body)
        _check_status(response)
        values = response.json()
        if isinstance(values, dict) and "__error__" in values:
            raise TurnError(f"run failed: {json.dumps(values['__error__'])[:200]}")

    async def _stream(self, thread_id: str, started: float) -> float | None:
        """Read the stream to its end; return the time to the first token."""
        first_token: float | None = None
        url = f"/threads/{thread_id}/runs/stream"
        async with self.http.stream("POST", url, json=self.body) as response:
            if not response.is_success:
                await response.aread()
                _check_status(response)
            async for event, data in sse_events(response):
                if event == "error":
                    raise TurnError(f"error event: {data[:200]}")
                if first_token is None and _is_token(event, data):
                    first_token = time.perf_counter() - started
        return first_token


def _check_status(response: httpx.Response) -> None:
    if not response.is_success:
        path = response.request.url.path
        raise TurnError(f"HTTP {response.status_code} {path}: {response.text[:200]}")


def _is_token(event: str, data: str) -> bool:
    """The first `messages` chunk with content, or any `messages/partial`, is a token."""
    if event == "messages/partial":
        return True
    if event != "messages":
        return False
    chunk = json.loads(data)[0]
    return bool(isinstance(chunk, dict) and chunk.get("content"))


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """(event, data) pairs of an SSE body; comments and ids are skipped."""
    event, data = "message", []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


async def _play_user(client: _Client, turns: int, tally: _Tally) -> None:
    """One user: a thread, then its turns one after another; a failed turn does not stop it."""
    try:
        thread_id = await client.create_thread()
    except FAILURES as exc:
        tally.error(f"create thread: {_describe(exc)}")
        return
    for _ in range(turns):
        try:
            tally.turns.append(await client.turn(thread_id))
        except FAILURES as exc:
            tally.error(_describe(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def percentile(values: list[float], p: float) -> float | None:
    """Linear interpolation between closest ranks, in milliseconds."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return 1000 * (ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def process_usage(pids: Iterable[int]) -> ProcessUsage:
    """RSS and CPU time summed over the given processes and all their descendants."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                parents.setdefault(ppid, []).append(int(entry.name))
    tree, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo.extend(parents.get(pid, []))
    rss_kib, ticks = 0, 0
    for pid in tree:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss_kib += int(line.split()[1])
    return ProcessUsage(rss_kib, ticks / os.sysconf("SC_CLK_TCK"))


async def sample_peak_rss(pids: list[int], peak: list[int]) -> None:
    """Sample the tree's RSS until cancelled; keeps the largest in `peak[0]`."""
    while True:
        usage = await asyncio.to_thread(process_usage, pids)
        peak[0] = max(peak[0], usage.rss_kib)
        await asyncio.sleep(RSS_SAMPLE_S)


async def run_load(
    url: str | list[str],
    users: int,
    turns: int,
    mode: Mode,
    assistant: str,
    message: str,
    pid: int | list[int] | None = None,
    *,
    timeout: float = 60.0,
    max_seconds: float = 600.0,
    concurrency: int | None = None,
    warm_up: bool = True,
) -> LoadResult:
    """Warm up with one turn of one extra user (unless not `warm_up`), then play `users` x
    `turns` and measure.

    Each user has a connection of its own. Several URLs (API processes sharing one
    database) split the users between them, round robin, and each gets its own warm-up.
    `pid` (or several, e.g. API servers and their worker processes) adds memory and CPU of
    those process trees. `concurrency` caps the users playing at once (default: all). A
    request taking over `timeout` seconds counts as an error; past `max_seconds` the
    remaining users are cancelled and the result is marked `capped`.
    """
    urls = [url] if isinstance(url, str) else url
    pids = [pid] if isinstance(pid, int) else list(pid or [])
    slots = asyncio.Semaphore(min(users, concurrency or users))

    def connection(base_url: str) -> httpx.AsyncClient:
        # A user's own connection, as each user is a browser of its own. One pool for all
        # users costs httpx work per request in proportion to the requests in flight: at
        # 100 users the client took 8.8 ms of CPU a turn, on the cores the server runs on.
        return httpx.AsyncClient(
            base_url=base_url, timeout=timeout, limits=ONE_CONNECTION, verify=TLS
        )

    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for base_url in urls:
            http = await stack.enter_async_context(connection(base_url))
            clients.append(_Client(http, mode, assistant, message, timeout))
        before = process_usage(pids) if pids else None
        for client in clients:
            await client.detect_threads_api()
            if warm_up:
                warm_up_tally = _Tally()
                await _play_user(client, 1, warm_up_tally)
                if warm_up_tally.error_sample is not None:
                    raise RuntimeError(f"warm-up turn failed: {warm_up_tally.error_sample}")

        async def play(lead: _Client) -> None:
            async with slots, connection(str(lead.http.base_url)) as http:
                await _play_user(lead.sibling(http), turns, tally)

        tally = _Tally()
        peak = [before.rss_kib if before else 0]
        sampler = asyncio.create_task(sample_peak_rss(pids, peak)) if pids else None
        cpu_started = time.process_time()
        started = time.perf_counter()
        tasks = [asyncio.create_task(play(clients[i % len(clients)])) for i in range(users)]
        _, pending = await asyncio.wait(tasks, timeout=max_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        wall = time.perf_counter() - started
        client_cpu = time.process_time() - cpu_started
        if sampler is not None:
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)
        if pending:
            tally.error(f"total time cap of {max_seconds:g} s reached")

    after = process_usage(pids) if pids else None
    latencies = [t.latency for t in tally.turns]
    first_tokens = [t.first_token for t in tally.turns if t.first_token is not None]
    return LoadResult(
        url=" + ".join(urls),
        mode=mode,
        users=users,
        turns=turns,
        planned=users * turns,
        completed=len(tally.turns),
        errors=tally.errors,
        error_sample=tally.error_sample,
        wall_s=wall,
        turns_per_s=len(tally.turns) / wall,
        latency_p50_ms=percentile(latencies, 50),
        latency_p90_ms=percentile(latencies, 90),
        latency_p99_ms=percentile(latencies, 99),
        ttft_p50_ms=percentile(first_tokens, 50),
        ttft_p90_ms=percentile(first_tokens, 90),
        capped=bool(pending),
        client_cpu_s=client_cpu,
        server_cpu_s=after.cpu_s - before.cpu_s if before and after else None,
        rss_before_mib=before.rss_kib / 1024 if before else None,
        rss_peak_mib=max(peak[0], after.rss_kib) / 1024 if after else None,
        rss_after_mib=after.rss_kib / 1024 if after else None,
        threads_by_run=any(client.threads_by_run for client in clients),
    )


def _cell(value: float | None, width: int, digits: int = 1) -> str:
    return f"{'-' if value is None else f'{value:.{digits}f}':>{width}}"


def format_report(results: list[LoadResult]) -> str:
    """A fixed-width table, one row per mode, then error samples and notes."""
    first = results[0]
    lines = [
        f"load: {first.url}  users={first.users}  turns={first.turns}",
        f"{'mode':<6} {'ok/planned':>10} {'err':>4} {'wall s':>7} {'turns/s':>8} "
        f"{'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'ttft50':>7} {'ttft90':>7} "
        f"{'cli cpu':>7} {'srv cpu':>7} {'RSS MiB before/peak/after':>26}",
    ]
    for r in results:
        rss = (
            "-"
            if r.rss_after_mib is None
            else f"{r.rss_before_mib:.0f} / {r.rss_peak_mib:.0f} / {r.rss_after_mib:.0f}"
        )
        lines.append(
            f"{r.mode:<6} {f'{r.completed}/{r.planned}':>10} {r.errors:>4} {_cell(r.wall_s, 7, 2)} "
            f"{_cell(r.turns_per_s, 8)} {_cell(r.latency_p50_ms, 7)} {_cell(r.latency_p90_ms, 7)} "
            f"{_cell(r.latency_p99_ms, 7)} {_cell(r.ttft_p50_ms, 7)} {_cell(r.ttft_p90_ms, 7)} "
            f"{_cell(r.client_cpu_s, 7, 2)} {_cell(r.server_cpu_s, 7, 2)} {rss:>26}"
        )
    for r in results:
        if r.error_sample is not None:
            lines.append(f"error sample ({r.mode}): {r.error_sample}")
        if r.capped:
            lines.append(f"note ({r.mode}): stopped at the total time cap")
    if any(r.threads_by_run for r in results):
        lines.append("note: no POST /threads on this server; threads created by the first run")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", action="append", help="server URL, repeatable (default http://127.0.0.1:8123)"
    )
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--assistant", default="agent")
    parser.add_argument("--mode", choices=["wait", "stream", "both"], default="both")
    parser.add_argument("--message", default="hi")
    parser.add_argument("--pid", type=int, action="append", help="server pid (repeatable)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="cap per mode")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    args.url = args.url or ["http://127.0.0.1:8123"]
    return args


async def main() -> None:
    args = parse_args()
    modes: list[Mode] = ["wait", "stream"] if args.mode == "both" else [args.mode]
    try:
        results = [await _run_mode(args, mode) for mode in modes]
    except (RuntimeError, httpx.HTTPError) as exc:
        raise SystemExit(f"load: {exc}") from None
    print(format_report(results))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")


async def _run_mode(args: argparse.Namespace, mode: Mode) -> LoadResult:
    return await run_load(
        args.url,
        args.users,
        args.turns,
        mode,
        args.assistant,
        args.message,
        args.pid,
        timeout=args.timeout,
        max_seconds=args.max_seconds,
    )


if __name__ == "__main__":
    asyncio.run(main())
