"""Servers for benchmarks: Threadline as subprocesses on free loopback ports, PostgreSQL,
and LangGraph's development server as the reference.

Benchmarks measure a real server process (its own interpreter, its own memory), not an
app inside the benchmark's event loop, so they start `threadline serve` like a user would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
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
# `make bench` installs the reference server in its own venv (see the Makefile).
LANGGRAPH = ROOT / ".venv-ref" / "bin" / "langgraph"
LG_AGENT = ROOT / "bench" / "lg_agent"


@dataclass
class Server:
    """Running server processes (the APIs first, one per url); `log` holds their output."""

    urls: list[str]
    processes: list[subprocess.Popen[bytes]]
    log: Path

    @property
    def url(self) -> str:
        return self.urls[0]

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


def _new_log() -> Path:
    return Path(tempfile.mkstemp(prefix="threadline-bench-", suffix=".log")[1])


def _spawn(
    command: list[str], env: Mapping[str, str], log: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def _wait_ok(server: Server, process: subprocess.Popen[bytes], url: str, timeout: float) -> None:
    """Wait until `url` answers `GET /ok`; on failure stop everything and raise with the log."""
    deadline = time.monotonic() + timeout
    while not _answers_ok(url):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = server.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{url} did not start (exit code {process.poll()}):\n{tail}")
        time.sleep(0.1)


def start_threadline(
    database_url: str,
    env: Mapping[str, str] | None = None,
    apis: int = 1,
    workers: int = 0,
    startup_timeout: float = 30.0,
) -> Server:
    """Start `apis` x `threadline serve`, each on a free port, and wait until they answer.

    With `workers` > 0 the APIs serve with `--no-worker` and that many `threadline worker`
    processes execute the runs: the multi-process layout. The APIs start one after the
    other and the workers last, so only the first creates the schema. Raises with the log
    tail if a process does not start.
    """
    # The scripted model at full speed (its default is a human pace), unless told otherwise.
    environ = {
        "THREADLINE_SCRIPTED_PACE_S": "0",
        **os.environ,
        **(env or {}),
        "THREADLINE_DATABASE_URL": database_url,
    }
    server = Server([], [], _new_log())
    for _ in range(apis):
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        command = [str(THREADLINE), "serve", "--port", str(port)]
        api = _spawn([*command, "--no-worker"] if workers else command, environ, server.log)
        server.urls.append(url)
        server.processes.append(api)
        _wait_ok(server, api, url, startup_timeout)
    for _ in range(workers):
        server.processes.append(_spawn([str(THREADLINE), "worker"], environ, server.log))
    return server


@contextlib.contextmanager
def start_langgraph_dev(
    config: str = "langgraph.json", startup_timeout: float = 120.0
) -> Iterator[Server]:
    """`langgraph dev` serving bench/lg_agent with the graphs of `config` there (in-memory
    runtime, default settings, no reload, no browser); its on-disk cache in that folder is
    removed before and after."""
    cache = LG_AGENT / ".langgraph_api"
    shutil.rmtree(cache, ignore_errors=True)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(LANGGRAPH), "dev", "--port", str(port), "--no-browser", "--no-reload"]
    command += ["--config", config]
    environ = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false"}
    server = Server([url], [], _new_log())
    try:
        server.processes.append(_spawn(command, environ, server.log, cwd=LG_AGENT))
        _wait_ok(server, server.processes[0], url, startup_timeout)
        yield server
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)


def _answers_ok(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1).is_success
    except httpx.TransportError:
        return False


def start_floor(database_url: str, startup_timeout: float = 30.0) -> Server:
    """Start bench/floor.py (the least a durable turn does) on a free port."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, str(ROOT / "bench" / "floor.py"), "--port", str(port)]
    server = Server([url], [], _new_log())
    server.processes.append(
        _spawn([*command, "--database-url", database_url], os.environ, server.log)
    )
    _wait_ok(server, server.processes[0], url, startup_timeout)
    return server


@contextlib.contextmanager
def start_postgres(settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL cluster (`settings` change the tests' ones: fsync and
    full-page writes off); yields the URL of an empty `threadline` database."""
    with throwaway_cluster(settings) as cluster:
        yield cluster.create_database("threadline")
