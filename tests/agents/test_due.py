"""Reading a reminder's `due` words: a moment in the user's zone, or the question to ask."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from app.agents.due import resolve_due, zone_of

PARIS = ZoneInfo("Europe/Paris")
# Tuesday 1 December 2026, 10:30 in Paris.
NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("words", "local"),
    [
        ("tomorrow at 9", datetime(2026, 12, 2, 9, 0)),
        ("at 9", datetime(2026, 12, 2, 9, 0)),  # the next 9:00, not September
        ("at 9pm", datetime(2026, 12, 1, 21, 0)),
        ("Friday at 5pm", datetime(2026, 12, 4, 17, 0)),
        ("on Friday at 9", datetime(2026, 12, 4, 9, 0)),
        ("next monday at 10", datetime(2026, 12, 7, 10, 0)),
        ("in 2 hours", datetime(2026, 12, 1, 12, 30)),
        ("in 2 seconds", datetime(2026, 12, 1, 10, 30, 2)),
        ("tonight", datetime(2026, 12, 1, 20, 0)),
        ("at 21h30", datetime(2026, 12, 1, 21, 30)),
    ],
)
def test_a_moment_is_read_in_the_users_zone(words: str, local: datetime) -> None:
    due = resolve_due(words, PARIS, NOW)
    assert due.problem is None
    assert due.at == local.replace(tzinfo=PARIS).astimezone(UTC)
    assert due.at is not None and due.at.tzinfo == UTC


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        ("tomorrow", '"tomorrow" gives no time of day'),
        ("on Friday", '"on Friday" gives no time of day'),
        ("someday", 'I cannot tell when "someday" is'),
        ("every monday", 'I cannot tell when "every monday" is'),
        ("yesterday at 5pm", '"yesterday at 5pm" (Mon 30 Nov 2026, 17:00 Europe/Paris) has passed'),
    ],
)
def test_words_that_name_no_moment_give_the_question(words: str, problem: str) -> None:
    due = resolve_due(words, PARIS, NOW)
    assert due.at is None
    assert due.problem is not None and due.problem.startswith(problem)


def test_no_words_no_time_and_no_question() -> None:
    assert resolve_due(None, PARIS, NOW).at is None
    assert resolve_due("  ", PARIS, NOW).problem is None


def test_the_zone_is_the_runs_then_the_servers_then_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THREADLINE_TIMEZONE", raising=False)
    assert zone_of({}) == UTC
    assert zone_of({"timezone": "Nowhere/Atlantis"}) == UTC
    monkeypatch.setenv("THREADLINE_TIMEZONE", "Asia/Tokyo")
    assert zone_of({}) == ZoneInfo("Asia/Tokyo")
    assert zone_of({"timezone": "Europe/Paris"}) == PARIS
    assert resolve_due("at 9", zone_of({}), NOW).describe(zone_of({})) == (
        "Wed 2 Dec 2026, 09:00 Asia/Tokyo"
    )
