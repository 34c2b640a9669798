"""The docker-compose topology, run as plain processes (these machines have no Docker).

Each role runs the command and environment its compose service declares, so the tests
exercise the deployment that `docker compose up` starts: `migrate` once, then API
processes (`serve --no-worker`) and worker processes on one PostgreSQL. Only what
cannot be the same outside containers is overridden: the database URL, loopback
addresses with free ports, and the test settings (graphs, a short lease).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.multiprocess.graphs import GRAPHS, TRACE_VARIABLE

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
THREADLINE = ROOT / ".venv" / "bin" / "threadline"
LEASE_S = 3.0
STARTUP_TIMEOUT_S = 30.0
TEST_ENVIRONMENT = {
    "PYTHONPATH": str(ROOT),
    "THREADLINE_GRAPHS": json.dumps(GRAPHS),
    "THREADLINE_LEASE_S": str(LEASE_S),
    "THREADLINE_HEARTBEAT_S": "0.5",
    "THREADLINE_SHUTDOWN_GRACE_S": "2",
}


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def service(name: str) -> tuple[list[str], dict[str, str]]:
    """A compose service's command (the image's entrypoint arguments) and environment."""
    spec = compose()["services"][name]
    environment = {key: str(value) for key, value in (spec.get("environment") or {}).items()}
    return list(spec["command"]), environment


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # type: ignore[no-any-return]


@dataclass
class Process:
    """One `threadline` process; its stdout and stderr go to `log`."""

    role: str
    popen: subprocess.Popen[bytes]
    log: Path
    url: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash of the machine or the OOM killer would."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM (what `docker compose stop` sends), SIGKILL if it does not exit."""
        if not self.alive:
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def lines(self) -> list[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines() if line]

    def tail(self) -> str:
        return "\n".join(self.lines()[-30:])


@dataclass
class Deployment:
    """The processes of one deployment on `database_url`; files go to `directory`."""

    database_url: str
    directory: Path
    environment: Mapping[str, str] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)

    @property
    def trace(self) -> Path:
        """Where the `echo` graph records its executions."""
        return self.directory / "trace.jsonl"

    def _env(self, compose_env: Mapping[str, str], **overrides: str) -> dict[str, str]:
        return {
            **os.environ,
            **compose_env,
            **TEST_ENVIRONMENT,
            TRACE_VARIABLE: str(self.trace),
            **self.environment,
            "THREADLINE_DATABASE_URL": self.database_url,
            **overrides,
        }

    def _spawn(self, role: str, env: Mapping[str, str]) -> Process:
        command, _ = service(role)
        log = self.directory / f"{role}-{len(self.processes)}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [str(THREADLINE), *command], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        process = Process(role, popen, log)
        self.processes.append(process)
        return process

    def migrate(self) -> None:
        """The compose `migrate` service: runs once, must succeed."""
        command, compose_env = service("migrate")
        subprocess.run(
            [str(THREADLINE), *command], env=self._env(compose_env), check=True, capture_output=True
        )

    def api(self) -> Process:
        """An API replica on a free port, once it answers `/ok`."""
        _, compose_env = service("api")
        port = free_port()
        process = self._spawn(
            "api", self._env(compose_env, THREADLINE_HOST="127.0.0.1", THREADLINE_PORT=str(port))
        )
        process.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _answers(process.url):
            if not process.alive or time.monotonic() > deadline:
                process.stop()
                raise RuntimeError(f"the API did not start:\n{process.tail()}")
            time.sleep(0.1)
        return process

    def worker(self, api: Process) -> Process:
        """A worker process; its tools reach the forecast service of `api`."""
        _, compose_env = service("worker")
        forecast = f"{api.url}/demo/forecast"
        return self._spawn("worker", self._env(compose_env, THREADLINE_FORECAST_URL=forecast))

    def start(self, apis: int, workers: int) -> tuple[list[Process], list[Process]]:
        """`migrate`, then the API replicas, then the workers (forecasts go to the first API)."""
        self.migrate()
        api_processes = [self.api() for _ in range(apis)]
        worker_processes = [self.worker(api_processes[0]) for _ in range(workers)]
        return api_processes, worker_processes

    def by_pid(self, pid: int) -> Process:
        return next(p for p in self.processes if p.pid == pid)

    def close(self) -> None:
        """Stop every process at once, as `docker compose down` does."""
        for process in self.processes:
            if process.alive:
                process.popen.terminate()
        for process in self.processes:
            process.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1).is_success
    except httpx.TransportError:
        return False
