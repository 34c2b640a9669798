"""A throwaway PostgreSQL cluster for tests and benchmarks, and the pytest fixtures on it.

The cluster lives in a temporary directory (initdb, a free port, the unix socket inside
the directory) and is removed afterwards. PostgreSQL refuses to run as root, so as root
its commands run as the `postgres` OS user. With THREADLINE_TEST_DATABASE_URL set, tests
use that server instead and the tests that restart the server are skipped.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url

URL_VARIABLE = "THREADLINE_TEST_DATABASE_URL"
TEST_DATABASE = "threadline_test"
# Durability against a crash of the machine is not under test, only against a crash of
# the server process: the OS keeps what the server wrote, so fsync can be off.
_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "full_page_writes": "off",
    "max_connections": "300",
}


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError(
            "PostgreSQL is not installed (no initdb): install it (apt-get install postgresql) "
            f"or set {URL_VARIABLE} to a server the tests may use"
        )
    return Path(initdb).parent


def _version_key(path: str) -> int:
    return int(Path(path).parts[-3])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresCluster:
    """A cluster in `directory`, served on 127.0.0.1:`port` with trust authentication;
    `settings` change those of the tests."""

    directory: Path
    port: int
    settings: Mapping[str, str] = field(default_factory=dict)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = " ".join(f"-c {k}={v}" for k, v in {**_SETTINGS, **self.settings}.items())
        self._ctl("start", "-o", f"-p {self.port} -k {self.directory} {options}")

    def stop(self) -> None:
        self._ctl("stop", "-m", "immediate")

    def restart(self) -> None:
        """Kill the server the way a crash would (no shutdown checkpoint), start it again
        and wait until it accepts connections after recovery."""
        self._ctl("restart", "-m", "immediate")

    def create_database(self, name: str) -> str:
        return create_database(self.url(), name)

    def _ctl(self, *args: str) -> None:
        log = str(self.directory / "server.log")
        _run_as_postgres(str(_bin_dir() / "pg_ctl"), "-D", str(self.data), "-l", log, "-w", *args)

    @property
    def data(self) -> Path:
        return self.directory / "data"


def create_database(url: str, name: str) -> str:
    """A new empty database `name` on the server of `url` (replacing one of that name);
    returns its URL."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def _run_as_postgres(*command: str) -> None:
    if os.geteuid() == 0:
        command = ("runuser", "-u", "postgres", "--", *command)
    subprocess.run(command, check=True, capture_output=True)


@contextlib.contextmanager
def throwaway_cluster(settings: Mapping[str, str] | None = None) -> Iterator[PostgresCluster]:
    """A fresh running cluster (with `settings` besides the tests'), stopped and deleted on
    exit."""
    directory = Path(tempfile.mkdtemp(prefix="threadline-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres", "postgres")
        cluster = PostgresCluster(directory, _free_port(), dict(settings or {}))
        _run_as_postgres(
            str(_bin_dir() / "initdb"),
            "-D",
            str(cluster.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster | None]:
    """The test session's own cluster; None when THREADLINE_TEST_DATABASE_URL names one."""
    if os.environ.get(URL_VARIABLE):
        yield None
        return
    with throwaway_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def postgres_url(postgres_cluster: PostgresCluster | None) -> str:
    """URL of an empty database for the session (plain `postgresql://`, no driver)."""
    if postgres_cluster is None:
        return os.environ[URL_VARIABLE]
    return postgres_cluster.create_database(TEST_DATABASE)


@pytest.fixture(params=["sqlite", "postgres"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a database without tables, on each dialect (for migrations)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    cluster: PostgresCluster | None = request.getfixturevalue("postgres_cluster")
    server = cluster.url() if cluster else os.environ[URL_VARIABLE]
    return create_database(server, "threadline_empty")
