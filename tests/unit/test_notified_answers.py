"""Which run answers go with the notification of the run's end (PostgreSQL, a waiter in
another process): small ones, of any JSON shape a graph's values may take."""

from __future__ import annotations

from typing import Any

import pytest

from app.services.runs.execution import NOTIFIED_ELEMENTS, _may_notify


@pytest.mark.parametrize(
    ("answer", "sent"),
    [
        ({"messages": [1] * NOTIFIED_ELEMENTS}, True),
        ({"messages": [1] * (NOTIFIED_ELEMENTS + 1)}, False),
        # An entrypoint's values: text, a number, a list, null.
        ("ABC", True),
        ("x" * 1_000_000, False),
        (3, True),
        (None, True),
        ([1, 2], True),
        ([1] * (NOTIFIED_ELEMENTS + 1), False),
    ],
)
def test_an_answer_is_sent_with_the_end_when_it_is_small(answer: Any, sent: bool) -> None:
    assert _may_notify(answer) is sent
