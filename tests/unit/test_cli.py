"""The `threadline` command line (app/cli.py): help without a command, --version, a
description, defaults and the variables read in every subcommand's help, `config`, and one
line naming the variable, not a traceback, for a setting that does not fit."""

from __future__ import annotations

import json
import os
import uuid
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from app import cli
from app.config import MASK, Settings, markdown_table, read_by, variable

COMMANDS = ("serve", "worker", "migrate", "users", "config")


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Settings]:
    """No project file in reach, no THREADLINE_* variable set, and logging left as pytest
    set it up; returns the settings each `logs.configure` call got."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("THREADLINE_"):
            monkeypatch.delenv(name)
    configured: list[Settings] = []
    monkeypatch.setattr(cli.logs, "configure", configured.append)
    return configured


def test_no_command_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    """As a usage error: a script that forgot the command does not go on as if it ran."""
    assert cli.main([]) == 2
    out = capsys.readouterr().err
    assert out.startswith("usage: threadline")
    for command in COMMANDS:
        assert f"    {command} " in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"threadline {version('threadline')}\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_describes_itself_and_the_variables_it_reads(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    _, description = cli.COMMANDS[command]
    assert " ".join(description.split()) in " ".join(out.split())
    if command != "config":
        assert "THREADLINE_DATABASE_URL" in out
        for name in read_by(command):
            assert f"  {variable(name)}, default: " in out


def test_serve_help_shows_the_defaults_and_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_PORT", "9001")
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "the port to listen on (default: 9001)" in out  # the environment's value
    assert "THREADLINE_PORT, default: 8123\n      the port serve listens on" in out
    assert "THREADLINE_JWT_SECRET, default: unset" in out
    assert "THREADLINE_FORECAST_DELAY_S" in out
    worker = cli.build_parser(Settings())._subparsers._group_actions[0].choices["worker"]  # type: ignore[union-attr]
    assert "THREADLINE_FORECAST_DELAY_S" not in worker.format_help()  # only serve reads it


def test_users_actions_have_descriptions() -> None:
    commands = cli.build_parser(Settings())._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    users = commands["users"]._subparsers._group_actions[0].choices
    assert {name: parser.description for name, parser in users.items()} == {
        "add": "Add a user.",
        "key": "Make an API key for a user (printed once).",
        "revoke": "Revoke an API key.",
    }


@pytest.mark.parametrize("command", [["migrate"], ["worker"], ["serve"], ["config"]])
def test_a_bad_setting_stops_any_command_with_one_line(
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated: list[Settings],
) -> None:
    monkeypatch.setenv("THREADLINE_PORT", "eighty")
    monkeypatch.setenv("THREADLINE_LOG_FORMAT", "xml")
    assert cli.main(command) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "threadline: THREADLINE_PORT: 'eighty' is not valid (input should be a valid "
        "integer, unable to parse string as an integer); accepted: an integer >= 0 and <= 65535",
        "threadline: THREADLINE_LOG_FORMAT: 'xml' is not valid (input should be 'json' or "
        "'text'); accepted: json, text",
    ]
    assert isolated == [], "nothing started"


def test_config_prints_values_defaults_and_meanings_with_secrets_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_JWT_SECRET", "a-secret-of-at-least-32-bytes-long")
    monkeypatch.setenv("THREADLINE_OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("THREADLINE_DATABASE_URL", "postgresql://app:hunter2@db/threadline")
    monkeypatch.setenv("THREADLINE_WORKERS", "7")
    assert cli.main(["config"]) == 0
    out = capsys.readouterr().out
    assert "secret-of" not in out and "sk-secret" not in out and "hunter2" not in out
    assert f"THREADLINE_JWT_SECRET={MASK}  (default: unset)" in out
    assert f"THREADLINE_OPENAI_API_KEY={MASK}" in out
    assert "THREADLINE_DATABASE_URL=postgresql://app:***@db/threadline" in out
    assert "THREADLINE_WORKERS=7  (default: 32)\n    runs one process executes at once" in out
    assert out.count("\nTHREADLINE_") + 1 == len(Settings.model_fields)


def test_config_names_variables_that_are_no_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_WORKER", "3")  # THREADLINE_WORKERS misspelt
    assert cli.main(["config"]) == 0
    assert capsys.readouterr().err == "threadline: not settings, ignored: THREADLINE_WORKER\n"


def test_config_markdown_is_the_docs_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["config", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown_table()


def test_a_project_file_fills_in_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The project's `env` goes into the environment under what is set; its path into
    config_file."""
    (tmp_path / "langgraph.json").write_text(
        json.dumps(
            {
                "graphs": {"a": "m:g"},
                "env": {"THREADLINE_WORKERS": "5", "THREADLINE_MAX_MESSAGES": "9"},
            }
        )
    )
    monkeypatch.setenv("THREADLINE_MAX_MESSAGES", "3")
    # Recorded as unset, so the variable the project sets goes away after the test.
    monkeypatch.setenv("THREADLINE_WORKERS", "")
    monkeypatch.delenv("THREADLINE_WORKERS")
    settings, opened = cli.load_settings()
    assert opened is not None and settings.config_file == str(tmp_path / "langgraph.json")
    assert (settings.workers, settings.max_messages) == (5, 3)


def test_a_project_file_that_cannot_be_read_stops_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "langgraph.json").write_text("{}")
    assert cli.main(["migrate"]) == 1
    assert capsys.readouterr().err.startswith("threadline: ")


def test_migrate_then_users(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated: list[Settings],
) -> None:
    monkeypatch.setenv("THREADLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'tl.db'}")
    monkeypatch.setenv("THREADLINE_LOG_LEVEL", "warning")
    assert cli.main(["migrate"]) == 0
    assert capsys.readouterr().out.endswith("is up to date\n")
    assert [s.log_level for s in isolated] == ["WARNING"]
    assert cli.main(["users", "add", "alice"]) == 0
    assert capsys.readouterr().out == "added user alice\n"
    assert cli.main(["users", "key", "alice"]) == 0
    assert capsys.readouterr().out.startswith("tl_")


def test_serve_passes_its_settings_to_the_app(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(cli.uvicorn, "run", lambda app, **options: served.append((app, options)))
    monkeypatch.setenv("THREADLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'tl.db'}")
    monkeypatch.setenv("THREADLINE_MAX_MESSAGES", "12")
    assert cli.main(["serve", "--no-worker", "--host", "[::1]", "--port", "9002"]) == 0
    [(app, options)] = served
    assert options == {"host": "::1", "port": 9002, "log_config": None}
    settings = app.state.settings
    assert (settings.run_workers, settings.max_messages) == (False, 12)
    # The default assistant's weather tool calls the demo service where serve listens.
    assert settings.forecast == "http://[::1]:9002/demo/forecast"
    assert "THREADLINE_RUN_WORKERS" not in os.environ


def test_serve_takes_the_project_by_config_as_langgraph_dev_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`threadline serve --config path/langgraph.json`, as a LangGraph user types it for
    `langgraph dev`: the project there, from any folder."""
    project_dir = tmp_path / "agent"
    project_dir.mkdir()
    (project_dir / "langgraph.json").write_text(
        json.dumps(
            {"graphs": {"echo": "app.agents.echo:graph"}, "env": {"THREADLINE_WORKERS": "7"}}
        )
    )
    served: list[Any] = []
    monkeypatch.setattr(cli.uvicorn, "run", lambda app, **options: served.append(app))
    monkeypatch.setenv("THREADLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'tl.db'}")
    monkeypatch.setenv("THREADLINE_WORKERS", "")
    monkeypatch.delenv("THREADLINE_WORKERS")
    path = str(project_dir / "langgraph.json")
    assert cli.main(["serve", "--config", path, "--port", "9003"]) == 0
    [app] = served
    assert (app.state.settings.config_file, app.state.settings.workers) == (path, 7)


@pytest.mark.parametrize("command", [["migrate"], ["worker"], ["serve"], ["users", "add", "bob"]])
def test_a_database_that_cannot_be_used_stops_the_command_with_one_line(
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated: list[Settings],
) -> None:
    """Refused, or behind: the setting and the driver's words, not a traceback."""
    monkeypatch.setattr(cli.uvicorn, "run", lambda app, **options: pytest.fail("served"))
    monkeypatch.setenv("THREADLINE_DATABASE_URL", "postgresql://app:hunter2@127.0.0.1:1/db")
    assert cli.main(command) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "threadline: THREADLINE_DATABASE_URL (postgresql://app:***@127.0.0.1:1/db): "
    )
    assert "hunter2" not in line and "Connect call failed" in line


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"THREADLINE_DATABASE_URL": "mysql://app@db/x"}, "a mysql database"),
        ({"THREADLINE_DATABASE_URL": "a-file.db"}, "not a database URL"),
        ({"THREADLINE_HOST": " "}, "THREADLINE_HOST: ' ' is not valid (empty"),
        (
            {"THREADLINE_HEARTBEAT_S": "3", "THREADLINE_LEASE_S": "2"},
            "THREADLINE_HEARTBEAT_S: '3' is not valid (more than half of THREADLINE_LEASE_S",
        ),
        ({"THREADLINE_LEASE_S": "inf"}, "THREADLINE_LEASE_S: 'inf' is not valid (input should"),
        ({"THREADLINE_EVENT_RETENTION_S": "1e300"}, "and <= 315360000"),
        ({"THREADLINE_GRAPHS": "agent=app.agents"}, "THREADLINE_GRAPHS: 'agent=app.agents'"),
        ({"THREADLINE_GRAPHS": "{}"}, "not a JSON object of graph ids"),
        ({"THREADLINE_WEBHOOK_ALLOW": "10.0.0.0/33"}, "'10.0.0.0/33' is no host name, address"),
        ({"THREADLINE_WEBHOOK_ALLOW": "*.internal"}, "'*.internal' is no host name"),
        ({"THREADLINE_OPENAI_BASE_URL": "ftp://models"}, "(not an http(s) URL)"),
        ({"THREADLINE_TTL_SWEEP_S": "5e-324"}, "shorter than 0.01 s"),
        ({"THREADLINE_DATABASE_URL": "sqlite+aiosqlite://"}, "an in-memory SQLite database"),
        ({"THREADLINE_GRAPHS": '{" ": "m:g"}'}, "graph id ' ' is empty"),
        ({"THREADLINE_GRAPHS": json.dumps({"g" * 201: "m:g"})}, "is over 200 characters"),
        ({"THREADLINE_GRAPHS": json.dumps({str(uuid.uuid4()): "m:g"})}, "reads as a UUID"),
        ({"THREADLINE_AUTH": "jwt"}, "THREADLINE_JWT_SECRET must be set"),
        (
            {"THREADLINE_AUTH": "jwt", "THREADLINE_JWT_ALGORITHM": "none"},
            "THREADLINE_JWT_ALGORITHM='none': use one of",
        ),
    ],
)
def test_settings_no_server_could_run_with_are_refused(
    variables: dict[str, str],
    named: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli.uvicorn, "run", lambda app, **options: pytest.fail("served"))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["serve"]) == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize(
    ("graph", "named"),
    [
        ("no_such_package.agent:graph", "ModuleNotFoundError: No module named 'no_such_package'"),
        ("app.agents.echo:no_graph", "AttributeError: module 'app.agents.echo' has no attribute"),
        ("./agent.py:graph", "FileNotFoundError: no file"),
        ("app.config:LONGEST_S", "is a int, not a StateGraph"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_graph_that_cannot_be_loaded_stops_the_command_with_one_line(
    command: str,
    graph: str,
    named: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(cli.uvicorn, "run", lambda app, **options: pytest.fail("served"))
    monkeypatch.setattr(cli, "run_loop", lambda main: pytest.fail("worked"))
    monkeypatch.setenv("THREADLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'tl.db'}")
    monkeypatch.setenv("THREADLINE_GRAPHS", json.dumps({"agent": graph}))
    assert cli.main([command]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("threadline: ") and f"{graph!r}" in line and named in line


def test_a_graph_whose_code_fails_shows_where(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(cli.uvicorn, "run", lambda app, **options: pytest.fail("served"))
    monkeypatch.setenv("THREADLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'tl.db'}")
    monkeypatch.setenv("THREADLINE_GRAPHS", json.dumps({"agent": "./agent.py:graph"}))
    (tmp_path / "agent.py").write_text("limit = int('ten')\n")
    assert cli.main(["serve"]) == 1
    first, *rest = capsys.readouterr().err.splitlines()
    assert first == (
        "threadline: Cannot load graph './agent.py:graph': ValueError: invalid literal for "
        "int() with base 10: 'ten'"
    )
    assert f'  File "{tmp_path / "agent.py"}", line 1, in <module>' in rest


def test_serve_port_is_checked_as_the_setting_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--port", "70000"])
    assert exited.value.code == 2
    assert "'70000' is not a port" in capsys.readouterr().err
    for host, why in ((" ", "empty: give an address"), ("127.0.0.1:9", "the port is")):
        with pytest.raises(SystemExit) as exited:
            cli.main(["serve", "--host", host])
        assert exited.value.code == 2
        assert why in capsys.readouterr().err


def test_a_password_given_as_a_parameter_is_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_DATABASE_URL", "postgresql://app@db/x?password=hunter2")
    assert cli.main(["config"]) == 0
    out = capsys.readouterr().out
    assert "hunter2" not in out and "THREADLINE_DATABASE_URL=postgresql://app@db/x?password=" in out
