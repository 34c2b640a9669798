"""The Dockerfile and docker-compose.yml against the code: no Docker engine runs in CI, so
these checks catch what `docker compose up` would only reveal at start-up: a command the
CLI does not have, a THREADLINE_* variable nothing reads, a database URL that names the
wrong host or credentials, files the image lacks."""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import make_url

from app.cli import build_parser
from app.config import Settings
from engine.checkpoint.sql.migrations import ALEMBIC_DIR
from tests.multiprocess.topology import ROOT, compose, service

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
    """THREADLINE_* names the code reads from the environment (`environ.get(NAME)`,
    `environ[NAME]`, `os.getenv(NAME)`), NAME a literal or a module-level constant."""
    names: set[str] = set()
    for path in (ROOT / "app").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        for key in _environment_keys(tree):
            value = key.value if isinstance(key, ast.Constant) else None
            if isinstance(key, ast.Name):
                value = constants.get(key.id)
            if isinstance(value, str) and value.startswith("THREADLINE_"):
                names.add(value)
    return names


def _environment_keys(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if (node.func.attr == "get" and owner.endswith("environ")) or (
                node.func.attr == "getenv" and owner == "os"
            ):
                yield node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
            yield node.slice


def test_the_app_reads_the_variables_this_test_looks_for() -> None:
    """The scan itself works: it finds variables of config.py and of other modules."""
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


def test_image_holds_the_packages_and_migrations_where_the_code_finds_them() -> None:
    """Migrations are found next to the packages (ALEMBIC_DIR), so the image copies both
    into its working directory and installs in place (editable)."""
    [workdir] = instruction("WORKDIR")
    copied: dict[str, Path] = {}
    for args in instruction("COPY"):
        *sources, target = shlex.split(args)
        into = Path(workdir, target)
        copied.update({s: into / s if target.endswith("/") else into for s in sources})
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {
        p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    needed = {"pyproject.toml", pyproject["project"]["readme"], ALEMBIC_DIR.name, *packages}
    assert needed <= set(copied)
    for source in needed:
        assert (ROOT / source).exists()
        assert copied[source] == Path(workdir, source)
    assert any("pip install -e ." in run for run in instruction("RUN"))
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for source in needed:
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source
