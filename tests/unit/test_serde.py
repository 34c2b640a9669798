"""The serializer must give back exactly what it was given, and refuse what it was not
told about, on both sides, without ever importing or calling anything unknown."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import re
import sys
import zoneinfo
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    ToolMessage,
)

from engine.checkpoint.serde import (
    TAG,
    JsonSerializer,
    Prepared,
    SerializationError,
    default_serializer,
)
from engine.types import Interrupt, Send
from tests.message_samples import (
    OLD_CLASS_FORM,
    OLD_MSG_FORM,
    TOOL_CALL,
    assert_same_messages,
    sample_messages,
)


def assert_same(got: Any, expected: Any) -> None:
    """Equal and of the same types all the way down: `==` alone accepts frozenset({1})
    for {1}, 1 for True and a wrong time zone."""
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        for key in expected:
            assert_same(got[key], expected[key])
    elif isinstance(expected, list | tuple):
        assert len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert_same(a, b)
    elif isinstance(expected, dt.datetime):
        assert got == expected and got.tzinfo == expected.tzinfo and got.fold == expected.fold
        assert got.utcoffset() == expected.utcoffset()
    elif isinstance(expected, dt.time):
        assert got == expected and got.tzinfo == expected.tzinfo
    else:
        assert got == expected


def round_trip(value: Any, serializer: JsonSerializer = default_serializer) -> Any:
    return serializer.loads(serializer.dumps(value))


# Strategies.

plain_keys = st.text(max_size=8).filter(lambda k: k != TAG)
plain_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
plain_json = st.recursive(
    plain_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain_keys, inner, max_size=4),
    max_leaves=30,
)

# Whole seconds: Python 3.11 cannot parse an offset of a few microseconds back.
fixed_offsets = st.integers(-86_399, 86_399).map(lambda s: dt.timedelta(seconds=s))
timezones = st.none() | st.just(dt.UTC) | fixed_offsets.map(dt.timezone) | st.timezones()
hashables = st.recursive(
    plain_scalars | st.uuids() | st.dates(),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=5,
)
tagged_scalars = (
    st.datetimes(timezones=timezones)
    | st.dates()
    | st.times(timezones=st.none() | fixed_offsets.map(dt.timezone))
    | st.timedeltas()
    | st.uuids()
    | st.binary(max_size=16)
    | st.decimals(allow_nan=False, allow_infinity=False)
)
values = st.recursive(
    plain_scalars | tagged_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.sets(hashables, max_size=3)
        | st.frozensets(hashables, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.just(TAG), inner, max_size=3)
        | st.dictionaries(hashables, inner, max_size=3)
        | st.builds(Send, st.text(max_size=5), inner)
        | st.builds(Interrupt, inner, st.text(max_size=5))
    ),
    max_leaves=25,
)


@settings(max_examples=300)
@given(plain_json)
def test_plain_json_is_written_as_itself(value: Any) -> None:
    data = default_serializer.dumps(value)
    assert data == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    assert_same(default_serializer.loads(data), value)


@settings(max_examples=300)
@given(values)
def test_tagged_values_round_trip(value: Any) -> None:
    assert_same(round_trip(value), value)


@pytest.mark.parametrize(
    "value",
    [
        {TAG: "tuple", "v": [1, 2]},
        {"outer": {TAG: "x"}, "list": [{TAG: None, "v": 1}]},
        {TAG: "this:Foo", "v": {}},
        (1, {TAG: {TAG: "dict", "v": []}}),
        {TAG: 1, 2: 3},
    ],
)
def test_dicts_owning_the_tag_key_round_trip(value: Any) -> None:
    assert_same(round_trip(value), value)


def test_floats_beyond_json_round_trip() -> None:
    assert round_trip([float("inf"), -float("inf")]) == [float("inf"), -float("inf")]


def test_zone_and_fold_are_kept() -> None:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    # 02:30 happens twice when the clocks go back; fold=1 is the second one.
    second = dt.datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=paris)
    got = round_trip(second)
    assert got.tzinfo is paris and got.fold == 1 and got.utcoffset() == dt.timedelta(hours=1)
    # 02:30 never happens when the clocks go forward; it still comes back as written.
    missing = dt.datetime(2024, 3, 31, 2, 30, tzinfo=paris)
    assert round_trip(missing).replace(tzinfo=None) == missing.replace(tzinfo=None)
    offset = dt.timezone(dt.timedelta(hours=5, minutes=30))
    assert round_trip(dt.time(1, 2, 3, 4, tzinfo=offset)).tzinfo == offset


def test_buffers_from_drivers_decode() -> None:
    data = default_serializer.dumps({"a": (1,)})
    for buffer in (memoryview(data), bytearray(data)):
        assert default_serializer.loads(buffer) == {"a": (1,)}


# The graph's own schema classes.


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
    cached: int = dataclasses.field(default=0, init=False)


class Address(pydantic.BaseModel):
    city: str
    at: dt.datetime | None = None


class Person(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    name: str = pydantic.Field(alias="fullName")
    home: Address
    tags: tuple[str, ...] = ()


class Plain:
    pass


@pytest.fixture
def schema_serializer() -> JsonSerializer:
    serializer = JsonSerializer()
    serializer.allow(Colour, Level, Point, Shape, Address, Person)
    return serializer


def test_allowed_schema_classes_round_trip(schema_serializer: JsonSerializer) -> None:
    shape = Shape([Point(1, (2, 3)), Point(4)], Colour.BLUE, {"a"})
    when = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    person = Person(fullName="Ada", home=Address(city="London", at=when), tags=("x",), extra=(1,))
    got = round_trip({"shape": shape, "person": person, "level": Level.LOW}, schema_serializer)
    assert got == {"shape": shape, "person": person, "level": Level.LOW}
    assert type(got["level"]) is Level and type(got["person"].home) is Address
    assert got["person"].model_extra == {"extra": (1,)}


def test_unallowed_class_is_refused_when_encoding() -> None:
    with pytest.raises(TypeError, match=r"test_serde:Point.*serializer\.allow\(Point\)"):
        JsonSerializer().dumps({"p": Point(1)})
    with pytest.raises(TypeError, match=r"test_serde:Plain; only JSON values"):
        JsonSerializer().dumps([Plain()])


def test_subclasses_of_builtins_and_allowed_classes_are_not_let_through(
    schema_serializer: JsonSerializer,
) -> None:
    @dataclasses.dataclass(frozen=True)
    class SubPoint(Point):
        pass

    class MyDict(dict[str, int]):
        pass

    for value in (SubPoint(1), MyDict(a=1), Level.LOW):
        with pytest.raises(TypeError, match="Cannot serialize"):
            JsonSerializer().dumps(value)
    with pytest.raises(TypeError, match="SubPoint"):
        schema_serializer.dumps(SubPoint(1))


def test_only_schema_kinds_can_be_allowed() -> None:
    with pytest.raises(TypeError, match="only dataclasses, pydantic models and Enums"):
        JsonSerializer().allow(Plain)
    with pytest.raises(TypeError, match="takes classes"):
        JsonSerializer().allow(Point(1))  # type: ignore[arg-type]


def test_unallowed_class_is_refused_when_decoding(schema_serializer: JsonSerializer) -> None:
    data = schema_serializer.dumps([Point(1)])
    with pytest.raises(SerializationError, match=r"test_serde:Point.*serializer\.allow"):
        JsonSerializer().loads(data)


def test_decoding_never_imports_the_module_a_tag_names() -> None:
    assert "this" not in sys.modules  # importing `this` prints the Zen of Python
    for tag in ("this:Foo", "os:system", "builtins:eval"):
        with pytest.raises(SerializationError, match="does not allow"):
            default_serializer.loads(json.dumps({TAG: tag, "v": {}}).encode())
    assert "this" not in sys.modules


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"\xff\xfe",
        b'{"a": 1} trailing',
        b'{"$t": "nope", "v": 1}',
        b'{"$t": ["list"], "v": 1}',
        b'{"$t": "tuple"}',
        b'{"$t": "bytes", "v": "not base64!"}',
        b'{"$t": "uuid", "v": "xyz"}',
        b'{"$t": "dict", "v": [[[1], 2]]}',
        b'{"$t": "datetime", "v": "yesterday"}',
        b'{"$t": "datetime", "v": "2024-01-01T00:00:00+00:00", "z": "Nowhere/Land"}',
        b'{"$t": "timedelta", "v": "1 day"}',
        b'{"$t": "decimal", "v": "1,5"}',
    ],
)
def test_malformed_input_raises_serialization_error(data: bytes) -> None:
    with pytest.raises(SerializationError) as info:
        default_serializer.loads(data)
    assert isinstance(info.value, ValueError)


def test_decoding_an_allowed_class_with_bad_fields_is_a_serialization_error(
    schema_serializer: JsonSerializer,
) -> None:
    data = json.dumps({TAG: "test_serde:Point", "v": {"z": 1}}).encode()
    with pytest.raises(SerializationError):
        schema_serializer.loads(data)


# Messages: LangChain's, stored in their compact "msg" form.


@pytest.mark.parametrize("message", sample_messages(), ids=lambda m: f"{type(m).__name__}-{m.id}")
def test_every_message_class_round_trips(message: BaseMessage) -> None:
    assert_same_messages(round_trip([message]), [message])  # the chat-history fast path
    assert_same_messages([round_trip({"m": message})["m"]], [message])
    inside = round_trip((message, (1, 2)))
    assert inside[1] == (1, 2)
    assert_same_messages(inside[:1], [message])


def test_a_chat_history_round_trips() -> None:
    messages = sample_messages()
    data = default_serializer.dumps(messages)
    assert data.startswith(b'[{"$t":"msg","v":')  # the chat-history fast path
    for encoded in (data, data.decode()):
        assert_same_messages(default_serializer.loads(encoded), messages)


@pytest.mark.parametrize(
    "extra",
    [
        {},  # only messages: the chat-history fast path
        {"response_metadata": {"at": dt.date(2024, 1, 2)}},  # a tag inside a message
        {"response_metadata": {"score": float("nan")}},  # what only `json` reads
        {"content": 'says "$t" and {"$t":"msg","v":{}}'},  # the tag as text
    ],
)
def test_lists_of_messages_decode_whatever_they_hold(extra: dict[str, Any]) -> None:
    values = [
        HumanMessage(content="hi", id="1"),
        AIMessage(content="hello", id="2", tool_calls=[TOOL_CALL]),
        AIMessage(id="3", **{"content": "bye", **extra}),
    ]
    data = default_serializer.dumps(values)
    for encoded in (data, data.decode()):
        got = default_serializer.loads(encoded)
        assert [type(m) for m in got] == [type(m) for m in values]
        assert repr(got) == repr(values)  # NaN is not equal to itself
    mixed = default_serializer.loads(default_serializer.dumps([*values, (1, 2)]))
    assert mixed[-1] == (1, 2) and repr(mixed[:-1]) == repr(values)


@pytest.mark.parametrize(("data", "message"), OLD_MSG_FORM)
def test_messages_the_previous_engine_stored_read_and_are_written_the_same(
    data: bytes, message: BaseMessage
) -> None:
    assert_same_messages([default_serializer.loads(data)], [message])
    assert default_serializer.dumps(message) == data


def test_a_chat_history_the_previous_engine_stored_reads() -> None:
    data = b"[" + b",".join(d for d, _ in OLD_MSG_FORM) + b"]"
    for encoded in (data, data.decode()):
        assert_same_messages(default_serializer.loads(encoded), [m for _, m in OLD_MSG_FORM])


@pytest.mark.parametrize(("data", "message"), OLD_CLASS_FORM)
def test_messages_stored_under_their_old_class_name_still_read(
    data: bytes, message: BaseMessage
) -> None:
    for serializer in (default_serializer, JsonSerializer()):
        assert_same_messages(serializer.loads(b"[" + data + b"]"), [message])
        assert_same_messages([serializer.loads(data)], [message])


def test_messages_are_stored_without_their_default_fields() -> None:
    values = [
        AIMessage(content="hello", id="2"),
        ToolMessage(content="no", tool_call_id="c1", status="error", artifact=[1]),
        AIMessageChunk(content="", chunk_position="last", response_metadata={"a": 1}),
        HumanMessage(content="", name=""),
        ChatMessage(content="c", role="critic"),
        HumanMessage(content="x", extra_field=None),
    ]
    stored = json.loads(default_serializer.dumps(values))
    assert [m["v"] for m in stored] == [
        {"content": "hello", "type": "ai", "id": "2"},
        {
            "content": "no",
            "type": "tool",
            "tool_call_id": "c1",
            "artifact": [1],
            "status": "error",
        },
        {
            "content": "",
            "response_metadata": {"a": 1},
            "type": "AIMessageChunk",
            "chunk_position": "last",
        },
        {"content": "", "type": "human", "name": ""},  # "" is not the default None
        {"content": "c", "type": "chat", "role": "critic"},
        {"content": "x", "type": "human", "extra_field": None},  # extras are always kept
    ]
    assert_same_messages(default_serializer.loads(default_serializer.dumps(values)), values)


def test_allowing_message_classes_keeps_their_own_form() -> None:
    # A graph's schema names them (`list[AnyMessage]`), so the graph allows them; the
    # class-name form would be bigger and miss the chat-history fast path.
    serializer = JsonSerializer()
    serializer.allow(AIMessage, HumanMessage, AIMessageChunk)
    data = serializer.dumps([AIMessage(content="hi", id="1")])
    assert data == b'[{"$t":"msg","v":{"content":"hi","type":"ai","id":"1"}}]'


def test_a_subclass_of_a_message_class_is_a_schema_class() -> None:
    class Note(HumanMessage):
        pass

    with pytest.raises(TypeError, match=r"serializer\.allow\(.*Note\)"):
        JsonSerializer().dumps([Note("x")])
    serializer = JsonSerializer()
    serializer.allow(Note)
    got = serializer.loads(serializer.dumps([Note("x", id="1")]))
    assert type(got[0]) is Note and got[0] == Note("x", id="1")


def test_unknown_stored_fields_are_extra_fields_as_langchain_reads_them() -> None:
    got = default_serializer.loads('[{"$t":"msg","v":{"content":"x","type":"ai","bogus":1}}]')
    assert_same_messages(got, [AIMessage("x", bogus=1)])


@pytest.mark.parametrize(
    ("stored", "error"),
    [
        ('{"content":"x","type":"tool"}', "tool_call_id"),
        ('{"content":"x","type":"robot"}', "Unknown stored message type 'robot'"),
        ('{"content":"x"}', "Unknown stored message type None"),
        ('{"type":"remove"}', "'id'"),
        ('{"content":"x","type":"ai","tool_calls":5}', "not iterable"),
    ],
)
def test_a_bad_stored_message_says_what_is_wrong(stored: str, error: str) -> None:
    for data in (f'[{{"$t":"msg","v":{stored}}}]', f'{{"m":{{"$t":"msg","v":{stored}}}}}'):
        with pytest.raises(SerializationError, match=re.escape(error)):
            default_serializer.loads(data)


def test_prepare_keeps_scalars_plain_messages_and_dicts_and_leaves_the_rest_unread() -> None:
    """Prepared elements rebuild without a parse; the others stay text for each read to
    parse, and lists and tagged values other than messages are not even parsed here."""
    s = default_serializer
    plain = HumanMessage("hi", id="1")
    with_call = AIMessage("", id="2", tool_calls=[{"name": "f", "args": {}, "id": "c"}])
    values = (plain, with_call, 7, "text", None, {"role": "user", "n": 1}, {"a": [1]})
    texts = [s.dumps(v).decode() for v in values]
    unread = ["[1, 2", '{"$t":"tuple","v":[1,']  # malformed: a parse would raise
    prepared = s.prepare([*texts, *unread])
    assert prepared[0] == Prepared(HumanMessage, {"content": "hi", "id": "1"})
    assert prepared[0].build() == plain
    assert prepared[1] == texts[1]  # a container: text, parsed on every read
    assert prepared[2:5] == [Prepared(None, 7), Prepared(None, "text"), Prepared(None, None)]
    assert prepared[5] == Prepared(dict, {"role": "user", "n": 1})
    assert prepared[5].build() == {"role": "user", "n": 1}
    assert prepared[5].build() is not prepared[5].build()
    assert prepared[6:] == [texts[6], *unread]


def test_prepared_messages_build_as_a_parse_would() -> None:
    messages = sample_messages()
    texts = [default_serializer.dumps(m).decode() for m in messages]
    prepared = default_serializer.prepare(texts)
    built = [
        p.build() if isinstance(p, Prepared) else default_serializer.loads(p) for p in prepared
    ]
    assert_same_messages(built, messages)
    for p in prepared:
        if isinstance(p, Prepared):
            assert p.build() is not p.build()
