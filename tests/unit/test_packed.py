"""A run's kwargs are stored deflated (`app.db.packed`): every JSON object a client can
send comes back equal, short ones stay their text, and rows written before (JSON text)
read as before."""

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.db.packed import PACKED, pack_json, unpack_json

# JSON values as the API takes them (no NaN, no lone surrogate: `app.middleware`).
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), values, max_size=6))
def test_every_json_object_comes_back_equal(value: dict[str, Any]) -> None:
    stored = pack_json(value)
    assert unpack_json(stored) == value
    assert stored[:1] in (PACKED, b"{")


def test_a_turn_s_kwargs_are_deflated_and_an_empty_object_is_its_text() -> None:
    said = "Remind me to water the plants on Saturday morning, and to call my sister."
    kwargs = {"input": {"messages": [{"role": "user", "content": said}]}}
    text = json.dumps(kwargs, separators=(",", ":")).encode()
    stored = pack_json(kwargs)
    assert stored[:1] == PACKED and len(stored) < len(text) * 0.75, (len(stored), len(text))
    assert pack_json({}) == b"{}"


def test_json_text_written_before_reads_as_before() -> None:
    kwargs = {"input": {"messages": [{"content": "héllo wörld"}]}}
    assert unpack_json(json.dumps(kwargs).encode()) == kwargs  # as the JSON type wrote it
