"""LangGraph projects: a folder with a `langgraph.json` (what `langgraph dev` serves) is
served as it is by `threadline serve` (and `threadline worker`) run in it, or wherever
THREADLINE_CONFIG names the file.

Read from the file:
- `graphs`: `{"agent": "./src/agent.py:graph"}` (a file, relative to the file's folder) or
  `"package.module:graph"`, also as `{"path": ..., "description": ...}` (the description
  is the graph's system assistant's, and its MCP tool's); the attribute is a
  graph (a builder or a compiled graph) or a factory that makes one (see `app.graphs`).
  THREADLINE_GRAPHS, when set, wins.
- `env`: a dotenv file (relative to the folder) or an object; variables already set in
  the environment win, so a deployment can override the file.
- `http.cors`: the CORS options (`allow_origins`, `allow_methods`, `allow_headers`,
  `allow_credentials`, `allow_origin_regex`, `expose_headers`, `max_age`);
  THREADLINE_CORS_ORIGINS, when set, wins for the origins.

- `auth.path`: a custom authentication handler, which is not run: the project is served
  only with Threadline's own authentication on (THREADLINE_AUTH), never open to all.

The keys about building an image (`dependencies`, `python_version`, `dockerfile_lines`,
...) are left to you: install the project's dependencies yourself (`pip install -e .`).
Any other key that would change how the server runs (a store index or TTL, a checkpointer
TTL, custom routes, ...) is refused: the server does not start rather than ignore it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from app.limits import graph_id_problem

CONFIG_FILE = "langgraph.json"
# A langgraph.json is a few lines; anything larger (a device such as /dev/zero) is no project.
MAX_FILE_BYTES = 1024 * 1024
CORS_OPTIONS = frozenset(
    {
        "allow_origins",
        "allow_methods",
        "allow_headers",
        "allow_credentials",
        "allow_origin_regex",
        "expose_headers",
        "max_age",
    }
)


# What each setting the server does not serve would do; set, it stops the server.
UNSERVED = {
    "store.index": "semantic search of the store",
    "store.ttl": "a default time to live of store items (give each its `ttl` when put)",
    "checkpointer.path": "a checkpointer of the project's own",
    "checkpointer.ttl": "a default time to live of threads (give each its `ttl` when "
    "created: POST /threads)",
    "checkpointer.serde": "a serializer of the project's own",
    "encryption": "custom encryption of stored data",
    "priority": "run priorities",
    "webhooks": "a webhook policy (here THREADLINE_WEBHOOK_* settings)",
    "ui": "generative UI components",
    "ui_config": "generative UI components",
    **{
        f"http.{name}": what
        for name, what in {
            "app": "custom routes",
            "configurable_headers": "request headers copied into the run's config",
            "logging_headers": "request headers in the logs",
            "middleware_order": "custom middleware",
            "enable_custom_route_auth": "custom routes",
            "mount_prefix": "serving under a path prefix",
            **{
                f"disable_{part}": f"turning off the {part} routes"
                for part in ("assistants", "threads", "runs", "store", "mcp", "a2a", "meta")
            },
            "disable_ui": "generative UI components",
            "disable_webhooks": "turning off webhooks",
        }.items()
    },
}


class ProjectError(ValueError):
    """A `langgraph.json` the server cannot serve: it refuses to start, saying why."""


@dataclass(frozen=True)
class Project:
    """What a `langgraph.json` asks of the server."""

    path: Path
    graphs: dict[str, str]
    env: dict[str, str]
    cors: dict[str, Any]
    # The authentication handler `auth.path` names (not run; see `check_auth`).
    auth: str | None = None
    # graph id -> its `description`, that of its system assistant (and MCP tool).
    descriptions: dict[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """Where the file's relative paths start."""
        return self.path.parent

    @classmethod
    def read(cls, path: Path) -> Project:
        path = path.resolve()
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"not a file of at most {MAX_FILE_BYTES} bytes")
            config = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ProjectError(f"Cannot read {path}: {exc}") from None
        if not isinstance(config, dict):
            raise ProjectError(f"{path} must hold a JSON object.")
        _refuse_unserved(config, path)
        auth = config.get("auth") or {}
        return cls(
            path=path,
            graphs=_graphs(config.get("graphs"), path),
            env=_env(config.get("env"), path),
            cors=_cors((config.get("http") or {}).get("cors"), path),
            auth=auth.get("path") if isinstance(auth, dict) else None,
            descriptions=_descriptions(config.get("graphs"), path),
        )

    def check_auth(self, mode: str) -> None:
        """Refuse to serve a project that authenticates its callers with a handler of its
        own while Threadline's authentication is off: every caller would be let in."""
        if self.auth and mode == "none":
            raise ProjectError(
                f'{self.path}: "auth.path" names an authentication handler ({self.auth}), '
                "which Threadline does not run; served as it is, every caller would be let "
                "in. Set THREADLINE_AUTH to api_key or jwt to serve it with Threadline's own "
                "authentication (docs/api.md, Authentication)."
            )

    def apply_env(self) -> None:
        """Put the project's variables in this process's environment, under those set."""
        for name, value in self.env.items():
            os.environ.setdefault(name, value)


def find(named: str, cwd: Path) -> Path | None:
    """The project file: `named` (THREADLINE_CONFIG, relative to `cwd`), else
    `langgraph.json` in `cwd` if there is one."""
    if named:
        return (cwd / named).resolve()
    here = cwd / CONFIG_FILE
    return here.resolve() if here.is_file() else None


def _refuse_unserved(config: dict[str, Any], path: Path) -> None:
    for dotted, what in UNSERVED.items():
        value: Any = config
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value:
            raise ProjectError(
                f'{path}: "{dotted}" asks for {what}, which Threadline does not serve; '
                "remove it to serve the project (docs/langgraph-projects.md)."
            )


def _graphs(raw: Any, path: Path) -> dict[str, str]:
    if not isinstance(raw, dict) or not raw:
        raise ProjectError(f'{path}: "graphs" must be an object {{"graph_id": "file.py:graph"}}.')
    graphs: dict[str, str] = {}
    for graph_id, spec in raw.items():
        if problem := graph_id_problem(graph_id):
            raise ProjectError(f"{path}: {problem}.")
        target = spec.get("path") if isinstance(spec, dict) else spec
        if not isinstance(target, str) or ":" not in target:
            raise ProjectError(
                f'{path}: graph {graph_id!r} must be "./file.py:attribute" or '
                f'"package.module:attribute", or {{"path": ...}}; got {spec!r}.'
            )
        graphs[graph_id] = target
    return graphs


def _descriptions(raw: dict[str, Any], path: Path) -> dict[str, str]:
    """The graphs' descriptions (`{"path": ..., "description": ...}`), read after
    `_graphs` checked the graphs."""
    found = {}
    for graph_id, spec in raw.items():
        text = spec.get("description") if isinstance(spec, dict) else None
        if text is not None and not isinstance(text, str):
            raise ProjectError(f'{path}: graph {graph_id!r}: "description" must be text.')
        if text:
            found[graph_id] = text
    return found


def _env(raw: Any, path: Path) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(name): str(value) for name, value in raw.items()}
    if isinstance(raw, str):
        env_file = path.parent / raw
        if not env_file.is_file():
            raise ProjectError(f'{path}: the "env" file {env_file} does not exist.')
        return {name: value for name, value in dotenv_values(env_file).items() if value is not None}
    raise ProjectError(f'{path}: "env" must be a file name or an object of variables.')


def _cors(raw: Any, path: Path) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw.keys() <= CORS_OPTIONS:
        raise ProjectError(f'{path}: "http.cors" takes the options {sorted(CORS_OPTIONS)}.')
    return dict(raw)
