"""What `logs.configure` lets through: alembic's upgrades, not its words on the dialect
every time it looks at the schema."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from app import logs
from app.config import Settings


@pytest.fixture
def handler() -> Iterator[logging.Handler]:
    """The handler `logs.configure` installs; pytest's handlers are put back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logs.configure(Settings(log_format="text"))
    [installed] = root.handlers
    yield installed
    root.handlers[:], root.level = handlers, level


def test_alembic_says_what_it_upgrades_only(handler: logging.Handler) -> None:
    def shown(message: str, *args: str) -> bool:
        name = "alembic.runtime.migration"
        return bool(
            handler.filter(logging.LogRecord(name, logging.INFO, "", 0, message, args, None))
        )

    assert not shown("Context impl %s.", "SQLiteImpl")
    assert not shown("Will assume %s DDL.", "non-transactional")
    assert shown("Running upgrade %s -> %s, %s", "0001", "0004", "Save records")
