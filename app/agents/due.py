"""When a reminder is due: the `due` words the model passed ("tomorrow at 9am", "in 2
hours", "friday at 5pm"), read by dateparser in the user's time zone.

Only a moment counts: words that name a day but no time of day ("friday", "tomorrow"),
or that cannot be read at all ("someday", "every monday"), or a time already past, give
no time but the question to put to the user instead. A bare hour ("at 9") is read as
that hour on the clock (09:00), not as a month or a day of the month.

The zone is the run's `configurable.timezone` (an IANA name, as a browser reports it),
else THREADLINE_TIMEZONE, else UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateparser.date import DateDataParser

from app.config import get_settings

# dateparser's periods that name a moment: "at 5pm", "in 2 hours"; "tonight", "tomorrow
# morning" (an hour of its choosing).
_MOMENTS = frozenset({"time", "part_of_day"})
# "at 9" with no minutes, am/pm or o'clock after it.
_BARE_HOUR = re.compile(r"\bat\s+(\d{1,2})\b(?!\s*(?:[:.h]\s*\d|[ap]\.?m\b|o'?clock))", re.I)


@dataclass(frozen=True)
class Due:
    """A reminder's time (aware, in UTC), or why there is none: a question for the user."""

    at: datetime | None
    problem: str | None = None

    def describe(self, zone: tzinfo) -> str:
        """The time as the user reads it, e.g. "Wed 2 Dec 2026, 09:00 Europe/Paris"."""
        assert self.at is not None
        local = self.at.astimezone(zone)
        return f"{local:%a} {local.day} {local:%b %Y, %H:%M} {zone}"


def zone_of(configurable: dict[str, Any]) -> tzinfo:
    """The user's time zone: the run's `timezone`, THREADLINE_TIMEZONE, or UTC."""
    server = get_settings().timezone
    for name in (configurable.get("timezone"), None if server == "UTC" else server):
        if isinstance(name, str) and name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return UTC


def resolve_due(words: str | None, zone: tzinfo, now: datetime) -> Due:
    """The moment `words` name, seen from `now` in `zone`; no words: no time, no question."""
    if not words or not words.strip():
        return Due(None)
    local_now = now.astimezone(zone)
    parser = DateDataParser(
        languages=["en"],
        settings={
            "PREFER_DATES_FROM": "future",
            "RELATIVE_BASE": local_now.replace(tzinfo=None),
            "TIMEZONE": str(zone),
            "RETURN_AS_TIMEZONE_AWARE": True,
            "RETURN_TIME_AS_PERIOD": True,
        },
    )
    read = parser.get_date_data(_BARE_HOUR.sub(r"at \1:00", words.strip()))
    example = 'like "tomorrow at 9am" or "in 2 hours"'
    if read.date_obj is None:
        return Due(None, f'I cannot tell when "{words}" is; give a day and a time, {example}')
    if read.period not in _MOMENTS:
        return Due(None, f'"{words}" gives no time of day; give one, {example}')
    at = read.date_obj.astimezone(UTC)
    if at <= now:
        return Due(None, f'"{words}" ({Due(at).describe(zone)}) has passed; give a time to come')
    return Due(at)
