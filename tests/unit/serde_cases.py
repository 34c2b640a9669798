"""Values of every kind the serializer stores, by name, for the stored-bytes fixtures.

`tests/unit/serde_format0.json` holds what the serializer wrote for each of these
before stored values carried a format marker (as of commit 133dfb3), byte for byte as
UTF-8 text: every later serializer must read each one back as `cases()[name]`. The
classes live here, not in a test module, because their "module:qualname" is in the
stored bytes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
import zoneinfo
from decimal import Decimal
from typing import Any

import pydantic
from langchain_core.documents import Document

from engine.checkpoint.serde.jsonplus import TAG, JsonSerializer
from engine.types import Interrupt, Overwrite, Send
from tests.message_samples import sample_messages


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: tuple[int, ...] = ()


@dataclasses.dataclass
class Shape:
    points: list[Point]
    colour: Colour
    seen: set[str] = dataclasses.field(default_factory=set)
    cached: int = dataclasses.field(default=0, init=False)  # not stored: not an init field


class Address(pydantic.BaseModel):
    city: str
    at: dt.datetime | None = None


class Person(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    name: str = pydantic.Field(alias="fullName")
    home: Address
    tags: tuple[str, ...] = ()


def serializer() -> JsonSerializer:
    """A serializer that allows the classes above, as a graph's schema would."""
    out = JsonSerializer()
    out.allow(Colour, Level, Point, Shape, Address, Person)
    return out


PARIS = zoneinfo.ZoneInfo("Europe/Paris")
WHEN = dt.datetime(2024, 10, 27, 2, 30, 15, 123456, fold=1, tzinfo=PARIS)
ID = uuid.UUID("0b8f3a4e-5c1d-4e2f-9a3b-7c6d5e4f3a2b")


def cases() -> dict[str, Any]:
    """New objects on every call."""
    person = Person(fullName="Ada", home=Address(city="London", at=WHEN), tags=("x",), extra=(1,))
    return {
        "null": None,
        "true": True,
        "int": -42,
        "big int": 2**100,
        "float": 1.5,
        "floats beyond json": [float("inf"), -float("inf")],
        "text": 'héllo "world" \n \u2028 😀',
        "empty containers": [[], {}, "", ()],
        "plain json": {"a": [1, 2.5, "x", None, True, {"b": {"c": []}}], "é": {}},
        "tuple": (1, (2, 3), [4, (5,)]),
        "non-str keys": {1: "e", (2, 3): "b", None: "c", 1.5: "d", "s": "f"},
        "tag key": {TAG: "tuple", "v": [1, 2]},
        "nested tag key": {"outer": {TAG: "x"}, "list": [{TAG: None, "v": 1}]},
        "set": {1, "a", (2, 3)},
        "frozenset": frozenset({1, 2}),
        "bytes": b"\x00\xffbinary",
        "naive datetime": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
        "utc datetime": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "offset datetime": dt.datetime(2024, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=-3))),
        "zoned datetime with fold": WHEN,
        "date": dt.date(2024, 2, 29),
        "time": dt.time(23, 59, 59, 999999, tzinfo=dt.timezone(dt.timedelta(hours=5))),
        "timedelta": dt.timedelta(days=-1, seconds=5, microseconds=7),
        "uuid": ID,
        "decimal": Decimal("-1.2300E+5"),
        "enum": Colour.BLUE,
        "int enum": Level.LOW,
        "dataclass": Shape([Point(1, (2, 3)), Point(4)], Colour.RED, {"a"}),
        "pydantic model": person,
        "document": Document(page_content="text", metadata={"source": "a.txt"}, id="d1"),
        "chat history": sample_messages(),
        "message in a dict": {"m": sample_messages()[4], "n": 1},
        "interrupt": Interrupt(value={"question": "ok?"}, id="i1"),
        "interrupt with schema": Interrupt(value="x", id="i2", response_schema={"type": "str"}),
        "send": Send("node", {"arg": (1, 2)}),
        "overwrite": Overwrite([1, 2]),
        "checkpoint": {
            "v": 4,
            "id": "1ef-abc",
            "ts": "2024-01-02T03:04:05.000006+00:00",
            "channel_values": {"messages": sample_messages()[:2], "count": 3},
            "channel_versions": {"__start__": 1, "messages": "00002.0.5"},
            "versions_seen": {"node": {"messages": 1}},
            "updated_channels": ["messages"],
        },
        "everything nested": {
            "at": [WHEN, dt.date(2024, 1, 1), ID, Decimal("3.14")],
            "keys": {ID: b"x", dt.date(2024, 1, 1): {Colour.RED: Level.LOW}},
            "deep": [[[({"p": person, "s": frozenset({"z"})},)]]],
        },
    }
