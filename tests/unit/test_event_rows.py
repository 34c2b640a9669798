"""A run's events as one row of `run_events` (app/runs/broker.py): the short forms a row
keeps of what every run records (a `metadata` event as its attempt, a `values` event as
its checkpoint's id) are read back to the same text, and anything else is kept whole."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from app.jsonable import to_json
from app.runs.broker import Event, recorded_events, recorded_row

NOW = datetime(2026, 12, 3, tzinfo=UTC)
RUN = str(uuid.uuid4())


def round_trip(run_id: str, events: list[Event]) -> tuple[dict[str, object], list[tuple]]:
    """The row recording `events`, and what reading it (with its run id as the table
    gives it back: lowercase) returns."""
    row = recorded_row(run_id, events, NOW)
    columns = (row["seq"], row["event"], row["data"], row["checkpoint_id"], row["more"])
    return row, recorded_events(run_id.lower(), columns)


def as_recorded(events: list[Event]) -> list[tuple]:
    return [
        (e.seq, e.event, e.after if e.checkpoint_id else e.data, e.checkpoint_id) for e in events
    ]


def test_a_turn_is_kept_short_and_read_back_as_it_was() -> None:
    checkpoints = [str(uuid.uuid4()), str(uuid.uuid4())]
    events = [
        Event(0, "metadata", None, {"run_id": RUN, "attempt": 12}),
        *(Event(n, "values", None, checkpoint_id=c) for n, c in enumerate(checkpoints, 1)),
    ]
    row, read = round_trip(RUN, events)
    assert row["data"] == "12"
    assert all(type(item) is str and len(item) == 22 for item in json.loads(row["more"]))
    assert read == as_recorded(events)


def test_what_the_short_forms_cannot_rebuild_is_kept_whole() -> None:
    upper = RUN.upper()  # a run id the table would give back in another case
    checkpoint = str(uuid.uuid4())
    cases = [
        (upper, Event(0, "metadata", None, {"run_id": upper, "attempt": 1})),
        (RUN, Event(0, "metadata", None, {"run_id": RUN, "attempt": 1, "more": True})),
        (RUN, Event(0, "metadata", None, {"attempt": 1, "run_id": RUN})),
        (RUN, Event(0, "metadata", None, {"run_id": str(uuid.uuid4()), "attempt": 1})),
    ]
    for run_id, event in cases:
        row, _ = round_trip(run_id, [event])
        assert row["data"] == event.data
    tail = [
        Event(1, "values", None, checkpoint_id=checkpoint, after='{"__interrupt__":[]}'),
        Event(2, "values", None, checkpoint_id=checkpoint.upper()),
        Event(3, "values", None, {"messages": []}),
    ]
    row, read = round_trip(RUN, [Event(0, "metadata", None, {}), *tail])
    assert not any(type(item) is str for item in json.loads(row["more"]))
    assert read[1:] == as_recorded(tail)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["metadata", "values", "updates", "messages/partial", "end"]),
            st.one_of(st.none(), st.uuids().map(str)),
            st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(min_value=0, max_value=10**6),
)
def test_any_events_are_read_back_as_they_were(
    specs: list[tuple[str, str | None, dict[str, object]]], attempt: int
) -> None:
    events = []
    for seq, (name, checkpoint, payload) in enumerate(specs):
        if name == "metadata":
            payload = {"run_id": RUN, "attempt": attempt}
        after = to_json(payload) if payload and checkpoint else ""
        events.append(Event(seq, name, None, payload, checkpoint_id=checkpoint, after=after))
    _, read = round_trip(RUN, events)
    assert read == as_recorded(events)
