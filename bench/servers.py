"""Servers for benchmarks: Threadline as subprocesses on a free loopback port, PostgreSQL.

Benchmarks measure a real server process (its own interpreter, its own memory), not an
app inside the benchmark's event loop, so they start `threadline serve` like a user would.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

# The repo root must be importable for `tests.pg` when run as `python bench/...`.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.pg import throwaway_cluster  # noqa: E402

THREADLINE = ROOT / ".venv" / "bin" / "threadline"


@dataclass
class Server:
    """Running server processes (the API first); `log` holds their combined output."""

    url: str
    processes: list[subprocess.Popen[bytes]]
    log: Path

    @property
    def pid(self) -> int:
        return self.processes[0].pid

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def stop(self) -> None:
        """Terminate (SIGTERM, then SIGKILL after 10 s) and reap every process."""
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_threadline(
    database_url: str,
    env: Mapping[str, str] | None = None,
    workers_cmd: bool = False,
    startup_timeout: float = 30.0,
) -> Server:
    """Start `threadline serve` on a free port and wait until `GET /ok` answers.

    With `workers_cmd` the API serves with `--no-worker` and a `threadline worker` process
    executes the runs, the multi-process layout; it starts once the API answers, so the
    schema the API creates is there. Raises with the log tail if the API does not start.
    """
    port = _free_port()
    environ = {**os.environ, **(env or {}), "THREADLINE_DATABASE_URL": database_url}
    log = Path(tempfile.mkstemp(prefix="threadline-bench-", suffix=".log")[1])

    def spawn(*args: str) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            command = [str(THREADLINE), *args]
            return subprocess.Popen(command, env=environ, stdout=out, stderr=subprocess.STDOUT)

    api = spawn("serve", "--port", str(port), *(["--no-worker"] if workers_cmd else []))
    server = Server(f"http://127.0.0.1:{port}", [api], log)
    deadline = time.monotonic() + startup_timeout
    while not _answers_ok(server.url):
        if api.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"threadline did not start (exit code {api.poll()}):\n{tail}")
        time.sleep(0.1)
    if workers_cmd:
        server.processes.append(spawn("worker"))
    return server


def _answers_ok(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1).is_success
    except httpx.TransportError:
        return False


@contextlib.contextmanager
def start_postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster; yields the URL of an empty `threadline` database."""
    with throwaway_cluster() as cluster:
        yield cluster.create_database("threadline")
