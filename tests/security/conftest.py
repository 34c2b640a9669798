"""Servers with authentication on, and two users, alice and bob, to set against each other.

Each server is real (uvicorn over HTTP, as in tests/api) and serves the API test graphs plus
the default agent, whose reminders are per user.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from hypothesis import HealthCheck, Phase, settings

from app import auth
from app.config import Settings
from app.db.database import Database
from app.main import create_app
from tests.api.conftest import (  # noqa: F401 (fixtures)
    AGENT_GRAPHS,
    ServeApp,
    database_url,
    serve_app,
    server,
)
from tests.api.graphs import GRAPHS

SECURITY_GRAPHS = {**GRAPHS, "agent": AGENT_GRAPHS["agent"]}
JWT_SECRET = "a-test-secret-long-enough-for-hs512-keys-0123456789-0123456789-01"
JWT_ISSUER = "https://issuer.test"
JWT_AUDIENCE = "threadline-tests"
USERS = ("alice", "bob")
# `make fuzz` sets it: each property test tries this many times more examples, new ones
# on every run; `make test` tries the same few, from a fixed seed, every time.
FUZZ = int(os.environ.get("THREADLINE_FUZZ") or 0)


def budget(examples: int) -> settings:
    """Hypothesis settings of a property test that tries `examples` examples."""
    return settings(
        max_examples=examples * max(FUZZ, 1),
        derandomize=not FUZZ,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def token(
    sub: str | None, *, key: Any = JWT_SECRET, algorithm: str = "HS256", **claims: Any
) -> str:
    """A token as the test issuer signs it; `claims` override or (None) drop the defaults."""
    payload = {
        "sub": sub,
        "iss": JWT_ISSUER,
        "aud": JWT_AUDIENCE,
        "exp": int(time.time()) + 600,
        **claims,
    }
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, key, algorithm=algorithm)


@dataclass(frozen=True)
class SecureServer:
    """A running server, its auth mode, its users' credentials as request headers, and
    its database."""

    url: str
    mode: str
    headers: dict[str, dict[str, str]]
    database_url: str


def settings_for(url: str, mode: str, **limits: Any) -> Settings:
    """Settings of a test server in auth `mode` on the database at `url`."""
    defaults: dict[str, Any] = {"workers": 8}
    return Settings(
        database_url=url,
        graphs=json.dumps(SECURITY_GRAPHS),
        auth=mode,
        jwt_secret=JWT_SECRET,
        jwt_issuer=JWT_ISSUER,
        jwt_audience=JWT_AUDIENCE,
        **(defaults | limits),
    )


async def add_users(url: str, names: tuple[str, ...] = USERS) -> dict[str, str]:
    """Users of api_key mode and one key each, made as `threadline users` makes them."""
    db = Database(url)
    try:
        keys = {}
        for name in names:
            await auth.add_user(db, name)
            keys[name] = await auth.issue_key(db, name)
        return keys
    finally:
        await db.close()


StartSecure = Callable[..., Awaitable[SecureServer]]


@pytest.fixture
def start_secure(serve_app: ServeApp, database_url: str) -> StartSecure:  # noqa: F811
    """Start a server in an auth mode (with optional limits) on the test's database; alice
    sends her credential as x-api-key (what langgraph-sdk sends), bob as a bearer token."""

    async def start(mode: str, **limits: Any) -> SecureServer:
        url = serve_app(create_app(settings_for(database_url, mode, **limits)))
        if mode == "api_key":
            credentials = await add_users(database_url)
        else:
            credentials = {name: token(name) for name in USERS}
        headers = {
            "alice": {"x-api-key": credentials["alice"]},
            "bob": {"Authorization": f"Bearer {credentials['bob']}"},
        }
        return SecureServer(url, mode, headers, database_url)

    return start


@pytest.fixture(params=["api_key", "jwt"])
async def secure_server(request: pytest.FixtureRequest, start_secure: StartSecure) -> SecureServer:
    """A server in each mode that tells users apart, on each database."""
    return await start_secure(request.param)


def count_values(value: Any) -> int:
    """Values as the server counts them: objects, arrays, scalars and object keys."""
    if isinstance(value, dict):
        return 1 + sum(1 + count_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(map(count_values, value))
    return 1
