"""Fixtures that run the app behind a real uvicorn server, so API tests go over real HTTP."""

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.main import create_app
from tests.api.graphs import GRAPHS
from tests.helpers import ServeApp, serving
from tests.pg import PostgresCluster


@pytest.fixture
def serve_app() -> Iterator[ServeApp]:
    """Start servers for the given apps on free ports (`tests.helpers.serving`); return
    each one's base URL. Servers stop at teardown."""
    with contextlib.ExitStack() as running:
        yield lambda app: running.enter_context(serving(app))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Default settings with a database private to the test."""
    return Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}")


@pytest.fixture
def base_url(serve_app: ServeApp, settings: Settings) -> str:
    """Base URL of a real server running `create_app(settings)`."""
    return serve_app(create_app(settings))


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path, postgres_url: str) -> str:
    """A fresh database per test, on each dialect the server supports."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
    cluster: PostgresCluster | None = request.getfixturevalue("postgres_cluster")
    if cluster is None:
        return postgres_url
    return cluster.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def server(serve_app: ServeApp, database_url: str) -> str:
    """Base URL of a real server on a fresh database, serving the test graphs."""
    settings = Settings(database_url=database_url, graphs=json.dumps(GRAPHS), workers=8)
    return serve_app(create_app(settings))


AGENT_GRAPHS = {
    "agent": "app.agents.reminders:graph",
    "provider_agent": "tests.api.provider_agent:graph",
    "fake_agent": "tests.api.provider_agent:fake_graph",
}


@pytest.fixture
def agent_server(serve_app: ServeApp, database_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Base URL of a real server on a fresh database serving the default agent ("agent"),
    and the same agent over an OpenAI-compatible model ("provider_agent") and over
    LangChain's fake chat model ("fake_agent"); the forecast tool calls this server's own
    /demo/forecast."""
    settings = Settings(database_url=database_url, graphs=json.dumps(AGENT_GRAPHS), workers=8)
    url = serve_app(create_app(settings))
    monkeypatch.setenv("THREADLINE_FORECAST_URL", f"{url}/demo/forecast")
    return url
