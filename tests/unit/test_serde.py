"""The serializer must give back exactly what it was given, and refuse what it was not
told about, on both sides, without ever importing or calling anything unknown; in both
formats (JSON text, and msgpack bytes), and for bytes any earlier version stored."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import ipaddress
import json
import math
import pathlib
import re
import subprocess
import sys
import zoneinfo
from collections import Counter, OrderedDict, defaultdict
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import ormsgpack
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

from engine.checkpoint import packed
from engine.checkpoint.messages import blueprint
from engine.checkpoint.serde import jsonplus
from engine.checkpoint.serde.jsonplus import (
    TAG,
    JsonSerializer,
    Prepared,
    SerializationError,
    default_serializer,
)
from engine.types import Command, Interrupt, Overwrite, Send, TimeoutPolicy
from tests.message_samples import (
    OLD_CLASS_FORM,
    OLD_MSG_FORM,
    TOOL_CALL,
    assert_same_messages,
    sample_messages,
)
from tests.unit import serde_cases
from tests.unit.serde_cases import Address, Colour, Level, Person, Point, Shape

try:
    import numpy
    from hypothesis.extra import numpy as hnp
except ImportError:  # numpy is optional: its arrays are then never met
    numpy = None  # type: ignore[assignment]

DICT_CLASSES = (dict, OrderedDict, Counter, defaultdict)


def assert_same(got: Any, expected: Any) -> None:
    """Equal and of the same types all the way down: `==` alone accepts frozenset({1})
    for {1}, 1 for True and a wrong time zone."""
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        assert getattr(got, "default_factory", None) is getattr(expected, "default_factory", None)
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
    elif type(expected) in (Send, Interrupt, Overwrite, Command):  # they may hold arrays
        for field in dataclasses.fields(expected):
            if field.compare:
                assert_same(getattr(got, field.name), getattr(expected, field.name))
    elif numpy is not None and type(expected) is numpy.ndarray:
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()  # NaN too, bit for bit
        assert got.flags.writeable
    else:
        assert got == expected


def as_stored(value: Any, keep_tuples: bool = False) -> Any:
    """What `value` reads back as once stored: its tuples as lists, as LangGraph's savers
    give them back, but where a value must stay hashable (a set's elements, a dict's keys
    and all inside them) and inside a Command (whose update may be pairs)."""
    cls = type(value)
    if cls is tuple:
        items = [as_stored(v, keep_tuples) for v in value]
        return tuple(items) if keep_tuples else items
    if cls is list:
        return [as_stored(v, keep_tuples) for v in value]
    if cls in DICT_CLASSES:  # a subclass's values are a dict's
        items = {as_stored(k, True): as_stored(v, keep_tuples) for k, v in value.items()}
        if cls is defaultdict:
            return defaultdict(value.default_factory, items)
        return items if cls is dict else cls(items)
    if cls in (set, frozenset, Command) or keep_tuples:
        return value
    if cls is Send:
        return Send(value.node, as_stored(value.arg), timeout=value.timeout)
    if cls is Interrupt:
        return Interrupt(
            value=as_stored(value.value),
            id=value.id,
            response_schema=as_stored(value.response_schema),
        )
    if cls is Overwrite:
        return Overwrite(as_stored(value.value))
    if isinstance(value, pydantic.BaseModel):  # messages too
        fields = {**vars(value), **(value.model_extra or {})}
        return value.model_copy(update={k: as_stored(v) for k, v in fields.items()})
    if dataclasses.is_dataclass(value):
        init = [f.name for f in dataclasses.fields(value) if f.init]
        return dataclasses.replace(value, **{k: as_stored(getattr(value, k)) for k in init})
    return value


def round_trip(value: Any, serializer: JsonSerializer = default_serializer) -> Any:
    return serializer.loads(serializer.dumps(value))


def binary_round_trip(value: Any, serializer: JsonSerializer = default_serializer) -> Any:
    return serializer.loads(serializer.dumps_binary(value))


# Both formats: what a test of round trips or refusals runs on.
FORMATS = {"json": JsonSerializer.dumps, "binary": JsonSerializer.dumps_binary}


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

# The standard library's types stored by a tag of their own.
# Those whose text reads back as themselves (see the refusals below).
paths = st.builds(
    lambda cls, parts: cls(*parts),
    st.sampled_from([pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.Path]),
    st.lists(st.text(alphabet="ab/.\\:é ", max_size=4), max_size=3),
).filter(lambda path: type(path)(str(path)) == path)
ip_values = st.ip_addresses() | st.builds(
    lambda address, bits: ipaddress.ip_interface(f"{address}/{bits % (address.max_prefixlen + 1)}"),
    st.ip_addresses(),
    st.integers(0, 128),
).flatmap(lambda interface: st.sampled_from([interface, interface.network]))
tz_values = (
    fixed_offsets.map(dt.timezone)
    | st.builds(dt.timezone, fixed_offsets, st.text(max_size=5))
    | st.timezones()
)
patterns = st.builds(
    re.compile,
    st.sampled_from(["", "a+", r"\d{2,}", "(x|y)*$", "é."]),
    st.sampled_from([0, re.IGNORECASE, re.MULTILINE | re.DOTALL, re.VERBOSE]),
) | st.builds(re.compile, st.sampled_from([b"", b"a+", rb"\x00."]))
stdlib_hashables = paths | ip_values | tz_values | patterns
if numpy is not None:
    arrays = hnp.arrays(
        dtype=hnp.scalar_dtypes() | hnp.byte_string_dtypes() | hnp.unicode_string_dtypes(),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
    )
    stdlib_scalars = stdlib_hashables | arrays
else:
    stdlib_scalars = stdlib_hashables
FACTORIES = [None, list, dict, set, int, float, str, tuple, frozenset, OrderedDict, Counter]


def stdlib_mappings(keys: Any, inner: Any) -> Any:
    """OrderedDicts, defaultdicts and Counters of `keys` (the latter of any values, as a
    Counter may hold)."""
    items = st.dictionaries(keys, inner, max_size=3)
    return (
        items.map(OrderedDict)
        | st.builds(defaultdict, st.sampled_from(FACTORIES), items)
        | items.map(Counter)
    )


hashables = st.recursive(
    plain_scalars | st.uuids() | st.dates() | stdlib_hashables,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=5,
)
tagged_scalars = (
    stdlib_scalars
    | st.datetimes(timezones=timezones)
    | st.dates()
    | st.times(timezones=st.none() | fixed_offsets.map(dt.timezone))
    | st.timedeltas()
    | st.uuids()
    | st.binary(max_size=16)
    | st.decimals(allow_nan=False, allow_infinity=False)
)
# A Send's own timeout: none (stored as before timeouts existed), or a policy.
send_timeouts = st.none() | st.builds(
    TimeoutPolicy,
    run_timeout=st.none() | st.floats(0.001, 1e6),
    idle_timeout=st.floats(0.001, 1e6),
    refresh_on=st.sampled_from(["auto", "heartbeat"]),
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
        | stdlib_mappings(st.text(max_size=3) | st.just(TAG) | hashables, inner)
        | st.builds(Send, st.text(max_size=5), inner, timeout=send_timeouts)
        | st.builds(Command, update=inner, resume=inner, goto=st.lists(inner, max_size=2))
        | st.builds(Interrupt, inner, st.text(max_size=5))
    ),
    max_leaves=25,
)


@settings(max_examples=300)
@given(plain_json)
def test_plain_json_is_written_as_itself(value: Any) -> None:
    data = default_serializer.dumps(value)
    assert_same(json.loads(data), value)  # what any JSON reader reads
    assert_same(default_serializer.loads(data), value)
    assert_same(default_serializer.loads(data.decode()), value)


@pytest.mark.parametrize(
    "text",
    ["[18446744073709551616,-9223372036854775809,1e400]", '{"a":NaN}', '["\\ud800"]', "-0"],
)
def test_plain_json_reads_as_json_reads_it(text: str) -> None:
    """Plain JSON is read by a faster decoder than json's, with json's values: ints of any
    size, and what only json reads (NaN, infinities, a lone surrogate)."""
    expected = json.loads(text)
    assert repr(default_serializer.loads(text)) == repr(expected)
    assert repr(default_serializer.loads(text.encode())) == repr(expected)


json_64 = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain_keys, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300)
@given(json_64, st.sampled_from(["", "hi", TAG]))
def test_plain_json_is_written_by_the_c_encoder(value: Any, key: str) -> None:
    """orjson writes it, unless it holds the tag as a key (which is escaped)."""
    wrapped = {key: value}
    data = default_serializer.dumps(wrapped)
    if key == TAG:
        assert data.startswith(b'{"$t":"dict","v":[["$t",')
    elif TAG not in json.dumps(value):  # a str with the tag may take the walk: it is rare
        assert data == orjson.dumps(wrapped)
    assert_same(default_serializer.loads(data), wrapped)


@settings(max_examples=300)
@given(values)
def test_tagged_values_round_trip(value: Any) -> None:
    assert_same(round_trip(value), as_stored(value))


def test_tuples_come_back_as_lists_but_where_they_must_stay_tuples() -> None:
    """As LangGraph's savers give them back; a set's elements and a dict's keys must
    stay hashable, and a Command's update may be pairs."""
    value = {
        "t": (1, (2, 3)),
        "keys": {(1, (2,)): (3,)},
        "set": {(1, (2,))},
        "command": Command(update=[("x", (1,))]),
        "send": Send("n", (1,)),
    }
    expected = {
        "t": [1, [2, 3]],
        "keys": {(1, (2,)): [3]},
        "set": {(1, (2,))},
        "command": Command(update=[("x", (1,))]),
        "send": Send("n", [1]),
    }
    for dumps in FORMATS.values():
        assert_same(default_serializer.loads(dumps(default_serializer, value)), expected)
    # Stored with its tag by earlier versions, a tuple is still read as one.
    assert_same(default_serializer.loads(b'{"$t":"tuple","v":[1,2]}'), (1, 2))


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
    assert_same(round_trip(value), as_stored(value))


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
    data = default_serializer.dumps({"a": (1,), "b": {2}})
    for buffer in (memoryview(data), bytearray(data)):
        assert default_serializer.loads(buffer) == {"a": [1], "b": {2}}


# The graph's own schema classes.


class Plain:
    pass


@pytest.fixture
def schema_serializer() -> JsonSerializer:
    return serde_cases.serializer()


def test_allowed_schema_classes_round_trip(schema_serializer: JsonSerializer) -> None:
    shape = Shape([Point(1, (2, 3)), Point(4)], Colour.BLUE, {"a"})
    when = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    person = Person(fullName="Ada", home=Address(city="London", at=when), tags=("x",), extra=(1,))
    got = round_trip({"shape": shape, "person": person, "level": Level.LOW}, schema_serializer)
    assert got == as_stored({"shape": shape, "person": person, "level": Level.LOW})
    assert got["shape"].points[0].y == [2, 3] and got["person"].tags == ["x"]
    assert type(got["level"]) is Level and type(got["person"].home) is Address
    assert got["person"].model_extra == {"extra": [1]}


def test_unallowed_class_is_refused_when_encoding() -> None:
    with pytest.raises(TypeError, match=r"serde_cases:Point.*serde\.allow\(Point\)"):
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


def test_a_str_of_a_library_subclass_is_stored_as_its_text() -> None:
    """LangChain's `message.text` is a str subclass that nodes often write to state;
    LangGraph's savers store it as a str, and so do we. A str Enum still needs allowing."""
    text = AIMessage(content="hi").text
    assert type(text) is not str
    stored = JsonSerializer().loads(JsonSerializer().dumps({"result": text, "all": [text]}))
    assert stored == {"result": "hi", "all": ["hi"]}
    assert type(stored["result"]) is str

    class Colour(enum.StrEnum):
        RED = "red"

    with pytest.raises(TypeError, match="Cannot serialize"):
        JsonSerializer().dumps(Colour.RED)


def test_only_schema_kinds_can_be_allowed() -> None:
    with pytest.raises(TypeError, match="only dataclasses, pydantic models, NamedTuples and Enums"):
        JsonSerializer().allow(Plain)
    with pytest.raises(TypeError, match="takes classes"):
        JsonSerializer().allow(Point(1))  # type: ignore[arg-type]


def test_unallowed_class_is_refused_when_decoding(schema_serializer: JsonSerializer) -> None:
    data = schema_serializer.dumps([Point(1)])
    with pytest.raises(SerializationError, match=r"serde_cases:Point.*serde\.allow"):
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
    data = json.dumps({TAG: "serde_cases:Point", "v": {"z": 1}}).encode()
    with pytest.raises(SerializationError):
        schema_serializer.loads(data)


# Messages: LangChain's, stored in their compact "msg" form.


@pytest.mark.parametrize("message", sample_messages(), ids=lambda m: f"{type(m).__name__}-{m.id}")
def test_every_message_class_round_trips(message: BaseMessage) -> None:
    stored = as_stored(message)
    assert_same_messages(round_trip([message]), [stored])  # the chat-history fast path
    assert_same_messages([round_trip({"m": message})["m"]], [stored])
    inside = round_trip((message, (1, 2)))
    assert inside[1] == [1, 2]
    assert_same_messages(inside[:1], [stored])


def test_a_chat_history_round_trips() -> None:
    messages = sample_messages()
    data = default_serializer.dumps(messages)
    assert data.startswith(b'[{"$t":"msg","v":')  # the chat-history fast path
    for encoded in (data, data.decode()):
        assert_same_messages(default_serializer.loads(encoded), as_stored(messages))


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
    assert mixed[-1] == [1, 2] and repr(mixed[:-1]) == repr(values)


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

    with pytest.raises(TypeError, match=r"serde\.allow\(.*Note\)"):
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


def test_prepare_keeps_plain_values_and_messages_and_leaves_the_rest_unread() -> None:
    """Prepared elements rebuild without parsing their whole text again, each with
    containers of its own; those holding tagged values stay text for each read to parse,
    and tagged values other than messages are not even parsed here."""
    s = default_serializer
    plain = HumanMessage("hi", id="1")
    with_call = AIMessage("", id="2", tool_calls=[{"name": "f", "args": {}, "id": "c"}])
    dated = AIMessage("", id="3", additional_kwargs={"at": dt.datetime(2026, 1, 1)})
    values = (plain, with_call, 7, "text", None, {"role": "user", "n": 1}, {"a": [1]}, dated)
    texts = [s.dumps(v).decode() for v in values]
    unread = ['{"$t":"tuple","v":[1,']  # malformed: a parse would raise
    prepared = s.prepare([*texts, *unread])
    found = blueprint(HumanMessage, {"content": "hi", "id": "1"})
    assert found is not None
    assert prepared[0] == Prepared(HumanMessage, found, found.values)
    for p, value in zip(prepared[:2], values[:2], strict=True):
        assert isinstance(p, Prepared)
        built, again = p.build(), p.build()
        assert built == value and list(vars(built)) == list(vars(value))
        assert vars(built) == p.state  # what a later put compares it with
        assert built.additional_kwargs is not again.additional_kwargs  # containers of its own
    assert with_call.tool_calls == prepared[1].build().tool_calls
    assert prepared[1].build().tool_calls is not prepared[1].build().tool_calls
    assert prepared[2:5] == [Prepared(None, v, v) for v in (7, "text", None)]
    assert prepared[5] == Prepared(dict, {"role": "user", "n": 1}, {"role": "user", "n": 1})
    assert prepared[5].build() == {"role": "user", "n": 1}
    assert prepared[5].build() is not prepared[5].build()
    nested = prepared[6]
    assert isinstance(nested, Prepared) and nested.build() == {"a": [1]} == nested.state
    assert nested.build()["a"] is not nested.build()["a"]
    assert prepared[7:] == [texts[7], *unread]  # a datetime inside: parsed on every read


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf, 2**80, -0.0, 1e308])
def test_prepared_containers_keep_every_number(number: float) -> None:
    """Containers decoded anew for each build keep their numbers exactly; those holding
    NaN or an infinity stay text (a NaN decoded anew never equals the one compared)."""
    values = [
        AIMessage("hi", id="1", response_metadata={"x": number, "y": [number]}),
        {"x": {"y": number}},
    ]
    texts = [default_serializer.dumps(v).decode() for v in values]
    for text, value, p in zip(texts, values, default_serializer.prepare(texts), strict=True):
        built = p.build() if isinstance(p, Prepared) else default_serializer.loads(text.encode())
        assert repr(built) == repr(value)
        assert isinstance(p, Prepared) == math.isfinite(number)
        if isinstance(p, Prepared):
            assert (vars(built) if isinstance(built, AIMessage) else built) == p.state


chat_messages = st.builds(
    AIMessage,
    content=st.text(max_size=5)
    | st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}), max_size=2
    ),
    id=st.text(max_size=5),
    response_metadata=st.dictionaries(st.text(max_size=3), plain_json, max_size=3),
) | st.builds(
    HumanMessage,
    content=st.text(max_size=5),
    additional_kwargs=st.dictionaries(st.text(max_size=3), values, max_size=2),
)


@settings(max_examples=300)
@given(st.lists(values | plain_json | chat_messages, max_size=4))
def test_prepared_elements_build_what_a_parse_gives(elements: list[Any]) -> None:
    """Every prepared element builds as its text parses, with containers of its own, and
    holds as its state what it builds (compared in a list, as a put compares)."""
    texts = [default_serializer.dumps(e).decode() for e in elements]
    for text, p in zip(texts, default_serializer.prepare(texts), strict=True):
        parsed = default_serializer.loads(text.encode())
        if not isinstance(p, Prepared):
            assert p == text
            continue
        built = p.build()
        assert_same(built, parsed)
        assert [getattr(built, "__dict__", built)] == [p.state]
        if isinstance(built, dict | list | BaseMessage):
            assert p.build() is not built


def test_prepared_messages_build_as_a_parse_would() -> None:
    messages = sample_messages()
    texts = [default_serializer.dumps(m).decode() for m in messages]
    prepared = default_serializer.prepare(texts)
    built = [
        p.build() if isinstance(p, Prepared) else default_serializer.loads(p) for p in prepared
    ]
    assert_same_messages(built, as_stored(messages))
    for p in prepared:
        if isinstance(p, Prepared):
            assert p.build() is not p.build()


# Format 1: msgpack bytes, for stores that keep bytes.

# Every supported kind nested in every other, the graph's schema classes and messages too.
schema_leaves = (
    st.sampled_from(Colour)
    | st.just(Level.LOW)
    | st.builds(Point, st.integers(-5, 5), st.lists(st.integers(), max_size=2).map(tuple))
    | st.builds(Address, city=st.text(max_size=5), at=st.none() | st.datetimes(timezones=timezones))
    | st.sampled_from(range(len(sample_messages()))).map(lambda i: sample_messages()[i])
    | st.builds(Overwrite, plain_json)
)
schema_values = st.recursive(
    plain_scalars | tagged_scalars | schema_leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.sets(hashables, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.just(TAG), inner, max_size=3)
        | st.dictionaries(hashables, inner, max_size=3)
        | stdlib_mappings(st.text(max_size=3) | hashables, inner)
        | st.builds(Send, st.text(max_size=5), inner, timeout=send_timeouts)
        | st.builds(Command, update=inner, resume=inner, goto=st.lists(inner, max_size=2))
        | st.builds(Interrupt, inner, st.text(max_size=5))
        | st.builds(
            Shape, st.lists(st.builds(Point, st.integers()), max_size=2), st.just(Colour.RED)
        )
    ),
    max_leaves=20,
)
SCHEMA_SERIALIZER = JsonSerializer()
SCHEMA_SERIALIZER.allow(Colour, Level, Point, Shape, Address, Person)


def assert_same_deep(got: Any, expected: Any) -> None:
    """assert_same, with messages and schema objects compared field by field."""
    if isinstance(expected, BaseMessage):
        assert_same_messages([got], [expected])
    elif isinstance(expected, pydantic.BaseModel):
        assert type(got) is type(expected)
        assert_same_deep(vars(got), vars(expected))
        assert_same_deep(got.model_extra, expected.model_extra)
    elif dataclasses.is_dataclass(expected):  # Send, Interrupt and Overwrite too
        assert type(got) is type(expected)
        for field in dataclasses.fields(expected):
            assert_same_deep(getattr(got, field.name), getattr(expected, field.name))
    elif type(expected) in (*DICT_CLASSES, list, tuple):
        assert type(got) is type(expected)
        assert len(got) == len(expected)
        if isinstance(expected, dict):
            assert list(got) == list(expected)
            assert getattr(got, "default_factory", None) is getattr(
                expected, "default_factory", None
            )
            for key in expected:
                assert_same_deep(got[key], expected[key])
        else:
            for a, b in zip(got, expected, strict=True):
                assert_same_deep(a, b)
    else:
        assert_same(got, expected)


native_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)  # what msgpack's ints hold
    | st.floats()
    | st.text()
    | st.binary(max_size=8)
)
native = st.recursive(
    native_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300)
@given(native)
def test_plain_values_are_written_by_the_c_encoder_alone(value: Any) -> None:
    data = default_serializer.dumps_binary(value)
    assert data == packed.FORMAT + ormsgpack.packb(value)  # no extension, no Python
    assert repr(default_serializer.loads(data)) == repr(value)  # NaN is not equal to itself


@settings(max_examples=300)
@given(schema_values)
def test_every_kind_nested_in_every_other_round_trips_in_both_formats(value: Any) -> None:
    for dumps in FORMATS.values():
        got = SCHEMA_SERIALIZER.loads(dumps(SCHEMA_SERIALIZER, value))
        assert_same_deep(got, as_stored(value))


@settings(max_examples=200)
@given(schema_values, st.sampled_from([Plain(), Point(1)]))
def test_a_class_not_allowed_is_refused_wherever_it_is_nested(value: Any, bad: Any) -> None:
    for wrapped in ([value, bad], {"k": (bad,)}, {1: {"x": [bad]}}, Send("n", {bad: 1})):
        for dumps in FORMATS.values():
            with pytest.raises(TypeError, match="Cannot serialize"):
                dumps(default_serializer, wrapped)


@settings(max_examples=200)
@given(schema_values)
def test_a_schema_class_not_allowed_is_refused_when_decoding_both_formats(value: Any) -> None:
    """A serializer that allows nothing reads what holds no schema object, and refuses
    what holds one, naming it."""
    wrapped = [value, Point(1)]
    for dumps in FORMATS.values():
        data = dumps(SCHEMA_SERIALIZER, wrapped)
        with pytest.raises(SerializationError, match=r"serde_cases:\w+.*serde\.allow"):
            JsonSerializer().loads(data)


@pytest.mark.parametrize(
    "value",
    [
        {1: "a"},
        [{(1, 2): {None: b"x"}}],
        {"k": {Colour.RED: 1}},
        Send("n", {1.5: 2}),
        Shape([Point(1)], Colour.BLUE, {"a"}),
        {"big": [2**64, -(2**63) - 1, 2**63, -(2**63), 2**200]},
        {"floats": [float("inf"), -0.0, 1e308]},
        "\u2028 😀",
    ],
)
def test_values_the_c_encoder_refuses_round_trip_through_the_walk(value: Any) -> None:
    assert_same_deep(binary_round_trip(value, SCHEMA_SERIALIZER), as_stored(value))


def test_bytearrays_and_memoryviews_come_back_as_bytes() -> None:
    """The C encoder takes them as bytes; refusing them would cost a walk of every value."""
    got = binary_round_trip({"a": bytearray(b"x"), "b": [memoryview(b"yz")]})
    assert_same(got, {"a": b"x", "b": [b"yz"]})


@pytest.mark.parametrize("message", sample_messages(), ids=lambda m: f"{type(m).__name__}-{m.id}")
def test_every_message_class_round_trips_in_binary(message: BaseMessage) -> None:
    stored = as_stored(message)
    assert_same_messages(binary_round_trip([message]), [stored])
    assert_same_messages([binary_round_trip({"m": message})["m"]], [stored])


def test_a_str_subclass_is_stored_as_its_text_in_both_formats() -> None:
    class Text(str):
        pass

    for dumps in FORMATS.values():
        got = default_serializer.loads(dumps(default_serializer, {"t": Text("hi"), 1: Text("x")}))
        assert_same(got, {"t": "hi", 1: "x"})


def test_dumps_sharing_encodes_shared_values_once_and_reads_as_copies() -> None:
    inner = {"deep": [1, 2, (3,)]}
    first, second = {"a": inner, "b": 1}, {"a": inner, "c": "x"}
    shared: dict[int, Any] = {}
    data = [default_serializer.dumps_binary_sharing(d, shared) for d in (first, second)]
    assert len(shared) == 3  # inner, 1 and "x": each encoded once
    got = [default_serializer.loads(d) for d in data]
    assert_same(got, as_stored([first, second]))
    assert got[0]["a"] is not got[1]["a"]
    # A key that is not a str, or a value that cannot be stored: as dumps_binary does.
    assert_same(
        default_serializer.loads(default_serializer.dumps_binary_sharing({1: inner}, shared)),
        as_stored({1: inner}),
    )
    with pytest.raises(TypeError, match="Cannot serialize"):
        default_serializer.dumps_binary_sharing({"p": Plain()}, shared)


@pytest.mark.parametrize(
    "data",
    [
        packed.FORMAT,
        packed.FORMAT + b"\xc1",
        packed.FORMAT + b"\x91",
        packed.FORMAT + b"\x91" * 100_000 + b"\x01",
        packed.FORMAT + ormsgpack.packb(ormsgpack.Ext(99, ormsgpack.packb(1))),
        packed.FORMAT + ormsgpack.packb(ormsgpack.Ext(packed.TUPLE, b"\xc1")),
        packed.FORMAT + ormsgpack.packb(ormsgpack.Ext(packed.UUID, ormsgpack.packb(b"short"))),
        packed.FORMAT + ormsgpack.packb(ormsgpack.Ext(packed.DICT, ormsgpack.packb([1]))),
        packed.FORMAT + ormsgpack.packb(ormsgpack.Ext(packed.MESSAGE, ormsgpack.packb({}))),
        b"\x92\x02\xc0",  # a later version of the binary format
        b"\x00",
    ],
)
def test_malformed_binary_input_raises_serialization_error(data: bytes) -> None:
    with pytest.raises(SerializationError):
        default_serializer.loads(data)


def test_a_schema_tag_the_binary_decoder_does_not_know_is_refused_without_importing() -> None:
    assert "this" not in sys.modules
    for name in ("this:Foo", "os:system", 7):
        payload = ormsgpack.packb([name, {}])
        data = packed.FORMAT + ormsgpack.packb(ormsgpack.Ext(packed.SCHEMA, payload))
        with pytest.raises(SerializationError, match="does not allow|unknown type"):
            default_serializer.loads(data)
    assert "this" not in sys.modules


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_arbitrary_binary_input_decodes_or_raises_serialization_error(data: bytes) -> None:
    try:
        default_serializer.loads(packed.FORMAT + data)
    except SerializationError as exc:
        assert str(exc)


# Stored bytes of earlier versions.

STORED_FORMAT_0 = json.loads(
    (Path(__file__).parent / "serde_format0.json").read_text(encoding="utf-8")
)


def test_the_fixtures_cover_every_case() -> None:
    assert set(STORED_FORMAT_0) == set(serde_cases.cases())


@pytest.mark.parametrize("name", sorted(STORED_FORMAT_0))
def test_what_the_json_serializer_stored_before_format_1_still_reads(name: str) -> None:
    """Bytes written before the binary format existed (tests/unit/serde_cases.py says
    how they were made), as bytes and as text."""
    serializer = serde_cases.serializer()
    expected = serde_cases.cases()[name]
    text = STORED_FORMAT_0[name]
    for stored in (text.encode(), text):
        assert_same_deep(serializer.loads(stored), expected)
    # What is written now reads back the same, in both formats, but its tuples as lists.
    for dumps in FORMATS.values():
        assert_same_deep(serializer.loads(dumps(serializer, expected)), as_stored(expected))


def test_old_chat_elements_still_prepare() -> None:
    """The SQL saver keeps list elements as the text each one was stored as."""
    history = json.loads(STORED_FORMAT_0["chat history"])
    texts = [json.dumps(m, separators=(",", ":"), ensure_ascii=False) for m in history]
    prepared = default_serializer.prepare(texts)
    built = [
        p.build() if isinstance(p, Prepared) else default_serializer.loads(p) for p in prepared
    ]
    assert_same_messages(built, serde_cases.cases()["chat history"])


# The standard library's types (and numpy's arrays), stored by a tag of their own.

# What each is stored as, in JSON; in msgpack, the schema extension of [tag, payload].
STDLIB_FORMS = [
    (OrderedDict([("b", 1), ("a", 2)]), b'{"$t":"odict","v":{"b":1,"a":2}}'),
    (OrderedDict([(1, "x")]), b'{"$t":"odict","v":{"$t":"dict","v":[[1,"x"]]}}'),
    (defaultdict(list, {"k": [1]}), b'{"$t":"defaultdict","v":["list",{"k":[1]}]}'),
    (defaultdict(None), b'{"$t":"defaultdict","v":[null,{}]}'),
    (Counter("aab"), b'{"$t":"counter","v":{"a":2,"b":1}}'),
    (pathlib.PurePosixPath("/a/b"), b'{"$t":"path","v":["PurePosixPath","/a/b"]}'),
    (pathlib.PureWindowsPath("c:/x"), b'{"$t":"path","v":["PureWindowsPath","c:\\\\x"]}'),
    (Path("rel/x.txt"), b'{"$t":"path","v":["PosixPath","rel/x.txt"]}'),
    (re.compile("a+", re.I), b'{"$t":"re","v":["a+",34]}'),
    (re.compile(b"\x00"), b'{"$t":"re","v":[{"$t":"bytes","v":"AA=="},0]}'),
    (ipaddress.ip_address("10.0.0.1"), b'{"$t":"ip","v":["IPv4Address","10.0.0.1"]}'),
    (ipaddress.ip_network("::/0"), b'{"$t":"ip","v":["IPv6Network","::/0"]}'),
    (ipaddress.ip_interface("1.2.3.4/8"), b'{"$t":"ip","v":["IPv4Interface","1.2.3.4/8"]}'),
    (dt.UTC, b'{"$t":"timezone","v":[0,0,0]}'),
    (dt.timezone(dt.timedelta(hours=-1), "X"), b'{"$t":"timezone","v":[-1,82800,0,"X"]}'),
    (zoneinfo.ZoneInfo("Europe/Paris"), b'{"$t":"zoneinfo","v":"Europe/Paris"}'),
]


@pytest.mark.parametrize(("value", "stored"), STDLIB_FORMS, ids=lambda v: repr(v)[:40])
def test_stdlib_types_are_stored_by_their_tags_and_come_back_as_themselves(
    value: Any, stored: bytes
) -> None:
    """The same type, the same value (a defaultdict with its factory), in both formats:
    where LangGraph's serializer gives a dict subclass back as a plain dict."""
    assert default_serializer.dumps(value) == stored
    assert_same(default_serializer.loads(stored), value)
    assert_same(default_serializer.loads(stored.decode()), value)
    data = default_serializer.dumps_binary(value)
    payload = json.loads(stored)["v"]
    if type(value) is OrderedDict and 1 in value or type(value) is type(re.compile(b"")):
        pass  # a payload with a tag of its own: an extension of its own in msgpack
    else:
        ext = ormsgpack.Ext(packed.SCHEMA, ormsgpack.packb([json.loads(stored)[TAG], payload]))
        assert data == packed.FORMAT + ormsgpack.packb(ext)
    assert_same(default_serializer.loads(data), value)


@pytest.mark.skipif(numpy is None, reason="numpy is not installed")
def test_numpy_arrays_keep_their_dtype_and_shape() -> None:
    arrays = [
        numpy.arange(6, dtype=">i2").reshape(2, 3),
        numpy.array(1.5),
        numpy.zeros((0, 3), dtype=numpy.complex64),
        numpy.array(["ab", "c"]),
        numpy.array([b"x"], dtype="S3"),
        numpy.array(["2024-01-01"], dtype="datetime64[D]"),
        numpy.asfortranarray(numpy.arange(6.0).reshape(2, 3)),
        numpy.array([numpy.nan, -0.0, numpy.inf]),
        numpy.ones(2, dtype=bool),
    ]
    assert default_serializer.dumps(numpy.array([1], dtype="<u1")) == (
        b'{"$t":"ndarray","v":["|u1",[1],{"$t":"bytes","v":"AQ=="}]}'
    )
    for value in arrays:
        for dumps in FORMATS.values():
            for wrapped in ({"a": value}, {1: [value]}):  # the fast path, then the walk
                got = default_serializer.loads(dumps(default_serializer, wrapped))
                assert_same(got, wrapped)


def test_dict_subclasses_take_their_tags_on_the_fast_path() -> None:
    """orjson and ormsgpack would write a dict subclass as a dict: they hand it to the
    serializer instead, which tags it."""
    value = {"o": OrderedDict(a=1), "c": [Counter(b=2)], "d": defaultdict(int, c=3)}
    assert default_serializer.dumps(value) == (
        b'{"o":{"$t":"odict","v":{"a":1}},"c":[{"$t":"counter","v":{"b":2}}],'
        b'"d":{"$t":"defaultdict","v":["int",{"c":3}]}}'
    )
    for dumps in FORMATS.values():
        assert_same(default_serializer.loads(dumps(default_serializer, value)), value)


# Only str keys, no tag key, finite floats: what the C encoders write (for the walk,
# a dict with an int key is put around it). No text holds the tag either: the fast path
# cannot tell it from a key, and walks.
fast_stdlib = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5).filter(lambda text: TAG not in text)
    | stdlib_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(plain_keys, inner, max_size=3)
        | stdlib_mappings(plain_keys, inner)
    ),
    max_leaves=15,
)


@settings(max_examples=300)
@given(fast_stdlib)
def test_stdlib_values_round_trip_on_the_fast_path_and_the_walk(value: Any) -> None:
    expected = as_stored(value)
    with (
        mock.patch.object(jsonplus, "_dumps", side_effect=AssertionError("walked")),
        mock.patch.object(packed.Packer, "_walk", side_effect=AssertionError("walked")),
    ):
        fast = [default_serializer.dumps([value]), default_serializer.dumps_binary([value])]
    for data in fast:
        assert_same(default_serializer.loads(data), [expected])
    for dumps in FORMATS.values():
        walked = default_serializer.loads(dumps(default_serializer, {1: value}))
        assert_same(walked, {1: expected})


class OwnDict(OrderedDict[str, int]):
    pass


class OwnPath(type(Path())):  # type: ignore[misc]
    pass


def keyless_zone() -> zoneinfo.ZoneInfo | None:
    """A ZoneInfo made from a file, which has no key."""
    for root in zoneinfo.TZPATH:
        path = Path(root) / "UTC"
        if path.is_file():
            with path.open("rb") as file:
                return zoneinfo.ZoneInfo.from_file(file)
    return None


def unstorable() -> list[tuple[Any, str]]:
    keyless = keyless_zone()
    found: list[tuple[Any, str]] = [
        (defaultdict(lambda: 0), r"default_factory is <function .*None and the builtin"),
        (defaultdict(dict.fromkeys), "default_factory is <built-in method fromkeys"),
        (OwnDict(a=1), "test_serde:OwnDict"),
        (OwnPath("x"), "test_serde:OwnPath"),
        (pathlib.PureWindowsPath("//:/"), r"does not read back as the same path"),
    ]
    if keyless is not None:
        found.append((keyless, "ZoneInfo without a key"))
    if numpy is not None:
        found.append((numpy.array([object()]), "dtype object: only arrays of numbers"))
        found.append((numpy.zeros(1, dtype=[("a", "i4")]), r"dtype \[\('a', '<i4'\)\]"))
        found.append((numpy.ma.masked_array([1]), r"numpy\.ma.*:MaskedArray"))
    return found


@pytest.mark.parametrize(("value", "says"), unstorable(), ids=lambda v: repr(v)[:30])
def test_what_cannot_be_stored_exactly_is_refused_naming_it(value: Any, says: str) -> None:
    """A defaultdict's factory is stored by name, for builtin types only (never pickled,
    nor imported); arrays of objects have no JSON form; a subclass is not its base."""
    for wrapped in (value, [value], {1: (value,)}):
        for dumps in FORMATS.values():
            with pytest.raises(TypeError, match=says):
                dumps(default_serializer, wrapped)


@pytest.mark.parametrize(
    "data",
    [
        b'{"$t":"odict","v":[1]}',
        b'{"$t":"counter","v":null}',
        b'{"$t":"defaultdict","v":["os.system",{}]}',
        b'{"$t":"defaultdict","v":["list",[]]}',
        b'{"$t":"path","v":["os:system","x"]}',
        b'{"$t":"path","v":["PosixPath",1]}',
        b'{"$t":"re","v":["(",0]}',
        b'{"$t":"re","v":["x","0"]}',
        b'{"$t":"ip","v":["IPv4Address","300.1.1.1"]}',
        b'{"$t":"timezone","v":[1,0,0]}',
        b'{"$t":"zoneinfo","v":"Nowhere/Land"}',
        b'{"$t":"zoneinfo","v":["UTC"]}',
        b'{"$t":"ndarray","v":["O",[1],{"$t":"bytes","v":"AAAAAAAAAAA="}]}',
        b'{"$t":"ndarray","v":["i4,i4",[1],{"$t":"bytes","v":"AAAAAAAAAAA="}]}',
        b'{"$t":"ndarray","v":["<f8",[2],{"$t":"bytes","v":"AAAAAAAAAAA="}]}',
        b'{"$t":"ndarray","v":[["<f8"],[1],{"$t":"bytes","v":"AAAAAAAAAAA="}]}',
    ],
)
def test_malformed_stdlib_tags_raise_serialization_error(data: bytes) -> None:
    with pytest.raises(SerializationError):
        default_serializer.loads(data)
    # The same payload in msgpack's schema extension.
    stored = json.loads(data)
    payload = default_serializer.loads(json.dumps(stored["v"]).encode())
    ext = ormsgpack.Ext(packed.SCHEMA, ormsgpack.packb([stored[TAG], payload]))
    with pytest.raises(SerializationError):
        default_serializer.loads(packed.FORMAT + ormsgpack.packb(ext))


def test_numpy_is_imported_only_for_its_arrays() -> None:
    """The serializer never imports numpy to store a value; a serializer made before
    numpy was imported stores its arrays (walked first or not), and one reads them back."""
    script = """
import sys
from collections import OrderedDict
from engine.checkpoint.serde.jsonplus import JsonSerializer
first, second = JsonSerializer(), JsonSerializer()
for dumps in (first.dumps, first.dumps_binary):
    assert first.loads(dumps({1: OrderedDict(a=1), "x": [b"y"]})) == {1: {"a": 1}, "x": [b"y"]}
assert "numpy" not in sys.modules, "imported"
import numpy
array = numpy.arange(3)
for value in ({1: array}, {"a": array}):
    for s in (first, second):
        for data in (s.dumps_binary(value), s.dumps(value), s.dumps_binary_sharing(value, {})):
            got = JsonSerializer().loads(data)
            assert (list(got.values())[0] == array).all()
first.allow(numpy.ndarray)  # stored anyway: nothing to allow
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=120,
    )
    if "No module named 'numpy'" in done.stderr:
        pytest.skip("numpy is not installed")
    assert done.stdout.strip() == "ok", done.stderr
