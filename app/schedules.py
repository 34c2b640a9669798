"""Cron schedules: five-field expressions (minute, hour, day of month, month, day of week)
read by cronsim, in an IANA time zone, and the occurrences they give.

An occurrence is computed in the cron's time zone and stored in UTC. Across daylight
saving changes the schedule keeps Debian cron's rules (cronsim implements them): a
time that does not exist that day (02:30 when clocks go from 02:00 to 03:00) runs at the
first minute that does, a time that occurs twice runs once (the first time), and
schedules of every hour or finer follow the clock as it goes.
"""

from __future__ import annotations

import functools
import zoneinfo
from datetime import UTC, datetime

from cronsim import CronSim, CronSimError

from app.schemas.common import refusal

# The nicknames cron (and croniter, LangGraph's parser) accepts for common schedules.
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
FIELDS = "minute hour day-of-month month day-of-week"


def _expression(schedule: str) -> str:
    """The five fields of a schedule (an alias is replaced by its fields)."""
    return ALIASES.get(schedule.strip().lower(), schedule)


def check_schedule(schedule: str) -> str:
    """`schedule` if it is five cron fields or an alias; a ValueError saying why not."""
    expression = _expression(schedule)
    if len(expression.split()) != 5:
        raise refusal(
            f"{schedule!r} is not a cron schedule: it takes five fields ({FIELDS}) or one "
            f"of {', '.join(ALIASES)}"
        )
    try:
        CronSim(expression, datetime.now(UTC))
    except CronSimError as exc:
        raise refusal(f"{schedule!r} is not a cron schedule: {exc}") from None
    return schedule


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_timezone(name: str) -> str:
    """`name` if it names an IANA time zone; a ValueError otherwise. Names are looked up
    in the list of zones, never opened as paths."""
    if name not in _zones():
        raise refusal(f"{name!r} is not an IANA time zone, such as 'UTC' or 'Europe/Paris'")
    return name


def in_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a time without a zone is taken as UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise refusal(f"{moment.isoformat()} is out of range in UTC") from None


def next_run(
    schedule: str, timezone: str | None, end_time: datetime | None, after: datetime
) -> datetime | None:
    """The first occurrence of `schedule` (in `timezone`, UTC when None) strictly after
    `after`, in UTC; None when it comes after `end_time`: the cron has ended."""
    zone = zoneinfo.ZoneInfo(timezone or "UTC")
    occurrence = next(CronSim(_expression(schedule), after.astimezone(zone))).astimezone(UTC)
    if end_time is not None and occurrence > end_time:
        return None
    return occurrence
