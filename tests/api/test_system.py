"""Health and info endpoints over real HTTP."""

import gc
import logging
from pathlib import Path

import httpx
import pytest

from app import __version__
from app.config import Settings
from app.container import YOUNG_OBJECTS
from app.main import create_app
from tests.helpers import serving


def test_ok(base_url: str) -> None:
    response = httpx.get(f"{base_url}/ok")
    assert response.status_code == 200
    assert response.json() == {"ok": True}
    probed = httpx.head(f"{base_url}/ok")  # as load balancers probe
    assert probed.status_code == 200 and probed.content == b""


def test_info_reports_version_and_flags(base_url: str) -> None:
    response = httpx.get(f"{base_url}/info")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == __version__
    assert body["flags"] == {
        "assistants": True,
        "crons": True,
        "langsmith": False,
        "strict_resume": True,
    }


def test_cors_exposes_location_and_pagination_headers(base_url: str) -> None:
    response = httpx.get(f"{base_url}/ok", headers={"Origin": "http://example.test"})
    assert response.headers["access-control-allow-origin"] == "*"
    exposed = {h.strip() for h in response.headers["access-control-expose-headers"].split(",")}
    assert exposed == {"Location", "Content-Location", "X-Pagination-Total", "X-Pagination-Next"}


def test_a_started_server_keeps_its_startup_objects_out_of_collections(
    base_url: str,
) -> None:
    # Reading a long thread triggers full collections; without the freeze each one walks
    # every module and class the process loaded (see tune_garbage_collector).
    assert httpx.get(f"{base_url}/ok").status_code == 200
    assert gc.get_freeze_count() > 50_000
    assert gc.get_threshold()[0] == YOUNG_OBJECTS


def test_a_start_says_what_the_process_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its graphs, database (password masked), authentication and whether it runs runs:
    a worker on the wrong database sat idle with nothing in its log to say so."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    settings = Settings(database_url=url, run_workers=False)
    with caplog.at_level(logging.INFO, logger="app"), serving(create_app(settings)):
        pass
    assert f"graphs agent on {url}; auth none; runs none (`threadline worker` processes do)" in [
        r.getMessage() for r in caplog.records
    ]
