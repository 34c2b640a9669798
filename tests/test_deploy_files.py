"""The Dockerfile and docker-compose.yml against the code: no Docker engine runs in CI, so
these checks catch what `docker compose up` would only reveal at start-up: a command the
CLI does not have, a THREADLINE_* variable nothing reads, a database URL that names the
wrong host or credentials, files the image lacks."""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
import tomllib
import venv
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url

from app.cli import build_parser
from app.config import Settings, variables
from app.db.migrations import HISTORIES
from app.db.models import app_metadata
from engine.checkpoint.sql.models import checkpoint_metadata
from tests.multiprocess.topology import ROOT, compose, free_port, service

THREADLINE_SERVICES = {"migrate": "migrate", "api": "serve", "worker": "worker"}


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    pairs = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def instruction(keyword: str) -> list[str]:
    return [rest for key, rest in dockerfile() if key == keyword]


def variables_read_by_the_app() -> set[str]:
    """THREADLINE_* names the app reads: its Settings' (app/config.py has every one)."""
    return set(variables())


def test_the_app_reads_the_variables_this_test_looks_for() -> None:
    """Settings hold the variables of the server and of the default assistant's tools."""
    assert {"THREADLINE_DATABASE_URL", "THREADLINE_FORECAST_URL"} <= variables_read_by_the_app()


@pytest.mark.parametrize("name", sorted(THREADLINE_SERVICES))
def test_compose_commands_are_cli_commands(name: str) -> None:
    command, _ = service(name)
    args = build_parser(Settings()).parse_args(command)
    assert args.command == THREADLINE_SERVICES[name]
    if name == "api":
        assert args.no_worker, "runs belong to the worker service"


def test_compose_and_dockerfile_variables_exist() -> None:
    known = variables_read_by_the_app()
    used = {key for name in THREADLINE_SERVICES for key in service(name)[1]}
    for env in instruction("ENV"):
        used |= {pair.partition("=")[0] for pair in shlex.split(env)}
    used = {key for key in used if key.startswith("THREADLINE_")}
    assert used, "the files configure the server through THREADLINE_* variables"
    assert used <= known, f"not read by the app: {sorted(used - known)}"


def test_compose_database_url_reaches_the_postgres_service() -> None:
    services = compose()["services"]
    postgres = services["postgres"]["environment"]
    for name in THREADLINE_SERVICES:
        url = make_url(service(name)[1]["THREADLINE_DATABASE_URL"])
        assert url.host in services and url.host == "postgres"
        assert (url.username, url.password, url.database) == (
            postgres["POSTGRES_USER"],
            postgres["POSTGRES_PASSWORD"],
            postgres["POSTGRES_DB"],
        )


def test_compose_start_order_and_postgres_storage() -> None:
    spec = compose()
    services = spec["services"]
    assert "healthcheck" in services["postgres"]
    volume = services["postgres"]["volumes"][0].partition(":")[0]
    assert volume in spec["volumes"], "the data outlives the container"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("api", "worker"):
        condition = services[name]["depends_on"]["migrate"]["condition"]
        assert condition == "service_completed_successfully"


def test_compose_api_answers_on_localhost_8123() -> None:
    api = compose()["services"]["api"]
    command, environment = service("api")
    args = build_parser(Settings.from_env(environment)).parse_args(command)
    assert args.host == "0.0.0.0"
    assert f"8123:{args.port}" in api["ports"]
    probe = " ".join(api["healthcheck"]["test"])
    assert f"127.0.0.1:{args.port}/ok?check_db=1" in probe


def test_compose_worker_reaches_the_api_forecast_service() -> None:
    _, api_env = service("api")
    _, worker_env = service("worker")
    assert worker_env["THREADLINE_FORECAST_URL"] == (
        f"http://api:{api_env['THREADLINE_PORT']}/demo/forecast"
    )


def test_dockerfile_runs_the_threadline_command_as_a_user() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["threadline"] == "app.cli:main"
    [entrypoint] = instruction("ENTRYPOINT")
    assert json.loads(entrypoint) == ["threadline"]
    [cmd] = instruction("CMD")
    assert build_parser(Settings()).parse_args(json.loads(cmd)).command == "serve"
    [user] = instruction("USER")
    assert user not in ("root", "0")
    [port] = instruction("EXPOSE")
    assert int(port) == Settings().port


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages: the (INSTRUCTION, arguments) pairs of each, FROM first."""
    found: list[list[tuple[str, str]]] = []
    for keyword, rest in dockerfile():
        if keyword == "FROM":
            found.append([])
        found[-1].append((keyword, rest))
    return found


def of(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [rest for key, rest in stage if key == keyword]


def build_stage_sources() -> dict[str, Path]:
    """What the first stage copies from the build context: where each source lands."""
    build = stages()[0]
    [workdir] = of(build, "WORKDIR")
    copied: dict[str, Path] = {}
    for args in of(build, "COPY"):
        *sources, target = shlex.split(args)
        into = Path(workdir, target)
        copied.update({s: into / s if target.endswith("/") else into for s in sources})
    return copied


def wheel_sources() -> set[str]:
    """What the wheel is built from: the build files, the readme, and the folders that
    setup.py takes packages from (those it searches, and the one it renames)."""
    folders: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.keyword) and node.arg == "include":
            assert isinstance(node.value, ast.List)
            folders |= {ast.literal_eval(item).rstrip("*") for item in node.value.elts}
        elif isinstance(node, ast.keyword) and node.arg == "package_dir":
            assert isinstance(node.value, ast.Dict)
            folders |= {ast.literal_eval(value) for value in node.value.values}
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"]
    return {"pyproject.toml", "setup.py", readme, *folders}


def test_image_installs_the_wheel_built_from_the_sources_it_copies() -> None:
    """The first stage copies what the wheel is built from and builds it; the image
    installs the locked runtime dependencies, then that wheel, not editable (the
    migration scripts ride in it), and copies no source of its own."""
    build, image = stages()
    [workdir] = of(build, "WORKDIR")
    copied = build_stage_sources()
    needed = wheel_sources()
    assert {"alembic", "engine", "app"} <= needed
    assert needed <= set(copied)
    for source in needed:
        assert (ROOT / source).exists()
        assert copied[source] == Path(workdir, source)
    assert any(run.startswith("pip wheel --no-deps") for run in of(build, "RUN"))

    from_context = [shlex.split(args) for args in of(image, "COPY")]
    from_context = [args for args in from_context if not args[0].startswith("--from=")]
    assert [args[:-1] for args in from_context] == [["requirements.txt"]]
    runs = of(image, "RUN")
    assert any("pip install -r" in run and "requirements.txt" in run for run in runs)
    assert any("pip install --no-deps" in run and ".whl" in run for run in runs)
    assert not any(" -e " in run or "--editable" in run for run in runs)
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for source in {*needed, "requirements.txt"}:
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source


@pytest.mark.slow
def test_the_wheel_the_image_builds_migrates_a_database(tmp_path: Path) -> None:
    """The image's two stages without Docker: the wheel built from what the first stage
    copies, installed with the locked dependencies into a new venv (not editable, no
    source tree in reach), runs `threadline migrate` on a SQLite file."""
    source = tmp_path / "src"
    source.mkdir()
    for name in build_stage_sources():
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key != "PYTHONPATH" and not key.startswith("THREADLINE_")
    }
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "--wheel-dir", wheels, source], check=True)
    [wheel] = wheels.glob("threadline-*.whl")

    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    installed = [python, "-m", "pip", "--quiet", "install"]
    subprocess.run([*installed, "-r", ROOT / "requirements.txt"], check=True, env=environment)
    subprocess.run([*installed, "--no-deps", wheel], check=True, env=environment)
    where = subprocess.run(
        [python, "-c", "import app, threadline_migrations as m; print(app.__file__, *m.__path__)"],
        cwd=tmp_path,
        env=environment,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert all(Path(path).is_relative_to(tmp_path / "venv") for path in where), where
    # The engine's SQL store finds its migration scripts in the wheel too.
    store = (
        "from engine.store.sqlite import SqliteStore\n"
        "with SqliteStore.from_conn_string('store.db') as store:\n"
        "    store.put(('a',), 'k', {'v': 1})\n"
        "    assert store.get(('a',), 'k').value == {'v': 1}\n"
    )
    subprocess.run([python, "-c", store], cwd=tmp_path, env=environment, check=True)

    database = tmp_path / "data" / "threadline.db"
    subprocess.run(
        [tmp_path / "venv" / "bin" / "threadline", "migrate"],
        cwd=tmp_path,
        env={**environment, "THREADLINE_DATABASE_URL": f"sqlite:///{database}"},
        check=True,
    )
    with contextlib.closing(sqlite3.connect(database)) as db:
        tables = {
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    expected = {*checkpoint_metadata.tables, *app_metadata.tables}
    assert tables == expected | {history.version_table for history in HISTORIES}

    # The runtime dependencies are all the server needs: it serves on that database.
    port = free_port()
    server = subprocess.Popen(
        [tmp_path / "venv" / "bin" / "threadline", "serve", "--port", str(port)],
        cwd=tmp_path,
        env={**environment, "THREADLINE_DATABASE_URL": f"sqlite:///{database}"},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not ready(f"{url}/ok?check_db=1"):
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        assert httpx.post(f"{url}/threads", json={}).status_code == 200
    finally:
        server.terminate()
        server.wait(10)


def ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).is_success
    except httpx.TransportError:
        return False
