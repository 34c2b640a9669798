"""Graph values on the wire: `to_json` (the stream's encoder) writes what `jsonable`
(the plain-JSON conversion) gives, for every kind of value a graph may hold."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import ipaddress
import json
import pathlib
import re
import uuid
import zoneinfo
from decimal import Decimal
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from pydantic import BaseModel

from app.jsonable import jsonable, to_json
from engine.types import Interrupt, Send


class Color(enum.Enum):
    RED = "red"


class Score(float):
    """A float of a class of its own, as NumPy's float64 is."""


@dataclasses.dataclass
class Point:
    x: int
    y: list[Any]


class Model(BaseModel):
    name: str
    when: datetime.date


VALUES: list[Any] = [
    {"messages": [HumanMessage(content="hi", id="1"), AIMessage(content="hello", id="2")]},
    [AIMessageChunk(content="tok", id="3"), {"langgraph_node": "model", "langgraph_step": 1}],
    {"__interrupt__": (Interrupt(value={"question": "ok?"}, id="i1"),)},
    {"sends": [Send("tools", {"call": 1})]},
    {"when": datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC), "id": uuid.UUID(int=7)},
    {"color": Color.RED, "price": Decimal("1.5"), "raw": b"\x00\xff", "tags": {"a"}},
    {"point": Point(1, [Point(2, [])]), "model": Model(name="m", when=datetime.date(2026, 1, 2))},
    {1: "int key", "nested": {2: [None, True, 1.5]}},
    {"error": ValueError("bad")},
    {"other": object},
    {"scores": [float("nan"), float("inf"), -float("inf"), 0.5, Score(0.25), Score("nan")]},
    # Messages are written from their fields: what `model_dump` gives, extra fields last.
    [
        AIMessage(
            content=[{"type": "text", "text": "hi"}, "x"],
            tool_calls=[
                {"name": "f", "args": {"a": 1, "when": datetime.date(2026, 1, 2)}, "id": "c1"}
            ],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            response_metadata={"model": Model(name="m", when=datetime.date(2026, 1, 2))},
            id="a",
            name="n",
            extra_field=5,
        ),
        AIMessage(
            content="", invalid_tool_calls=[{"name": "f", "args": "{", "id": "c2", "error": "bad"}]
        ),
        ToolMessage(content="r", tool_call_id="c1", artifact={"x": Point(1, [])}, status="error"),
        AIMessageChunk(
            content="t", tool_call_chunks=[{"name": "f", "args": "{", "id": "c3", "index": 0}]
        ),
        HumanMessage(content="h", additional_kwargs={"k": [1, {"z": float("nan")}]}),
        RemoveMessage(id="x"),
    ],
]


@pytest.mark.parametrize("value", VALUES)
def test_to_json_writes_what_jsonable_gives(value: Any) -> None:
    assert json.loads(to_json(value)) == json.loads(json.dumps(jsonable(value)))


def test_messages_are_written_as_model_dump_gives_them() -> None:
    messages = [m for value in VALUES if isinstance(value, list) for m in value]
    messages = [m for m in messages if isinstance(m, BaseMessage)]
    assert len(messages) > 5
    for message in messages:
        assert json.loads(to_json(message)) == json.loads(json.dumps(jsonable(message)))
        assert jsonable(message) == jsonable(message.model_dump())


def test_numpy_numbers_and_arrays_are_numbers_and_lists() -> None:
    numpy = pytest.importorskip("numpy")
    value = {"f": numpy.float64(0.5), "i": numpy.int64(3), "a": numpy.array([1, 2])}
    assert json.loads(to_json(value)) == {"f": 0.5, "i": 3, "a": [1, 2]}


def test_numbers_json_has_not_are_null() -> None:
    assert to_json([float("nan"), -float("inf"), 2**70]) == f"[null,null,{2**70}]"
    assert jsonable({"x": float("inf")}) == {"x": None}


def test_keys_json_cannot_write_fall_back_to_text() -> None:
    assert json.loads(to_json({("a", 1): 1})) == {"('a', 1)": 1}


def test_to_json_is_compact_and_keeps_unicode() -> None:
    assert to_json({"text": "héllo", "n": [1, 2]}) == '{"text":"héllo","n":[1,2]}'


def test_an_interrupt_keeps_its_response_schema() -> None:
    """As LangGraph's server writes an interrupt: a client can build the answer's form."""
    asked = Interrupt(value="age?", id="i2", response_schema={"type": "integer"})
    written = {"value": "age?", "id": "i2", "response_schema": {"type": "integer"}}
    assert jsonable(asked) == written
    assert json.loads(to_json({"__interrupt__": [asked]})) == {"__interrupt__": [written]}


def test_standard_library_values_are_written_as_langgraphs_server_writes_them() -> None:
    """What the checkpoints now keep (a path, a time zone, a pattern, ...) is shown as its
    text or number on the wire, not as its repr."""
    value = {
        "span": datetime.timedelta(seconds=90),
        "queue": collections.deque([1, 2]),
        "ordered": collections.OrderedDict(b=1, a=2),
        "counts": collections.Counter("aab"),
        "path": pathlib.PurePosixPath("/data/x.csv"),
        "ip": ipaddress.ip_network("10.0.0.0/8"),
        "pattern": re.compile(r"\d+"),
        "utc": datetime.UTC,
        "zone": zoneinfo.ZoneInfo("Europe/Oslo"),
    }
    shown = {
        "span": 90.0,
        "queue": [1, 2],
        "ordered": {"b": 1, "a": 2},
        "counts": {"a": 2, "b": 1},
        "path": "/data/x.csv",
        "ip": "10.0.0.0/8",
        "pattern": r"\d+",
        "utc": "UTC",
        "zone": "Europe/Oslo",
    }
    assert jsonable(value) == shown
    assert json.loads(to_json(value)) == shown
