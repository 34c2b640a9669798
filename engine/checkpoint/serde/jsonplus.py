"""Serialization of checkpoints and writes, with type tags and an allowlist
(`JsonPlusSerializer` is the same under LangGraph's name and constructor).

Stored bytes may come back from a database that someone else can write to, so decoding
never imports a module and never builds a class it was not told about: schema classes
must be registered with `JsonSerializer.allow`. No format that runs code to decode is
used.

Two formats, both read by `loads`:

- Format 0, JSON text (`dumps`), for stores that keep text (the SQL saver). Plain JSON
  values are written as themselves. Anything else is an object whose `TAG` key names its
  type, e.g. `{"$t":"tuple","v":[1,2]}`; a class from the allowlist is tagged with its
  "module:qualname". A plain dict that happens to own a `TAG` key is written in the
  tagged pair-list form used for non-str keys, so it cannot be mistaken for a tag.
  A tuple is written as a list, and read back as one (as LangGraph's savers give tuples
  back), but where it must stay hashable (a set's elements, a dict's keys, all inside
  them) or inside a Command (whose update may be pairs) it keeps its tag; a tuple
  written with its tag by earlier versions is read back as a tuple.
- Format 1, msgpack (`dumps_binary`, engine/checkpoint/packed.py), for stores that keep
  bytes: a C encoder writes the plain values and calls Python only for the others.
  Its bytes start with packed.FORMAT, whose first byte no JSON text starts with.

Some types of the standard library (and numpy's arrays) are stored by a short tag of
their own and a payload (`_STDLIB`), the same in both formats: `{"$t": tag, "v":
payload}` in JSON, the schema extension `[tag, payload]` in msgpack (a tag has no ":", so
it never names an allowed class). They come back as the same type: OrderedDict ("odict",
its items as a dict), defaultdict ("defaultdict", [its factory's name or null, items]),
Counter ("counter", items), pathlib's paths ("path", [class name, text]), re's patterns
("re", [pattern, flags]), ipaddress's addresses, interfaces and networks ("ip", [class
name, text]), datetime.timezone ("timezone", [days, seconds, microseconds] of its
offset, then its name when it was given one), ZoneInfo ("zoneinfo", its key) and numpy
arrays ("ndarray", [dtype, shape, bytes in C order]). Items are a dict's: their keys
that are not str take the "dict" tag's pairs (an extension of pairs in msgpack).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import datetime as dt
import enum
import importlib
import ipaddress
import json
import math
import pathlib
import re
import sys
import uuid
import warnings
import zoneinfo
from collections import Counter, OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterable
from decimal import Decimal
from itertools import compress
from typing import Any, Literal, NamedTuple, get_args, get_type_hints

import msgspec
import orjson
import ormsgpack
from langchain_core import messages as lc_messages
from langchain_core.documents import Document

from engine._weak_cache import weakly_cached
from engine.checkpoint import packed
from engine.checkpoint.messages import (
    SCALARS,
    blueprint,
    from_fields,
    is_message_class,
    message_class,
    stored_fields,
)
from engine.checkpoint.packed import (
    Schema,
    command_fields,
    decode_datetime,
    encode_datetime,
    timeout_fields,
    timeout_policy,
)
from engine.types import Command, Interrupt, Overwrite, Send

__all__ = [
    "TAG",
    "JsonPlusSerializer",
    "JsonSerializer",
    "Prepared",
    "SerializationError",
    "allow_schemas",
    "default_serializer",
    "holds_repeats",
]

TAG = "$t"
_TAG_TEXT = '"$t"'
_TAG_BYTES = _TAG_TEXT.encode()
_TAGGED = '{"$t":'  # how a tagged object starts
_TAGGED_BYTES = _TAGGED.encode()
_MESSAGE = '{"$t":"msg","v":{'
_MESSAGE_LIST = '[{"$t":"msg","v":'
_MESSAGE_LIST_BYTES = _MESSAGE_LIST.encode()
# Tags of messages stored under their class name, before messages kept the "msg" form.
_OLD_MESSAGE_TAGS = {
    f"engine.graph.messages:{name}": name
    for name in (
        "HumanMessage",
        "AIMessage",
        "AIMessageChunk",
        "ToolMessage",
        "SystemMessage",
        "RemoveMessage",
    )
}

# Cycles cannot reach the C encoder: the Python walk before it recurses first.
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False).encode
_loads = json.loads
_decode_plain = msgspec.json.Decoder().decode
_packb = ormsgpack.packb
_orjson_dumps = orjson.dumps
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# What orjson writes as some other value, without asking (ints beyond 64 bits it refuses).
_JSON_UNSAFE = frozenset({tuple, uuid.UUID, int})
_TAG_KEY = b"\xa2" + TAG.encode()  # the tag as msgpack writes a short str
_NON_FINITE = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")  # a msgpack double of NaN or infinity


class SerializationError(ValueError):
    """Stored bytes that cannot be decoded: malformed, or naming a type not allowed."""


class Prepared(NamedTuple):
    """A stored value ready to be rebuilt without parsing all of its text again:
    `value` itself when `cls` is None (a scalar), a copy of a plain dict of scalars, a
    message from its `Blueprint`, a plain JSON value from its `JsonCopy`."""

    cls: type | None
    value: Any
    # What a value built from it holds, to compare it with later (a node may change a
    # message in place), never handed out: the scalar, the dict, a message's fields
    # (its `__dict__`), the JSON value.
    state: Any

    def build(self) -> Any:
        cls = self.cls
        if cls is None:
            return self.value
        return self.value.copy() if cls is dict else self.value.build()


class JsonCopy(NamedTuple):
    """A plain JSON value that holds containers, kept as its JSON: each build decodes
    containers of its own."""

    data: str

    def build(self) -> Any:
        return _loads_plain(self.data)


def _prepared_message(text: str, value: dict[str, Any]) -> Prepared | str:
    """A stored message (`value`, its text parsed) prepared, or its text when it holds
    tagged values or fields of another shape than its class stores."""
    fields = value.get("v")
    cls = message_class(fields) if len(value) == 2 and type(fields) is dict else None
    if cls is None or text.count(_TAG_TEXT) != 1 or _non_finite(text):
        return text
    del fields["type"]  # type: ignore[index]  # the parse made it: it is ours
    found = blueprint(cls, fields, kept=True)  # type: ignore[arg-type]
    return text if found is None else Prepared(cls, found, found.values)


def _non_finite(text: str) -> bool:
    """Whether stored JSON may hold NaN or an infinity (or a string naming one): its
    containers are not decoded anew for each build, as a NaN decoded anew never equals
    the one a later put would compare it with."""
    return "NaN" in text or "Infinity" in text


def _loads_plain(data: bytes | str) -> Any:
    """Plain JSON (no tag), read by msgspec: twice as fast as json, and the same values
    (orjson would read an int beyond 64 bits as a float). What msgspec refuses and json
    reads, never written here (NaN, infinities, a lone surrogate), json reads."""
    try:
        return _decode_plain(data)
    except msgspec.DecodeError:
        return _loads(data)


def _type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _encode_datetime(value: dt.datetime) -> dict[str, Any]:
    text, key, fold = encode_datetime(value)
    out: dict[str, Any] = {TAG: "datetime", "v": text}
    if key is not None:
        out["z"] = key
    if fold:
        out["f"] = 1
    return out


def _decode_datetime(obj: dict[str, Any]) -> dt.datetime:
    return decode_datetime(obj["v"], obj.get("z"), obj.get("f"))


def _plain_messages(data: bytes | str, tags: int) -> list[Any] | None:
    """A list of messages with no other tagged value in it (a chat's history), decoded
    without calling a hook for every object; None when `data` is anything else."""
    value = _loads(data)
    if type(value) is not list or len(value) != tags:
        return None  # some tag is not a message's at the top
    if not all(type(m) is dict and m.get(TAG) == "msg" and len(m) == 2 for m in value):
        return None
    return [from_fields(m["v"]) for m in value]


def _decode_message(obj: dict[str, Any]) -> Any:
    return from_fields(obj["v"])


def _old_message_decoder(name: str) -> Callable[[dict[str, Any]], Any]:
    """Reads a message stored under its class name with every field, as graphs whose
    schema named message classes stored them before those kept the "msg" form."""
    cls = getattr(lc_messages, name)

    def decode(obj: dict[str, Any]) -> Any:
        return cls(**obj["v"])

    return decode


_BUILTIN_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "tuple": lambda o: tuple(o["v"]),
    "set": lambda o: set(o["v"]),
    "frozenset": lambda o: frozenset(o["v"]),
    "dict": lambda o: dict(o["v"]),
    "datetime": _decode_datetime,
    "date": lambda o: dt.date.fromisoformat(o["v"]),
    "time": lambda o: dt.time.fromisoformat(o["v"]),
    "timedelta": lambda o: dt.timedelta(*o["v"]),
    "uuid": lambda o: uuid.UUID(o["v"]),
    "bytes": lambda o: base64.b64decode(o["v"], validate=True),
    "decimal": lambda o: Decimal(o["v"]),
    "msg": _decode_message,
    "interrupt": lambda o: Interrupt(value=o["v"], id=o["id"], response_schema=o.get("rs")),
    "send": lambda o: Send(o["node"], o["v"], timeout=timeout_policy(o["t"]) if "t" in o else None),
    "overwrite": lambda o: Overwrite(o["v"]),
    "command": lambda o: Command(*o["v"]),
    "deque": lambda o: deque(o["v"]),
    **{tag: _old_message_decoder(name) for tag, name in _OLD_MESSAGE_TAGS.items()},
}


def _tag_interrupt(question: Interrupt) -> dict[str, Any]:
    out = {TAG: "interrupt", "v": question.value, "id": question.id}
    if question.response_schema is not None:
        out["rs"] = question.response_schema
    return out


def _tag_send(send: Send) -> dict[str, Any]:
    out = {TAG: "send", "node": send.node, "v": send.arg}
    if send.timeout is not None:
        out["t"] = timeout_fields(send.timeout)
    return out


def _tag_message(message: Any) -> dict[str, Any]:
    return {TAG: "msg", "v": stored_fields(message)}


# The JSON form of each builtin type that is not plain JSON: a tagged dict whose values
# are still to be encoded.
_TAGS: dict[type, Callable[[Any], Any]] = {
    tuple: lambda o: {TAG: "tuple", "v": list(o)},
    set: lambda o: {TAG: "set", "v": list(o)},
    frozenset: lambda o: {TAG: "frozenset", "v": list(o)},
    dt.datetime: _encode_datetime,
    dt.date: lambda o: {TAG: "date", "v": o.isoformat()},
    dt.time: lambda o: {TAG: "time", "v": o.isoformat()},
    dt.timedelta: lambda o: {TAG: "timedelta", "v": [o.days, o.seconds, o.microseconds]},
    uuid.UUID: lambda o: {TAG: "uuid", "v": str(o)},
    bytes: lambda o: {TAG: "bytes", "v": base64.b64encode(o).decode("ascii")},
    Decimal: lambda o: {TAG: "decimal", "v": str(o)},
    Interrupt: _tag_interrupt,
    Send: _tag_send,
    Overwrite: lambda o: {TAG: "overwrite", "v": o.value},
    Command: lambda o: {TAG: "command", "v": command_fields(o)},
    deque: lambda o: {TAG: "deque", "v": list(o)},
}
# The types whose tagged values keep their tuples: a set's elements must stay hashable,
# and a Command's update may be (key, value) pairs.
_KEEP_TUPLES = frozenset({tuple, set, frozenset, Command})


# Types of the standard library stored by a tag of their own (see the module's docstring).

# The default factories a defaultdict is stored with, by name: builtin types only, as a
# factory is never pickled, nor imported from a name in stored data.
_FACTORIES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        list,
        dict,
        set,
        int,
        float,
        str,
        tuple,
        frozenset,
        bool,
        bytes,
        deque,
        OrderedDict,
        Counter,
    )
}
_FACTORY_NAMES = {cls: name for name, cls in _FACTORIES.items()}


def _defaultdict_fields(value: defaultdict[Any, Any]) -> list[Any]:
    factory = value.default_factory
    name = _FACTORY_NAMES.get(factory) if isinstance(factory, type) else None
    if name is None and factory is not None:
        raise TypeError(
            f"Cannot serialize a defaultdict whose default_factory is {factory!r}: only "
            f"None and the builtin types {', '.join(_FACTORIES)} can be stored (a factory "
            "is never pickled, nor imported when read back); store a plain dict instead"
        )
    return [name, dict(value)]


def _defaultdict(payload: list[Any]) -> defaultdict[Any, Any]:
    name, items = payload
    if type(items) is not dict:
        raise ValueError("a defaultdict's items are not a dict")
    return defaultdict(None if name is None else _FACTORIES[name], items)


def _items(payload: Any) -> dict[Any, Any]:
    if type(payload) is not dict:
        raise ValueError("a mapping's items are not a dict")
    return payload


_PATHS: dict[str, type[pathlib.PurePath]] = {
    cls.__name__: cls
    for cls in (
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.PosixPath,
        pathlib.WindowsPath,
    )
}
_IP_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        ipaddress.IPv4Address,
        ipaddress.IPv6Address,
        ipaddress.IPv4Interface,
        ipaddress.IPv6Interface,
        ipaddress.IPv4Network,
        ipaddress.IPv6Network,
    )
}


def _named(classes: dict[str, type]) -> Callable[[list[Any]], Any]:
    """How a value stored as [its class's name, its text] is built again."""

    def build(payload: list[Any]) -> Any:
        name, text = payload
        if type(text) is not str:
            raise ValueError(f"a {name} is stored as text, not {text!r}")
        return classes[name](text)

    return build


def _path_fields(value: pathlib.PurePath) -> list[str]:
    text = str(value)
    if type(value)(text) != value:  # pathlib's own: PureWindowsPath("//:/") reads back as "/:"
        raise TypeError(
            f"Cannot serialize the path {value!r}: its text {text!r} does not read back as "
            "the same path"
        )
    return [type(value).__name__, text]


def _timezone_fields(value: dt.timezone) -> list[Any]:
    offset = value.utcoffset(None)
    fields: list[Any] = [offset.days, offset.seconds, offset.microseconds]
    name = value.tzname(None)
    if name != dt.timezone(offset).tzname(None):  # given a name of its own
        fields.append(name)
    return fields


def _timezone(payload: list[Any]) -> dt.timezone:
    days, seconds, microseconds, *name = payload
    return dt.timezone(dt.timedelta(days, seconds, microseconds), *name)


def _zoneinfo_key(value: zoneinfo.ZoneInfo) -> str:
    if value.key is None:
        raise TypeError(
            "Cannot serialize a ZoneInfo without a key (made from a file): it is stored by its key"
        )
    return value.key


def _zoneinfo(key: Any) -> zoneinfo.ZoneInfo:
    if type(key) is not str:
        raise ValueError(f"a ZoneInfo's key is a str, not {key!r}")
    return zoneinfo.ZoneInfo(key)


def _pattern(payload: list[Any]) -> re.Pattern[Any]:
    pattern, flags = payload
    if type(pattern) not in (str, bytes) or type(flags) is not int:
        raise ValueError(f"not a stored pattern: {payload!r}")
    return re.compile(pattern, flags)


def _numpy_array_class(cls: type) -> bool:
    """Whether `cls` is numpy's ndarray (not a subclass), without importing numpy: an
    array exists only once numpy is imported."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and cls is numpy.ndarray


def _ndarray_fields(value: Any) -> list[Any]:
    dtype = value.dtype
    if dtype.hasobject or dtype.names is not None:
        raise TypeError(
            f"Cannot serialize a numpy array of dtype {dtype}: only arrays of numbers, "
            "booleans, dates, str and bytes can be stored (objects have no JSON form; a "
            "structured dtype, store its fields as arrays of their own)"
        )
    return [dtype.str, list(value.shape), value.tobytes()]


def _ndarray(payload: list[Any]) -> Any:
    import numpy  # what stored data holds an array of was imported when it was stored

    code, shape, data = payload
    if type(code) is not str or type(data) is not bytes or type(shape) is not list:
        raise ValueError(f"not a stored numpy array: {payload!r}")
    dtype = numpy.dtype(code)
    if dtype.hasobject or dtype.names is not None:
        raise ValueError(f"a numpy array of dtype {dtype} is never stored")
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise ValueError("a numpy array's bytes do not fill its shape")
    if not data:
        return numpy.zeros(shape, dtype)
    return numpy.frombuffer(bytearray(data), dtype).reshape(shape)  # writable, as given


_NDARRAY = Schema("ndarray", _ndarray_fields, _ndarray)

# Each type's Schema: its tag, its payload, how it is built from that. Only these exact
# classes: a subclass of one is refused, as a subclass of dict is.
_STDLIB: dict[type, Schema] = {
    OrderedDict: Schema("odict", dict, lambda p: OrderedDict(_items(p))),
    defaultdict: Schema("defaultdict", _defaultdict_fields, _defaultdict),
    Counter: Schema("counter", dict, lambda p: Counter(_items(p))),
    **{cls: Schema("path", _path_fields, _named(_PATHS)) for cls in _PATHS.values()},
    re.Pattern: Schema("re", lambda o: [o.pattern, o.flags], _pattern),
    **{
        cls: Schema("ip", lambda o: [type(o).__name__, str(o)], _named(_IP_CLASSES))
        for cls in _IP_CLASSES.values()
    },
    dt.timezone: Schema("timezone", _timezone_fields, _timezone),
    zoneinfo.ZoneInfo: Schema("zoneinfo", _zoneinfo_key, _zoneinfo),
}
_STDLIB_NAMES = {schema.name: schema for schema in (*_STDLIB.values(), _NDARRAY)}


def _stdlib_tag(schema: Schema) -> Callable[[Any], Any]:
    return lambda o: {TAG: schema.name, "v": schema.fields(o)}


_TAGS.update({cls: _stdlib_tag(schema) for cls, schema in _STDLIB.items()})
_BUILTIN_DECODERS.update(
    {name: lambda o, s=schema: s.build(o["v"]) for name, schema in _STDLIB_NAMES.items()}
)
# Classes an allowlist may name that need no allowing: what is stored anyway, and the
# bases of stored classes (pathlib.Path makes a PosixPath or a WindowsPath).
_BUILTIN_CLASSES = frozenset(
    {
        *SCALARS,
        list,
        dict,
        bytearray,
        memoryview,
        *_TAGS,
        pathlib.PurePath,
        pathlib.Path,
    }
)


class _Registered(TypeError):
    """A class the msgpack encoder has just learnt to store (numpy's ndarray, once numpy
    is imported): the value is encoded again."""


class JsonSerializer:
    """Turns checkpoint values into compact JSON (`dumps`) or msgpack (`dumps_binary`)
    bytes and back (`loads` reads both, and every earlier version's bytes).

    `allow(cls)` admits a dataclass, pydantic model or Enum of the graph's own schema;
    instances of any other class are refused on both sides.
    """

    def __init__(self) -> None:
        self._tags = dict(_TAGS)
        self._allowed: dict[str, Callable[[dict[str, Any]], Any]] = {}
        # The msgpack encoder stores the standard library's types as schema extensions.
        schemas: dict[type, Schema] = dict(_STDLIB)
        names: dict[str, Schema] = dict(_STDLIB_NAMES)
        self._schemas, self._names = schemas, names
        self._packer = packed.Packer(schemas, names, self._unknown_class, _not_allowed)
        # Retrieval graphs keep LangChain documents in state whatever their schema says.
        self.allow(Document)

    def allow(self, *classes: type) -> None:
        """Admit schema classes (dataclasses, pydantic models, Enums) by module:qualname.

        Message classes (a schema's `list[AnyMessage]`) are always admitted and keep
        their own compact form."""
        for cls in classes:
            if isinstance(cls, type) and (
                cls in self._schemas or is_message_class(cls) or _stored_anyway(cls)
            ):
                continue  # a graph compiled again allows its classes again
            schema = _schema(cls)
            self._schemas[cls] = self._names[schema.name] = schema
            self._tags[cls] = lambda o, s=schema: {TAG: s.name, "v": s.fields(o)}
            self._allowed[schema.name] = lambda o, s=schema: s.build(o["v"])

    def dumps(self, obj: Any) -> bytes:
        """Encode `obj` as UTF-8 JSON (format 0); raises TypeError for a type that is
        not allowed.

        A C msgpack encoder first checks that `obj` holds nothing the C JSON encoder
        (orjson) would write as some other value (tuples, UUIDs and Enums as their
        contents, NaN as null, dicts that own the tag key as tags; ints beyond 64 bits
        and keys that are not str it refuses): then orjson writes it, calling Python
        only for the values that take a tag. Anything else takes the Python walk."""
        try:
            probe = _packb(obj, default=self._probe, option=packed.OPTIONS)
            # A byte looked for first: a search for the tag key is slow in CPython.
            owns_tag = b"$" in probe and _TAG_KEY in probe
            if not owns_tag and not (b"\xcb" in probe and _NON_FINITE.search(probe)):
                return _orjson_dumps(obj, default=self._tag, option=_ORJSON_OPTIONS)
        except TypeError:
            pass  # the walk encodes it, or says why it cannot be
        return _dumps(self._encode(obj)).encode()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """LangGraph's `SerializerProtocol`: `obj` in format 1, named "msgpack"."""
        return "msgpack", self.dumps_binary(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Read what `dumps_typed` wrote (or "json", format 0). Another type name was
        written by some other serializer, and is refused."""
        kind, blob = data
        if kind not in _TYPED_KINDS:
            raise SerializationError(
                f"Stored value has type {kind!r}, which this serializer does not write"
            )
        return self.loads(blob)

    def dumps_binary(self, obj: Any) -> bytes:
        """Encode `obj` in format 1 (msgpack), faster to write and read than JSON;
        raises TypeError for a type that is not allowed."""
        try:
            return self._packer.dumps(obj)
        except _Registered:
            return self._packer.dumps(obj)

    def dumps_binary_sharing(self, obj: Any, shared: dict[int, Any]) -> bytes:
        """`dumps_binary` for one of the values of a save that share what is inside
        them: see packed.Packer.dumps_sharing."""
        try:
            return self._packer.dumps_sharing(obj, shared)
        except _Registered:
            return self._packer.dumps_sharing(obj, shared)

    def _unknown_class(self, cls: type) -> TypeError:
        """The msgpack encoder's error for a class it has no payload for; numpy's
        ndarray (numpy may be imported after this serializer was made) is learnt instead,
        and the encoder, told so, encodes the value again."""
        if _numpy_array_class(cls):
            self._schemas[cls] = _NDARRAY
            return _Registered(f"{_type_name(cls)} is stored from now on")
        return _refusal(cls)

    def loads(self, data: bytes | str) -> Any:
        """Decode `dumps` or `dumps_binary` output (as bytes, or JSON as text); raises
        SerializationError for anything else."""
        try:
            if type(data) is str:
                tag, tagged, message_list = _TAG_TEXT, _TAGGED, _MESSAGE_LIST
            else:
                if type(data) is not bytes:
                    data = bytes(data)  # a driver's memoryview or bytearray
                if data[:2] == packed.FORMAT:
                    return self._packer.loads(data)
                if data[:1] == packed.FORMAT[:1]:
                    raise SerializationError(f"Stored value has unknown format {data[1:2]!r}")
                tag, tagged, message_list = _TAG_BYTES, _TAGGED_BYTES, _MESSAGE_LIST_BYTES
            # The tag's `$` is looked for first: a search for one byte is a memchr, where
            # CPython's search for the tag itself crawls (0.6 ns a byte).
            dollar = tag[1:2]
            first = data.find(dollar)  # type: ignore[arg-type]
            if first < 0:
                return _loads_plain(data)
            if first == 2 and data.startswith(tagged) and data.find(dollar, 3) < 0:  # type: ignore[arg-type]
                # One tagged object around plain JSON (a schema object, a datetime): the
                # plain reader, then the one tag, where json would call a hook per object.
                return self._decode_tagged(_loads_plain(data))
            tags = data.count(tag)  # type: ignore[arg-type]
            if not tags:
                return _loads_plain(data)
            if data.startswith(message_list):  # type: ignore[arg-type]
                messages = _plain_messages(data, tags)
                if messages is not None:
                    return messages
            return _loads(data, object_hook=self._decode_tagged)
        except SerializationError:
            raise
        except Exception as exc:  # whatever broke, the caller learns the bytes are bad
            raise SerializationError(f"Cannot decode stored value: {exc!r}") from exc

    def prepare(self, elements: list[str]) -> list[Prepared | str]:
        """What rebuilds each stored element of a list without parsing it again, for a
        cache of stored rows: a JSON scalar; a plain dict of scalars (rebuilt as a copy);
        a message (rebuilt anew, the plain JSON containers it holds decoded for each
        build); any other plain JSON value (decoded from its JSON for each build). Each
        caller gets containers of its own. An element that holds tagged values stays its
        text, parsed on every read; one that is a tagged value other than a message is not
        parsed here."""
        maybe = [text.startswith(_MESSAGE) or not text.startswith(_TAGGED) for text in elements]
        candidates = [text for text, m in zip(elements, maybe, strict=True) if m]
        parsed = iter(_loads("[" + ",".join(candidates) + "]"))
        prepared: list[Prepared | str] = []
        for text, m in zip(elements, maybe, strict=True):
            value = next(parsed) if m else None
            if not m:
                prepared.append(text)
            elif type(value) is not dict and type(value) is not list:  # a scalar
                prepared.append(Prepared(None, value, value))
            elif text.startswith(_MESSAGE):
                prepared.append(_prepared_message(text, value))
            elif _TAG_TEXT in text or _non_finite(text):
                prepared.append(text)
            elif type(value) is dict and SCALARS.issuperset(map(type, value.values())):
                prepared.append(Prepared(dict, value, value))
            else:
                prepared.append(Prepared(JsonCopy, JsonCopy(text), value))
        return prepared

    # Encoding. Containers that hold only plain JSON come back as the same object, so a
    # plain tree is handed to the C encoder without being copied.

    def _encode(self, obj: Any, keep_tuples: bool = False) -> Any:
        """`obj` as plain JSON values and tags. With `keep_tuples` (inside a set, a
        dict's key...) a tuple keeps its tag; elsewhere it is written as a list."""
        cls = type(obj)
        if cls in SCALARS:
            return obj
        if cls is list or (cls is tuple and not keep_tuples):
            return self._encode_list(obj, keep_tuples)
        if cls is dict:
            return self._encode_dict(obj, keep_tuples)
        tagged = self._tag(obj)
        if type(tagged) is str:
            return tagged
        inner = keep_tuples or cls in _KEEP_TUPLES
        encode = self._encode
        return {key: value if key == TAG else encode(value, inner) for key, value in tagged.items()}

    def _tag(self, obj: Any) -> Any:
        """The tagged dict that stands for `obj`, its values still to be encoded (or
        the str a str subclass is stored as)."""
        cls = type(obj)
        return (self._tags.get(cls) or self._find_tag(cls))(obj)

    def _probe(self, obj: Any) -> Any:
        """The msgpack check's hook: what orjson would write wrong refuses the fast path;
        the values a tag holds are checked in turn."""
        if type(obj) in _JSON_UNSAFE or isinstance(obj, enum.Enum):
            raise TypeError("a value orjson would write as another")
        tagged = self._tag(obj)
        return tagged if type(tagged) is str else list(tagged.values())

    def _encode_list(self, items: Any, keep_tuples: bool = False) -> list[Any]:
        encode = self._encode
        if type(items) is not list:
            return [encode(x, keep_tuples) for x in items]
        for i, item in enumerate(items):
            if type(item) not in SCALARS:
                new = encode(item, keep_tuples)
                if new is not item:
                    rest = (encode(x, keep_tuples) for x in items[i + 1 :])
                    return [*items[:i], new, *rest]
        return items

    def _encode_dict(self, obj: dict[Any, Any], keep_tuples: bool = False) -> Any:
        encode = self._encode
        out: dict[str, Any] | None = None
        for key, value in obj.items():
            if type(key) is not str or key == TAG:
                # A key must stay hashable; a value is as anywhere else.
                pairs = [[encode(k, True), encode(v, keep_tuples)] for k, v in obj.items()]
                return {TAG: "dict", "v": pairs}
            if type(value) not in SCALARS:
                new = encode(value, keep_tuples)
                if new is not value:
                    if out is None:
                        out = dict(obj)
                    out[key] = new
        return obj if out is None else out

    def _find_tag(self, cls: type) -> Callable[[Any], Any]:
        if is_message_class(cls):
            tag: Callable[[Any], Any] = _tag_message
        elif _numpy_array_class(cls):
            tag = _stdlib_tag(_NDARRAY)
        elif issubclass(cls, str) and not issubclass(cls, enum.Enum):
            # A str that is some library's subclass (a message's `.text`) is stored as
            # its text and read back as a str, as LangGraph's savers do.
            tag = str.__str__
        else:
            raise _refusal(cls)
        self._tags[cls] = tag
        return tag

    # Decoding: json calls this for every object (innermost first) once a tag is present.

    def _decode_tagged(self, obj: dict[str, Any]) -> Any:
        if TAG not in obj:
            return obj
        tag = obj[TAG]
        decode = _BUILTIN_DECODERS.get(tag) or self._allowed.get(tag)
        if decode is None:
            raise _not_allowed(tag)
        return decode(obj)


def _schema(cls: type) -> Schema:
    """What is stored of an allowed class's instances, and how they are rebuilt."""
    if not isinstance(cls, type):
        raise TypeError(f"allow() takes classes, not {cls!r}")
    name = _type_name(cls)
    if isinstance(cls, enum.EnumMeta):
        return Schema(name, lambda o: o.value, cls)
    if dataclasses.is_dataclass(cls):
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        return Schema(name, lambda o: {f: getattr(o, f) for f in fields}, lambda v: cls(**v))
    if _is_pydantic_model(cls):

        def model_fields(o: Any) -> dict[str, Any]:
            values = {f: getattr(o, f) for f in type(o).model_fields}
            values.update(o.model_extra or {})
            return values

        # Values were valid when stored; rebuilding must not re-run validators.
        return Schema(name, model_fields, lambda v: cls.model_construct(**v))
    if _is_pydantic_v1_model(cls):
        # Its fields and extra fields are its `__dict__` (private attributes are slots).
        return Schema(name, lambda o: dict(o.__dict__), lambda v: cls.construct(**v))
    if _is_named_tuple(cls):
        # Rebuilt as its class, as LangGraph's savers rebuild one (a plain tuple is not).
        return Schema(name, lambda o: o._asdict(), lambda v: cls(**v))
    raise TypeError(
        f"Cannot allow {name}: only dataclasses, pydantic models, NamedTuples and Enums "
        "can be allowed"
    )


def _refusal(cls: type) -> TypeError:
    hint = (
        f"; if it belongs to the graph's schema, call checkpointer.serde.allow({cls.__qualname__})"
        if _is_schema_class(cls)
        else "; only JSON values, tuples, sets, deques, OrderedDicts, defaultdicts, Counters, "
        "dates, time zones, UUIDs, bytes, Decimals, paths, patterns, IP addresses, numpy "
        "arrays, messages and allowed dataclasses, pydantic models, NamedTuples and Enums "
        "can be stored"
    )
    return TypeError(f"Cannot serialize an object of type {_type_name(cls)}{hint}")


def _not_allowed(tag: Any) -> SerializationError:
    if isinstance(tag, str) and ":" in tag:
        return SerializationError(
            f"Stored value has type {tag}, which this serializer does not allow; "
            "call checkpointer.serde.allow(cls) for the graph's schema classes"
        )
    return SerializationError(f"Stored value has an unknown type tag {tag!r}")


_CONTAINERS = frozenset({dict, list})
_TYPED_KINDS = frozenset({"msgpack", "json"})


def holds_repeats(objects: list[Any]) -> bool:
    """Whether some dict or list is among `objects` more than once (scalars do not
    count: small ints and None are single objects), as in the lists of a state built by
    reducers: a saver then encodes it once."""
    containers = list(compress(objects, map(_CONTAINERS.__contains__, map(type, objects))))
    return len(set(map(id, containers))) < len(containers)


def _is_pydantic_model(cls: type) -> bool:
    # A pydantic model exists only once pydantic is imported, so no import is needed here.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and issubclass(cls, pydantic.BaseModel)


def _is_pydantic_v1_model(cls: type) -> bool:
    """A model of pydantic's v1 API (`pydantic.v1.BaseModel`), which LangChain's older
    schemas use; imported only by a program that uses it."""
    v1 = sys.modules.get("pydantic.v1")
    return v1 is not None and issubclass(cls, v1.BaseModel)


def _stored_anyway(cls: type) -> bool:
    """Whether `cls` is stored without being allowed (an allowlist may name it)."""
    return cls in _BUILTIN_CLASSES or _numpy_array_class(cls)


def _is_named_tuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_asdict")


def _is_schema_class(cls: type) -> bool:
    return (
        isinstance(cls, enum.EnumMeta)
        or dataclasses.is_dataclass(cls)
        or _is_pydantic_model(cls)
        or _is_pydantic_v1_model(cls)
        or _is_named_tuple(cls)
    )


class JsonPlusSerializer(JsonSerializer):
    """`JsonSerializer` under LangGraph's name and constructor, so that a saver built as
    for LangGraph (`InMemorySaver(serde=JsonPlusSerializer(...))`) runs unchanged.

    Both allowlists name classes that may be restored, as classes or as (module, name)
    tuples; a tuple's module is imported here, from the program's own configuration,
    never from stored data. What the engine never does is refused rather than ignored:
    restoring any class at all (an allowlist of `True`) and a msgpack extension hook of
    the caller's; LangGraph's fallback to a code-running format is no parameter here, so
    passing it is a TypeError that names it."""

    def __init__(
        self,
        *,
        pickle_fallback: bool = False,
        allowed_json_modules: Iterable[tuple[str, ...] | type] | Literal[True] | None = None,
        allowed_msgpack_modules: Iterable[tuple[str, ...] | type] | Literal[True] | None = None,
        __unpack_ext_hook__: Callable[[int, bytes], Any] | None = None,
    ) -> None:
        super().__init__()
        if pickle_fallback:
            raise ValueError(
                "pickle_fallback=True is not supported: the engine never pickles or "
                "unpickles (a value it cannot store as JSON fails its save, naming it)"
            )
        if __unpack_ext_hook__ is not None:
            raise ValueError(
                "__unpack_ext_hook__ is not supported: the engine's msgpack format has no "
                "extension types of the caller's"
            )
        for option, allowlist in (
            ("allowed_json_modules", allowed_json_modules),
            ("allowed_msgpack_modules", allowed_msgpack_modules),
        ):
            if allowlist is True:
                raise ValueError(
                    f"{option}=True is not supported: the engine restores only the classes "
                    "it was told about; list them"
                )
            if allowlist:
                self.allow(*_allowed_classes(allowlist))

    def with_msgpack_allowlist(
        self, extra_allowlist: Iterable[tuple[str, ...] | type]
    ) -> JsonPlusSerializer:
        """A copy that also restores `extra_allowlist`'s classes (this one is unchanged)."""
        clone = copy.copy(self)
        JsonSerializer.__init__(clone)
        clone.allow(*self._schemas, *_allowed_classes(extra_allowlist))
        return clone


default_serializer = JsonPlusSerializer()


def own_format(serde: Any) -> bool:
    """Whether `serde` is a `JsonSerializer` whose typed methods are its own, so that a
    saver may call its faster ones (`dumps_binary`, `dumps`, `prepare`) instead."""
    cls = type(serde)
    return (
        isinstance(serde, JsonSerializer)
        and cls.dumps_typed is JsonSerializer.dumps_typed
        and cls.loads_typed is JsonSerializer.loads_typed
    )


def _allowed_classes(entries: Iterable[tuple[str, ...] | type]) -> list[type]:
    """The classes of an allowlist, given themselves or as LangGraph's (module, ...,
    name) tuples. LangGraph matches its entries lazily, so an entry that names nothing
    here allows nothing: a module that is not installed (an optional dependency's), or a
    name that its module does not have or that is not a class (with a warning)."""
    found = (entry if isinstance(entry, type) else _named_class(entry) for entry in entries)
    return [cls for cls in found if cls is not None]


def _named_class(entry: Any) -> type | None:
    if (
        not isinstance(entry, tuple)
        or len(entry) < 2
        or not all(isinstance(part, str) for part in entry)
    ):
        raise TypeError(f"An allowlist entry is a class or a (module, name) tuple, not {entry!r}")
    *module, name = entry
    try:
        value = getattr(importlib.import_module(".".join(module)), name)
    except ModuleNotFoundError:
        return None  # not installed: nothing of it can be stored
    except AttributeError as error:
        problem = f"names no class ({error})"
    else:
        if isinstance(value, type):
            return value
        problem = f"is not a class ({value!r})"
    warnings.warn(f"Allowlist entry {entry!r} {problem}: it allows nothing", stacklevel=5)
    return None


def allow_schemas(saver: Any, schemas: Iterable[Any]) -> None:
    """Let a saver's serializer restore the dataclasses, pydantic models and Enums that
    these schemas name (a graph's state, an interrupt's answer), and no others."""
    allow = getattr(getattr(saver, "serde", None), "allow", None)
    if allow is None:
        return
    for schema in schemas:
        allow(*schema_classes(schema))


@weakly_cached
def schema_classes(schema: Any) -> tuple[type, ...]:
    """The dataclasses, pydantic models, NamedTuples and Enums `schema` names, those
    their fields name too; worked out once per schema (a graph factory compiles for
    every run, and resolving annotations takes a millisecond). Chat messages are always
    restored: their fields are not looked into."""
    found: list[type] = []
    seen: set[Any] = set()

    def visit(tp: Any) -> None:
        if isinstance(tp, list):  # a Callable's parameters
            for arg in tp:
                visit(arg)
            return
        if tp in seen:
            return
        seen.add(tp)
        for arg in get_args(tp):
            visit(arg)
        if isinstance(tp, type) and is_message_class(tp):
            return
        if isinstance(tp, type) and _is_schema_class(tp):
            found.append(tp)
            for hint in _annotations(tp):
                visit(hint)

    visit(schema)
    for hint in _annotations(schema):
        visit(hint)
    return tuple(found)


def _annotations(cls: Any) -> Iterable[Any]:
    """A class's field annotations, resolved: under `from __future__ import annotations`
    they are strings. One that does not resolve names no class to allow."""
    try:
        return get_type_hints(cls, include_extras=True).values()
    except Exception:
        return [a for a in getattr(cls, "__annotations__", {}).values() if not isinstance(a, str)]
