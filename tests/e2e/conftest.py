"""A real server and a real browser for the web page's end-to-end tests.

The browser is Debian's Chromium (`.ci/run` installs it), driven by Playwright's Python
package; Playwright's own browser downloads are never used.
"""

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from app.config import Settings
from app.main import create_app

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


@pytest.fixture
def base_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server with the default assistant on a private SQLite database.

    The port is bound before uvicorn starts, so the forecast tool can be pointed at this
    very server (its built-in forecast endpoint) before the first run.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    host, port = sock.getsockname()
    url = f"http://{host}:{port}"
    monkeypatch.setenv("THREADLINE_FORECAST_URL", f"{url}/demo/forecast")
    monkeypatch.delenv("THREADLINE_FORECAST_DELAY_S", raising=False)
    monkeypatch.delenv("THREADLINE_MODEL", raising=False)
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}")
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn server failed to start")
        thread.join(0.01)
    yield url
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium for the module. Missing it skips, except in CI, where
    `.ci/run` installs it and its absence is a failure. Not for the session: Playwright's
    sync API keeps an event loop running in this thread while it is open, and the tests
    collected after these would find it there."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    if not shutil.which(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it with apt")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
