"""Which recorded events a reader of a thread or rejoin stream gets for the modes it asked."""

import pytest

from app.api.sse import mode_of


@pytest.mark.parametrize(
    ("event", "mode"),
    [
        ("messages", "messages-tuple"),
        ("messages|agent:1", "messages-tuple"),
        ("messages/partial", "messages"),
        ("messages/complete|agent:1", "messages"),
        ("messages/metadata", "messages"),
        ("values", "values"),
        ("updates|agent:1", "updates"),
        ("custom", "custom"),
    ],
)
def test_an_event_belongs_to_the_mode_that_made_it(event: str, mode: str) -> None:
    assert mode_of(event) == mode
