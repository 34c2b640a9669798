"""Settings from `THREADLINE_*` environment variables.

A plain dataclass, not pydantic-settings: the server has few knobs and reading them must not
need anything beyond the standard library.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """Process-wide configuration; the defaults give a working single-machine server."""

    host: str = "127.0.0.1"
    port: int = 8123
    database_url: str = "sqlite+aiosqlite:///./data/threadline.db"
    # None: every origin, unless the project's `http.cors` says otherwise.
    cors_origins: tuple[str, ...] | None = None
    recursion_limit: int = 100
    # JSON {"graph_id": "package.module:attribute"}; empty means the project's graphs, or
    # else the default assistant.
    graphs: str = ""
    # A LangGraph project's `langgraph.json` (app/project.py); the CLI finds it.
    config_file: str = ""
    # Runs executed at once by this process (each is an asyncio task, not a thread).
    workers: int = 32
    # Database connections this process keeps open (PostgreSQL), and how many more it may
    # open in a burst. Every running run and request holds one at times: a pool smaller
    # than that churns through connections, each costing a handshake.
    db_pool_size: int = 40
    db_max_overflow: int = 20
    # Whether this process executes runs (`serve --no-worker` turns it off).
    run_workers: bool = True
    # A run whose worker stops renewing its lease for this long goes to another worker.
    lease_s: float = 20.0
    # How often a worker renews its leases and looks for cancel requests.
    heartbeat_s: float = 0.5
    # On SIGTERM, how long runs in flight may take to finish before they are re-queued.
    shutdown_grace_s: float = 10.0
    # Who is calling: `none` (one local user), `api_key` (keys in the database) or `jwt`.
    auth: str = "none"
    jwt_algorithm: str = "HS256"
    jwt_secret: str = ""
    # PEM text, or the path of a PEM file, for the asymmetric algorithms (RS256, ES256...).
    jwt_public_key: str = ""
    jwt_issuer: str = ""
    jwt_audience: str = ""
    # Limits, each 0 for none: a request body's bytes, messages in one request, open
    # streams of one user in this process, and pending runs of one user.
    max_body_bytes: int = 10 * 1024 * 1024
    max_messages: int = 1000
    max_streams_per_user: int = 100
    max_queued_runs_per_user: int = 100
    # Webhooks (app/webhooks.py): the HMAC key of the signature header (none: unsigned);
    # private and loopback hosts or networks a webhook may call anyway; each attempt's
    # timeout; attempts in all; the pause after the first failure, doubled after each.
    webhook_secret: str = ""
    webhook_allow: tuple[str, ...] = ()
    webhook_timeout_s: float = 10.0
    webhook_attempts: int = 8
    webhook_backoff_s: float = 2.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> "Settings":
        """Build settings from an environment mapping; unset variables keep the defaults."""
        defaults = cls()
        origins = environ.get("THREADLINE_CORS_ORIGINS")
        return cls(
            host=environ.get("THREADLINE_HOST", defaults.host),
            port=int(environ.get("THREADLINE_PORT", defaults.port)),
            database_url=environ.get("THREADLINE_DATABASE_URL", defaults.database_url),
            cors_origins=None
            if origins is None
            else tuple(o.strip() for o in origins.split(",") if o.strip()),
            recursion_limit=int(
                environ.get("THREADLINE_RECURSION_LIMIT", defaults.recursion_limit)
            ),
            graphs=environ.get("THREADLINE_GRAPHS", defaults.graphs),
            config_file=environ.get("THREADLINE_CONFIG", defaults.config_file),
            workers=int(environ.get("THREADLINE_WORKERS", defaults.workers)),
            db_pool_size=int(environ.get("THREADLINE_DB_POOL_SIZE", defaults.db_pool_size)),
            db_max_overflow=int(
                environ.get("THREADLINE_DB_MAX_OVERFLOW", defaults.db_max_overflow)
            ),
            run_workers=environ.get("THREADLINE_RUN_WORKERS", "1") not in ("0", "false"),
            lease_s=float(environ.get("THREADLINE_LEASE_S", defaults.lease_s)),
            heartbeat_s=float(environ.get("THREADLINE_HEARTBEAT_S", defaults.heartbeat_s)),
            shutdown_grace_s=float(
                environ.get("THREADLINE_SHUTDOWN_GRACE_S", defaults.shutdown_grace_s)
            ),
            auth=environ.get("THREADLINE_AUTH", defaults.auth),
            jwt_algorithm=environ.get("THREADLINE_JWT_ALGORITHM", defaults.jwt_algorithm),
            jwt_secret=environ.get("THREADLINE_JWT_SECRET", defaults.jwt_secret),
            jwt_public_key=environ.get("THREADLINE_JWT_PUBLIC_KEY", defaults.jwt_public_key),
            jwt_issuer=environ.get("THREADLINE_JWT_ISSUER", defaults.jwt_issuer),
            jwt_audience=environ.get("THREADLINE_JWT_AUDIENCE", defaults.jwt_audience),
            max_body_bytes=int(environ.get("THREADLINE_MAX_BODY_BYTES", defaults.max_body_bytes)),
            max_messages=int(environ.get("THREADLINE_MAX_MESSAGES", defaults.max_messages)),
            max_streams_per_user=int(
                environ.get("THREADLINE_MAX_STREAMS_PER_USER", defaults.max_streams_per_user)
            ),
            max_queued_runs_per_user=int(
                environ.get(
                    "THREADLINE_MAX_QUEUED_RUNS_PER_USER", defaults.max_queued_runs_per_user
                )
            ),
            webhook_secret=environ.get("THREADLINE_WEBHOOK_SECRET", defaults.webhook_secret),
            webhook_allow=tuple(
                a.strip()
                for a in environ.get("THREADLINE_WEBHOOK_ALLOW", "").split(",")
                if a.strip()
            ),
            webhook_timeout_s=float(
                environ.get("THREADLINE_WEBHOOK_TIMEOUT_S", defaults.webhook_timeout_s)
            ),
            webhook_attempts=int(
                environ.get("THREADLINE_WEBHOOK_ATTEMPTS", defaults.webhook_attempts)
            ),
            webhook_backoff_s=float(
                environ.get("THREADLINE_WEBHOOK_BACKOFF_S", defaults.webhook_backoff_s)
            ),
        )


def get_settings() -> Settings:
    """Read settings from the process environment (not cached, so tests can change it)."""
    return Settings.from_env(os.environ)
