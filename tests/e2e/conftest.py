"""A real server and a real browser for the web page's end-to-end tests.

The browser is Debian's Chromium (`.ci/run` installs it), driven by Playwright's Python
package; Playwright's own browser downloads are never used.
"""

import contextlib
import json
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from app.config import Settings
from app.main import create_app
from tests.e2e.graphs import GRAPHS
from tests.helpers import serving

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).parent / "artifacts"
# Wide enough for the three columns even with two chats side by side (layout.js).
DESKTOP = {"width": 1760, "height": 1000}

expect.set_options(timeout=10_000)


class Server:
    """The app served in a thread (`tests.helpers.serving`), which Playwright's sync API
    needs, on a fixed port and database, so that it can be stopped and started again (an
    outage) and the page finds it where it was."""

    def __init__(self, database: Path, graphs: dict[str, str] = GRAPHS) -> None:
        self.settings = Settings(
            database_url=f"sqlite+aiosqlite:///{database}",
            # The default assistant, and a graph with a subgraph (tests/e2e/graphs.py).
            graphs=json.dumps(graphs),
            # On a stop, runs in flight go back to the queue at once, and the next start
            # continues them from their last checkpoint.
            shutdown_grace_s=0,
        )
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.url = f"http://127.0.0.1:{self.port}"
        self.running: contextlib.ExitStack | None = None

    def start(self) -> None:
        served = serving(
            create_app(self.settings), self.port, stop_s=15, timeout_graceful_shutdown=1
        )
        self.running = contextlib.ExitStack()
        self.running.enter_context(served)

    def stop(self) -> None:
        """Stop the server (failing if it does not stop)."""
        assert self.running
        running, self.running = self.running, None
        running.close()


@pytest.fixture
def graphs() -> dict[str, str]:
    """The graphs the server serves: a test module overrides this fixture to give the page
    another assistant (`graphs.SCRIPTED_GRAPHS`)."""
    return GRAPHS


@pytest.fixture
def server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, graphs: dict[str, str]
) -> Iterator[Server]:
    """A server with the default assistant on a private SQLite database. The forecast tool
    is pointed at this very server (its built-in forecast endpoint)."""
    server = Server(tmp_path / "threadline.db", graphs)
    monkeypatch.setenv("THREADLINE_FORECAST_URL", f"{server.url}/demo/forecast")
    monkeypatch.delenv("THREADLINE_FORECAST_DELAY_S", raising=False)
    monkeypatch.delenv("THREADLINE_MODEL", raising=False)
    server.start()
    yield server
    if server.running:
        server.stop()


@pytest.fixture
def base_url(server: Server) -> str:
    return server.url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium for the module. Missing it skips, except in CI, where
    `.ci/run` installs it and its absence is a failure. Not for the session: Playwright's
    sync API keeps an event loop running in this thread while it is open, and the tests
    collected after these would find it there."""
    if not shutil.which(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it with apt")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser: Any, base_url: str) -> Iterator[Callable[..., Page]]:
    """Open the page in a fresh context (own storage): `open_page(path, **context
    options)`. Any script error in any of them fails the test."""
    contexts = []
    errors: list[str] = []

    def open_page(path: str = "/", **options: Any) -> Page:
        options = {"viewport": DESKTOP, **options}
        context = browser.new_context(base_url=base_url, **options)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path)
        expect(page.locator("svg.graph .node:not(.terminal)").first).to_be_attached()
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert not errors, errors


@pytest.fixture
def page(open_page: Callable[..., Page]) -> Page:
    """The page on a desktop screen."""
    return open_page()


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
