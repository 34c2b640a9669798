"""Fixtures of the multi-process tests: a fresh database and a deployment on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.multiprocess.topology import Deployment
from tests.pg import create_database


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """An empty database of its own, on the session's PostgreSQL server."""
    return create_database(postgres_url, f"mp_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def deployment(database_url: str, tmp_path: Path) -> Iterator[Deployment]:
    """Start processes with `deployment.start(...)`; all are stopped at teardown."""
    running = Deployment(database_url, tmp_path)
    yield running
    running.close()
