"""Settings (app/config.py): every THREADLINE_* variable typed, read from the environment by
`from_env`/`get_settings` only, checked with errors that name the variable, and the table
of docs/operations.md generated from the class."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.config import (
    MASK,
    Settings,
    SettingsError,
    accepted,
    get_settings,
    markdown_table,
    read_by,
    variable,
    variables,
)

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"


def test_arguments_alone_make_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Settings(...)` does not read the environment, so a test's settings are its own."""
    monkeypatch.setenv("THREADLINE_PORT", "9999")
    monkeypatch.setenv("THREADLINE_GRAPHS", '{"x": "m:g"}')
    assert Settings().port == 8123 and Settings().graphs == ""
    assert Settings(port=1, config_file="a.json").config_file == "a.json"
    assert Settings() == Settings() and hash(Settings()) == hash(Settings())
    with pytest.raises(ValueError):
        Settings(no_such_setting=1)  # type: ignore[call-arg]


def test_the_environment_is_read_by_from_env_and_get_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings.from_env({}) == Settings()
    monkeypatch.setenv("THREADLINE_WORKERS", "3")
    assert get_settings().workers == 3
    monkeypatch.setenv("THREADLINE_WORKERS", "4")  # a change takes effect at once
    assert get_settings().workers == 4
    monkeypatch.delenv("THREADLINE_WORKERS")
    assert get_settings().workers == 32


def test_each_type_is_read_from_its_text() -> None:
    settings = Settings.from_env(
        {
            "THREADLINE_PORT": "9000",
            "THREADLINE_LEASE_S": "2.5",
            "THREADLINE_RUN_WORKERS": "no",
            "THREADLINE_AUTH": "API_KEY",
            "THREADLINE_LOG_FORMAT": " Text ",
            "THREADLINE_LOG_LEVEL": "debug",
            "THREADLINE_CONFIG": "project/langgraph.json",
            "THREADLINE_CORS_ORIGINS": "https://a.example, https://b.example,",
            "THREADLINE_WEBHOOK_ALLOW": "127.0.0.1,10.0.0.0/8",
            "THREADLINE_MODEL": "openai:gpt-4o-mini",
            "THREADLINE_TIMEZONE": "Europe/Paris",
            "UNRELATED": "x",
        }
    )
    assert (settings.port, settings.lease_s, settings.run_workers) == (9000, 2.5, False)
    assert (settings.auth, settings.log_format, settings.log_level) == ("api_key", "text", "DEBUG")
    assert settings.config_file == "project/langgraph.json"
    assert settings.cors_origins == ("https://a.example", "https://b.example")
    assert settings.webhook_allow == ("127.0.0.1", "10.0.0.0/8")
    assert (settings.model, settings.timezone) == ("openai:gpt-4o-mini", "Europe/Paris")
    # Unset, every origin; set but empty, none.
    assert Settings.from_env({}).cors_origins is None
    assert Settings.from_env({"THREADLINE_CORS_ORIGINS": ""}).cors_origins == ()
    assert Settings.from_env({"THREADLINE_MODEL": " "}).model == "scripted"


@pytest.mark.parametrize(
    ("text", "value"),
    [(t, True) for t in ("1", "true", "True", "yes", "on")]
    + [(t, False) for t in ("0", "false", "FALSE", "no", "off")],
)
def test_booleans_take_the_usual_words(text: str, value: bool) -> None:
    assert Settings.from_env({"THREADLINE_RUN_WORKERS": text}).run_workers is value


@pytest.mark.parametrize(
    ("environ", "line"),
    [
        (
            {"THREADLINE_PORT": "eighty"},
            "THREADLINE_PORT: 'eighty' is not valid (input should be a valid integer, unable "
            "to parse string as an integer); accepted: an integer >= 0 and <= 65535",
        ),
        (
            {"THREADLINE_RUN_WORKERS": "maybe"},
            "THREADLINE_RUN_WORKERS: 'maybe' is not valid (input should be a valid boolean, "
            "unable to interpret input); accepted: true/false, 1/0, yes/no, on/off",
        ),
        (
            {"THREADLINE_AUTH": "passwords"},
            "THREADLINE_AUTH: 'passwords' is not valid (input should be 'none', 'api_key' or "
            "'jwt'); accepted: none, api_key, jwt",
        ),
        (
            {"THREADLINE_LEASE_S": "0"},
            "THREADLINE_LEASE_S: '0' is not valid (input should be greater than 0); "
            "accepted: a number of seconds > 0 and <= 315360000",
        ),
        (
            {"THREADLINE_TIMEZONE": "Mars/Olympus"},
            "THREADLINE_TIMEZONE: 'Mars/Olympus' is not valid (not a known time zone); "
            "accepted: an IANA time zone name such as Europe/Paris",
        ),
        (
            {"THREADLINE_LOG_FORMAT": "xml"},
            "THREADLINE_LOG_FORMAT: 'xml' is not valid (input should be 'json' or 'text'); "
            "accepted: json, text",
        ),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_accepts(
    environ: dict[str, str], line: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ)
    assert raised.value.problems == [line]


def test_every_bad_value_is_reported_and_secrets_are_not_repeated() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"THREADLINE_WORKERS": "0", "THREADLINE_MAX_MESSAGES": "-1"})
    assert [line.split(":")[0] for line in raised.value.problems] == [
        "THREADLINE_WORKERS",
        "THREADLINE_MAX_MESSAGES",
    ]
    assert accepted("jwt_secret") == "a string"


def test_secrets_and_the_database_password_are_masked() -> None:
    settings = Settings(
        jwt_secret="s" * 32,
        webhook_secret="hook",
        openai_api_key="sk-test",
        database_url="postgresql+psycopg://app:hunter2@db:5432/threadline",
    )
    for name in ("jwt_secret", "webhook_secret", "openai_api_key"):
        assert settings.shown(name) == MASK
    assert settings.shown("database_url") == "postgresql+psycopg://app:***@db:5432/threadline"
    assert Settings().shown("jwt_secret") == ""  # unset is not a secret
    assert Settings().shown("webhook_allow") == "" and Settings().shown("port") == "8123"


def test_every_setting_is_described_and_read_by_some_command() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description, f"{name} has no description"
        assert variable(name).startswith("THREADLINE_")
        assert any(name in read_by(command) for command in ("serve", "worker", "migrate"))
    assert variable("config_file") == "THREADLINE_CONFIG"
    assert len(variables()) == len(Settings.model_fields)
    assert set(read_by("config")) == set(Settings.model_fields)


def documented_table() -> str:
    """The settings table of docs/operations.md: the lines after the generated-table note."""
    text = OPERATIONS.read_text(encoding="utf-8")
    marker = text.index("`threadline config --markdown`")
    lines = text[marker:].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table) + "\n"


def test_the_documented_table_is_the_generated_one() -> None:
    """docs/operations.md's table cannot drift from Settings: regenerate it with
    `threadline config --markdown` when a setting changes."""
    assert documented_table() == markdown_table()


def test_only_config_reads_the_environment() -> None:
    """Settings are read in one place: other modules get them passed in or call
    get_settings() (app/project.py writes a project's variables, which is no read)."""
    readers = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        if path.name == "config.py" and path.parent.name == "app":
            continue
        writes: set[int] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or id(node) in writes:
                continue
            text = ast.unparse(node)
            if text == "os.environ.setdefault" and path.name == "project.py":
                # A project's variables go into the environment: a write.
                writes.add(id(node.value))
            elif text in ("os.environ", "os.environb", "os.getenv"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
    assert readers == []


def test_the_demo_forecast_is_served_where_serve_listens() -> None:
    """Unset, the weather tool calls this server's demo service: on another port it
    could not reach it (every weather question failed)."""
    assert Settings(port=8290).forecast == "http://127.0.0.1:8290/demo/forecast"
    assert Settings(host="0.0.0.0").forecast == "http://127.0.0.1:8123/demo/forecast"
    assert Settings(host="::1", port=9).forecast == "http://[::1]:9/demo/forecast"
    # An IPv6 address written as in a URL is the address uvicorn listens on.
    assert Settings.from_env({"THREADLINE_HOST": "[::1]"}).host == "::1"
    given = "https://weather.example/forecast"
    assert Settings(forecast_url=given, port=9).forecast == given
