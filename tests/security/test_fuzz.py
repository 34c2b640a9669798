"""Fuzzing what the server decodes (issue 8): stored checkpoint bytes and the SSE
`Last-Event-ID` header. Bad input gives a clear error of one kind, never another exception."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.api.sse import parse_last_event_id
from app.errors import Invalid
from app.limits import MAX_EVENT_ID
from engine.checkpoint.serde.jsonplus import TAG, JsonSerializer, SerializationError
from tests.security.conftest import budget

FUZZ = budget(300)
SERIALIZER = JsonSerializer()
TAGS = ["tuple", "set", "frozenset", "dict", "datetime", "date", "time", "timedelta", "uuid"]
TAGS += ["bytes", "decimal", "msg", "interrupt", "send", "os:system", "builtins:eval", ""]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def tagged(draw: st.DrawFn) -> Any:
    """JSON with type tags in it, well-formed or not, nested anywhere."""
    node = {TAG: draw(st.sampled_from(TAGS) | json_values)}
    node.update(draw(st.dictionaries(st.sampled_from(["v", "id", "node", "z", "f"]), json_values)))
    return draw(st.sampled_from([node, [node], {"key": node}, {"a": [1, {"b": node}]}]))


def decodes_or_refuses(data: bytes) -> None:
    try:
        SERIALIZER.loads(data)
    except SerializationError as exc:
        assert str(exc)


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_serialization_error(data: bytes) -> None:
    decodes_or_refuses(data)
    decodes_or_refuses(b'{"$t":' + data)


@FUZZ
@given(tagged())
def test_type_tags_decode_or_raise_serialization_error(value: Any) -> None:
    decodes_or_refuses(json.dumps(value).encode())


def test_deep_nesting_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError):
        SERIALIZER.loads(b'{"$t":"tuple","v":' + b"[" * 100_000 + b"]" * 100_000 + b"}")


@FUZZ
@given(st.text(max_size=40) | st.integers().map(str))
def test_last_event_id_is_an_event_id_or_a_422(value: str) -> None:
    try:
        seq = parse_last_event_id(value)
    except Invalid as exc:
        assert exc.status_code == 422 and exc.detail.startswith("Last-Event-ID must be")
    else:
        assert -1 <= seq <= MAX_EVENT_ID
        assert value.strip() == "" or int(value.strip()) == seq


@pytest.mark.parametrize(
    "value", ["1e3", "١٢", "1_000", "-2", "9" * 30, "0x10", "abc", str(MAX_EVENT_ID + 1)]
)
def test_last_event_id_refuses(value: str) -> None:
    with pytest.raises(Invalid):
        parse_last_event_id(value)


@pytest.mark.parametrize("value", ["", " ", "-1", " 7 ", "0", str(MAX_EVENT_ID)])
def test_last_event_id_accepts(value: str) -> None:
    assert parse_last_event_id(value) == (int(value) if value.strip() else -1)


async def test_a_bad_last_event_id_is_a_422_before_any_stream(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=10) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        run = await http.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "echo", "input": {"messages": []}},
        )
        assert run.is_success
        run_id = run.headers["content-location"].rsplit("/", 1)[1]
        for value in ("9" * 40, "-5", "x"):
            answer = await http.get(
                f"/threads/{thread_id}/runs/{run_id}/stream", headers={"Last-Event-ID": value}
            )
            assert answer.status_code == 422
            assert answer.json()["detail"].startswith("Last-Event-ID must be")
