"""Helpers every service uses: ids, clocks, and parsing ids from paths."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from app.errors import Invalid
from engine.checkpoint.ids import new_uuid7


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """Time-ordered (UUIDv7), so ids sort in creation order."""
    return str(new_uuid7())


def parse_uuid(value: str, what: str) -> str:
    """The canonical form of a UUID given by a client, or a 422 naming the field."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        raise Invalid(f"{what} must be a UUID, got {value!r}.") from None
