"""Settings: every `THREADLINE_*` environment variable, typed, with its default and meaning.

One pydantic-settings class holds them all; each field's description is the text that
`threadline config`, the CLI's help and the table of docs/operations.md show (the table is
generated from here: `threadline config --markdown`).

`Settings(field=value, ...)` takes its values from the arguments only (the defaults for the
rest), so a test's settings do not depend on the environment it runs in; the environment
is read by `Settings.from_env(mapping)` and `get_settings()` (os.environ). A value the
environment gets wrong raises `SettingsError`, which names the variable and what it
accepts (the CLI prints it and exits with status 2).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import textwrap
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import annotated_types
from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict
from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from app.limits import graph_id_problem

PREFIX = "THREADLINE_"
# Which subcommands read a variable (the CLI lists them in each one's help).
SERVE = ("serve",)
RUNS = ("serve", "worker")
ALL = ("serve", "worker", "migrate", "users")
MASK = "********"
BOOLEANS = "true/false, 1/0, yes/no, on/off"
# The longest time a setting takes, in seconds (ten years): a longer one overflows the
# date arithmetic it goes into, and means "never", which those settings spell 0.
LONGEST_S = 10 * 365 * 86400
# The shortest time a setting takes (other than 0 where it says "none"), in seconds.
SHORTEST_S = 0.01
# A host name as DNS spells it: dot-separated labels of letters, digits and hyphens.
HOST_NAME = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?", re.I)

AuthMode = Literal["none", "api_key", "jwt"]
LogFormat = Literal["json", "text"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
# Comma-separated in the environment (`a,b,c`), not JSON.
CommaList = Annotated[tuple[str, ...], NoDecode]


def setting(
    default: Any,
    description: str,
    *,
    commands: tuple[str, ...] = RUNS,
    secret: bool = False,
    accepted: str | None = None,
    shown_default: str | None = None,
    **constraints: Any,
) -> Any:
    """A field: its default, its meaning (one sentence, markdown), the subcommands that
    read it, whether its value is masked when shown, and what it accepts when the type
    alone does not say it well."""
    extra: dict[str, Any] = {"commands": list(commands), "secret": secret}
    if isinstance(default, float):
        # Every number setting is a time in seconds, finite and within LONGEST_S.
        constraints.update(allow_inf_nan=False, le=LONGEST_S)
    if accepted is not None:
        extra["accepted"] = accepted
    if shown_default is not None:
        extra["shown_default"] = shown_default
    return Field(default, description=description, json_schema_extra=extra, **constraints)


class SettingsError(ValueError):
    """Environment variables with values the server cannot use: one line per variable,
    `THREADLINE_X: <reason>; accepted: <what>`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Settings(BaseSettings):
    """Process-wide configuration; the defaults give a working single-machine server."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        case_sensitive=False,
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
    )

    # Where and what the server serves.
    host: str = setting(
        "127.0.0.1",
        "the address `serve` listens on (the image sets `0.0.0.0`)",
        commands=SERVE,
    )
    port: int = setting(8123, "the port `serve` listens on", commands=SERVE, ge=0, le=65535)
    database_url: str = setting(
        "sqlite+aiosqlite:///./data/threadline.db",
        "the database: SQLite in `./data` by default (one process), "
        "`postgresql://user:password@host:5432/db` for more than one process",
        commands=ALL,
        accepted="a PostgreSQL or SQLite URL, as SQLAlchemy writes them",
    )
    cors_origins: Annotated[tuple[str, ...] | None, NoDecode] = setting(
        None,
        "comma-separated origins browsers may call the API from "
        "(`https://app.example,https://admin.example`); unset: every origin, unless the "
        "project's `http.cors` says otherwise; empty: none",
        commands=SERVE,
        accepted="comma-separated origins",
        shown_default="unset (every origin)",
    )
    graphs: str = setting(
        "",
        'the graphs to serve, JSON `{"graph_id": "package.module:attribute"}` (or '
        '`"path/file.py:attribute"`); wins over a project\'s graphs',
        accepted='a JSON object {"graph_id": "module:attribute"}',
        shown_default="the project's, else the reminder agent",
    )
    config_file: str = setting(
        "",
        "a LangGraph project's `langgraph.json`: its graphs, `env` file and `http.cors` "
        "(docs/langgraph-projects.md)",
        commands=ALL,
        accepted="a file path",
        shown_default="`./langgraph.json` if there is one",
        validation_alias="THREADLINE_CONFIG",
    )
    recursion_limit: int = setting(
        100, "graph steps a run may take when it does not set its own limit", ge=1
    )

    # Executing runs.
    workers: int = setting(
        32, "runs one process executes at once (asyncio tasks, not threads)", ge=1
    )
    db_pool_size: int = setting(
        40,
        "PostgreSQL connections one process keeps open; keep it above `THREADLINE_WORKERS` "
        "(a smaller pool opens and closes connections under load: 46 instead of 64 turns/s "
        "at 20 users with 10)",
        commands=ALL,
        ge=1,
    )
    db_max_overflow: int = setting(
        20,
        "connections one process may open on top, in a burst; size PostgreSQL's "
        "`max_connections` for all processes (compose sets 400)",
        commands=ALL,
        ge=0,
    )
    run_workers: bool = setting(
        True,
        "whether `serve` executes runs too (`serve --no-worker` turns it off; "
        "`threadline worker` processes execute them then)",
        commands=SERVE,
    )
    lease_s: float = setting(
        20.0, "a run whose worker stops renewing its lease this long is taken over", gt=0
    )
    heartbeat_s: float = setting(
        0.5, "cancel polling period; a lease is renewed once a quarter of it has passed", gt=0
    )
    shutdown_grace_s: float = setting(
        10.0, "on SIGTERM, how long runs in flight may finish before they are re-queued", ge=0
    )

    # Who may call.
    auth: AuthMode = setting(
        "none",
        "who is calling: `none` (one local user), `api_key` (keys in the database, "
        "`threadline users`) or `jwt` (bearer tokens); workers read it for "
        "`THREADLINE_MAX_RUNNING_RUNS_PER_USER`",
    )
    jwt_algorithm: str = setting(
        "HS256",
        "the algorithm JWTs are signed with: HS256, HS384, HS512 (with "
        "`THREADLINE_JWT_SECRET`) or an asymmetric one, RS256, ES256... (with "
        "`THREADLINE_JWT_PUBLIC_KEY`)",
        commands=SERVE,
        accepted="a JWT algorithm name",
    )
    jwt_secret: str = setting(
        "",
        "the HMAC key of the HS* algorithms, at least 32 bytes",
        commands=SERVE,
        secret=True,
    )
    jwt_public_key: str = setting(
        "",
        "PEM text, or the path of a PEM file, for the asymmetric algorithms",
        commands=SERVE,
    )
    jwt_issuer: str = setting(
        "", "the `iss` claim tokens must carry (unset: not checked)", commands=SERVE
    )
    jwt_audience: str = setting(
        "", "the `aud` claim tokens must carry (unset: not checked)", commands=SERVE
    )

    # Limits, each 0 for none.
    max_body_bytes: int = setting(
        10 * 1024 * 1024, "the largest request body, in bytes (0: no limit)", commands=SERVE, ge=0
    )
    max_messages: int = setting(
        1000, "messages one request may carry (0: no limit)", commands=SERVE, ge=0
    )
    max_streams_per_user: int = setting(
        100, "open streams of one user in one process (0: no limit)", commands=SERVE, ge=0
    )
    max_queued_runs_per_user: int = setting(
        100, "pending runs of one user (0: no limit)", commands=SERVE, ge=0
    )
    max_running_runs_per_user: int = setting(
        16,
        "runs of one user one process executes at once, the others waiting in the queue, "
        "so that one user's slow runs cannot take every place of `THREADLINE_WORKERS` "
        "(0: no limit; not applied with `THREADLINE_AUTH=none`, where every run is the "
        "one local user's)",
        ge=0,
    )

    # Webhooks (app/webhooks.py).
    webhook_secret: str = setting(
        "",
        "HMAC-SHA256 key of the `X-Threadline-Signature` header of webhook calls (unset: unsigned)",
        secret=True,
    )
    webhook_allow: CommaList = setting(
        (),
        "comma-separated host names, addresses and CIDR networks that webhooks may call "
        "although they are private or loopback (`127.0.0.1,10.0.0.0/8,hooks.internal`)",
        accepted="comma-separated hosts, addresses and networks",
    )
    webhook_timeout_s: float = setting(
        10.0,
        "the timeout of one webhook attempt; an attempt whose process died is sent again "
        "twice this long after it started",
        gt=0,
    )
    webhook_attempts: int = setting(
        8, "attempts of a webhook call in all, the first included", ge=1
    )
    webhook_backoff_s: float = setting(
        2.0, "the pause after a failed attempt, doubled after each (at most 10 minutes)", ge=0
    )

    # The default assistant (app/agents, app/chat_models).
    model: str = setting(
        "scripted",
        "the default assistant's chat model: `scripted` (offline), `openai:<model>` with "
        "`THREADLINE_OPENAI_BASE_URL` (any OpenAI-compatible server, built in), or any "
        "`<provider>:<model>` of LangChain's `init_chat_model` (needs threadline's `models` "
        "extra, `pip install -e '.[models]'`, and the provider's package, e.g. "
        "`langchain-anthropic`; the provider's own variables such as `ANTHROPIC_API_KEY`)",
        accepted="`scripted` or `<provider>:<model>`",
    )
    openai_base_url: str = setting(
        "",
        "the OpenAI-compatible server of `openai:<model>` (`http://localhost:1234/v1`)",
        accepted="an http(s) URL",
    )
    openai_api_key: str = setting(
        "", "the key of `THREADLINE_OPENAI_BASE_URL`'s server", secret=True
    )
    scripted_pace_s: float = setting(
        0.05,
        "seconds between two streamed pieces of the `scripted` model's reply (0.05 reads "
        "like a person typing; the tests and benchmarks use 0)",
        ge=0,
    )
    timezone: str = setting(
        "UTC",
        "the time zone of reminders' `due` words when the run does not name one "
        "(`config.configurable.timezone`)",
        accepted="an IANA time zone name such as Europe/Paris",
    )
    forecast_url: str | None = setting(
        None,
        "the weather service the default assistant's `get_forecast` tool calls (unset: the "
        "demo service `serve` has built in, at THREADLINE_HOST and THREADLINE_PORT)",
        accepted="an http(s) URL",
    )
    forecast_timeout_s: float = setting(
        5.0, "how long `get_forecast` waits for the weather service's answer", gt=0
    )
    forecast_delay_s: float = setting(
        0.0,
        "an artificial wait of the built-in demo weather service (`/demo/forecast`), to "
        "show that a slow tool holds up no other thread",
        commands=SERVE,
        ge=0,
    )

    # Operations.
    event_retention_s: float = setting(
        86400.0,
        "stream events are deleted this long after they were recorded (0: never)",
        commands=SERVE,
        ge=0,
    )
    ttl_sweep_s: float = setting(
        60.0,
        "how often threads and store items whose time to live (`ttl`) ran out are looked for",
        commands=SERVE,
        gt=0,
    )
    log_format: LogFormat = setting("json", "`json` (one object per line) or `text`", commands=ALL)
    log_level: LogLevel = setting(
        "INFO",
        "a Python logging level: `DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL`",
        commands=ALL,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: Any,
        env_settings: Any,
        dotenv_settings: Any,
        file_secret_settings: Any,
    ) -> tuple[Any, ...]:
        """Only the arguments: the environment is read by `from_env`."""
        return (init_settings,)

    @field_validator("cors_origins", "webhook_allow", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        return value

    @field_validator("log_format", "auth", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> Any:
        return (value.strip() or "scripted") if isinstance(value, str) else value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("not a known time zone") from None
        return value

    @field_validator("database_url")
    @classmethod
    def _database(cls, value: str) -> str:
        try:
            url = make_url(value)
        except ArgumentError:
            raise ValueError("not a database URL") from None
        backend = url.get_backend_name()
        if backend not in ("postgresql", "sqlite"):
            raise ValueError(f"a {backend} database: Threadline keeps to PostgreSQL and SQLite")
        if backend == "sqlite" and url.database in (None, "", ":memory:"):
            raise ValueError(
                "an in-memory SQLite database, which each connection sees empty: give a file"
            )
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty: give an address (0.0.0.0 listens on every one)")
        # An IPv6 address as a URL writes it (`[::1]`) is the address.
        host = value[1:-1] if value.startswith("[") and value.endswith("]") else value
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if not HOST_NAME.fullmatch(host):
                raise ValueError(
                    "not an address or a host name (`127.0.0.1`, `::1`, `localhost`; "
                    "the port is THREADLINE_PORT)"
                ) from None
        return host

    @field_validator("*")
    @classmethod
    def _not_too_short(cls, value: Any) -> Any:
        if isinstance(value, float) and 0 < value < SHORTEST_S:
            raise ValueError(f"shorter than {SHORTEST_S} s: a loop would spin on it")
        return value

    @field_validator("heartbeat_s")
    @classmethod
    def _beat(cls, value: float, info: ValidationInfo) -> float:
        lease = info.data.get("lease_s")
        if lease is not None and value > lease / 2:
            raise ValueError(
                f"more than half of THREADLINE_LEASE_S ({lease:g}): a run's lease would "
                "lapse between beats, and every run be taken over"
            )
        return value

    @field_validator("forecast_url", "openai_base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL")
        return value

    @field_validator("webhook_allow")
    @classmethod
    def _allowed(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                if not HOST_NAME.fullmatch(entry):
                    raise ValueError(f"{entry!r} is no host name, address or network") from None
        return value

    @field_validator("graphs")
    @classmethod
    def _graphs(cls, value: str) -> str:
        if not value:
            return value
        try:
            spec = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if (
            not isinstance(spec, dict)
            or not spec
            or not all(isinstance(v, str) for v in spec.values())
        ):
            raise ValueError("not a JSON object of graph ids and their module:attribute")
        if problems := list(filter(None, map(graph_id_problem, spec))):
            raise ValueError(problems[0])
        return value

    @property
    def forecast(self) -> str:
        """The weather service's URL: the one set, else the demo service of `serve` here
        (on this machine when it listens on every address)."""
        if self.forecast_url:
            return self.forecast_url
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/demo/forecast"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from an environment mapping; unset variables keep the defaults.
        Raises SettingsError for values that do not fit."""
        source = EnvSettingsSource(cls)
        source.env_vars = {name.lower(): value for name, value in environ.items()}
        values = source()
        try:
            return cls(**values)
        except ValidationError as exc:
            raise SettingsError(
                [_problem(error, environ) for error in exc.errors(include_url=False)]
            ) from None

    def shown(self, name: str) -> str:
        """A field's value as `threadline config` prints it, secrets masked."""
        value = getattr(self, name)
        if value is None:
            return "(unset)"
        if _extra(Settings.model_fields[name]).get("secret") and value:
            return MASK
        if name == "database_url":
            try:
                url = make_url(value)
            except ArgumentError:
                return MASK
            # libpq's URLs may carry the password as a parameter too.
            query = {k: MASK if k == "password" else v for k, v in url.query.items()}
            return url.set(query=query).render_as_string(hide_password=True)
        return _text(value)


def variable(name: str) -> str:
    """The environment variable of a field."""
    field = Settings.model_fields[name]
    return (
        field.validation_alias if isinstance(field.validation_alias, str) else PREFIX + name.upper()
    )


def variables() -> dict[str, str]:
    """Every variable, mapped to its field's name, in the class's order."""
    return {variable(name): name for name in Settings.model_fields}


def unknown(environ: Mapping[str, str] | None = None) -> list[str]:
    """THREADLINE_* variables that are no setting (a typo, or an old name): ignored.
    `environ` defaults to the process environment."""
    environ = os.environ if environ is None else environ
    known = {name.upper() for name in variables()}
    return sorted(
        name for name in environ if name.upper().startswith(PREFIX) and name.upper() not in known
    )


def read_by(command: str) -> Iterator[str]:
    """The fields a subcommand reads (`config` reads them all)."""
    for name, field in Settings.model_fields.items():
        if command == "config" or command in _extra(field)["commands"]:
            yield name


def description(name: str) -> str:
    return Settings.model_fields[name].description or ""


def shown_default(name: str) -> str:
    """A field's default in words: unset, or its value."""
    field = Settings.model_fields[name]
    extra = _extra(field)
    if "shown_default" in extra:
        return str(extra["shown_default"])
    return _text(field.default) or "unset"


def accepted(name: str) -> str:
    """What a variable accepts, in words."""
    field = Settings.model_fields[name]
    extra = _extra(field)
    if "accepted" in extra:
        return str(extra["accepted"])
    kind = field.annotation
    if get_origin(kind) is Literal:
        return ", ".join(str(choice) for choice in get_args(kind))
    if kind is bool:
        return BOOLEANS
    noun = {int: "an integer", float: "a number"}.get(kind)  # type: ignore[call-overload]
    if noun is None:
        return "a string"
    bounds = []
    for item in field.metadata:
        for attribute, word in (("ge", ">="), ("gt", ">"), ("le", "<=")):
            if isinstance(item, annotated_types.BaseMetadata) and hasattr(item, attribute):
                bounds.append(f"{word} {getattr(item, attribute)}")
    if name.endswith("_s"):
        noun += " of seconds"
    return " ".join([noun, " and ".join(bounds)]).strip()


def markdown_table() -> str:
    """The table of docs/operations.md: every variable, its default and meaning."""
    lines = ["| variable | default | what |", "|---|---|---|"]
    for name in Settings.model_fields:
        default = shown_default(name)
        field = Settings.model_fields[name]
        if "shown_default" not in _extra(field) and default != "unset":
            default = f"`{default}`"
        text = description(name).replace("|", "\\|")
        lines.append(f"| `{variable(name)}` | {default} | {text} |")
    return "\n".join(lines) + "\n"


def describe(settings: Settings, names: list[str] | None = None, width: int = 88) -> str:
    """Variables with their current value, default and meaning (`threadline config`)."""
    lines = []
    for name in names if names is not None else list(Settings.model_fields):
        lines.append(f"{variable(name)}={settings.shown(name)}  (default: {shown_default(name)})")
        lines.extend(
            textwrap.wrap(
                plain(description(name)), width, initial_indent="    ", subsequent_indent="    "
            )
        )
    return "\n".join(lines) + "\n"


def plain(text: str) -> str:
    """Markdown's code quotes dropped, for a terminal."""
    return text.replace("`", "")


def get_settings() -> Settings:
    """Settings from the process environment, read again whenever a THREADLINE_* variable
    changed (tests set them with monkeypatch)."""
    return _settings_for(
        frozenset((k, v) for k, v in os.environ.items() if k[: len(PREFIX)].upper() == PREFIX)
    )


@functools.lru_cache(maxsize=16)
def _settings_for(environ: frozenset[tuple[str, str]]) -> Settings:
    return Settings.from_env(dict(environ))


def _extra(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _problem(error: Any, environ: Mapping[str, str]) -> str:
    """One line about one validation error: the variable, what is wrong, what it takes."""
    [where, *_] = error["loc"] or ("",)
    fields = variables()
    name = fields.get(str(where), str(where))
    if name not in Settings.model_fields:
        return f"{where}: {error['msg']}"
    var = variable(name)
    given = environ.get(var, environ.get(var.lower()))
    secret = _extra(Settings.model_fields[name]).get("secret")
    reason = error["msg"]
    if given is not None and not secret:
        reason = f"{given!r} is not valid ({_sentence(reason)})"
    return f"{var}: {reason}; accepted: {accepted(name)}"


def _sentence(message: str) -> str:
    message = message.removeprefix("Value error, ")
    return message[:1].lower() + message[1:]
