"""Format 1 of stored values: msgpack, for stores that keep bytes (the in-memory saver).

A C encoder (ormsgpack) writes plain values, which are most of a state, without calling
any Python: dicts with str keys, lists, str, int, float, bool, None and bytes. It hands
every other value to `Packer._default`, which stores it as a msgpack extension whose code
names its type and whose data is its own msgpack: tuples, sets, dates, UUIDs, Decimals,
ints beyond 64 bits, messages, interrupts, the allowed schema classes. Decoding calls
Python only for those extensions too. Extensions cannot be mistaken for a plain dict, so
no dict needs escaping, and floats are stored as IEEE doubles, NaN and infinities too.

A tuple is stored as a list and comes back as one, as LangGraph's savers give tuples
back: but where a value must stay hashable (a set's or frozenset's elements, a dict's
keys, and all inside them) and inside a Command (whose update may be (key, value)
pairs), it keeps an extension of its own, and so does a tuple stored by earlier
versions. A deque is stored as its items (not its maxlen), as in LangGraph.

The C encoder also takes a bytearray or memoryview as bytes; they come back as bytes.
A dict with a key that is not a str makes it fail: such values are then encoded by a
Python walk (`Packer._walk`) that turns those dicts into extensions of their pairs.

Stored bytes are msgpack's array of two: the format's number, 1, then the value. So they
start with FORMAT, written by the C encoder itself (a prefix added after it would copy
all it wrote); no JSON text (format 0) starts with its first byte, and a later version of
this format would start with that byte and its own number.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
import zoneinfo
from collections import deque
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

import ormsgpack

from engine.checkpoint.messages import from_fields, is_message_class, stored_fields
from engine.types import Command, Interrupt, Overwrite, Send, TimeoutPolicy

__all__ = ["FORMAT", "OPTIONS", "VERSION", "Packer", "Schema", "decode_datetime", "encode_datetime"]

VERSION = 1
FORMAT = b"\x92\x01"  # msgpack: an array of two, then the int 1
OPTIONS = (
    ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_UUID
)
_packb = ormsgpack.packb
_unpackb = ormsgpack.unpackb
_Ext = ormsgpack.Ext
_Fragment = ormsgpack.Fragment

# Extension codes. A code keeps its meaning for good: new types take new codes.
TUPLE, SET, FROZENSET, DICT = 1, 2, 3, 4
DATETIME, DATE, TIME, TIMEDELTA = 5, 6, 7, 8
UUID, DECIMAL, BIG_INT = 9, 10, 11
MESSAGE, INTERRUPT, SEND, OVERWRITE = 12, 13, 14, 15
SCHEMA = 16  # an allowed class: [its "module:qualname", its fields or value]
COMMAND = 17  # [graph, update, resume, goto]
DEQUE = 18  # its items
# The extensions whose payload keeps its tuples: the elements of a set must stay
# hashable, and a Command's update may be (key, value) pairs.
_KEEP_TUPLES = frozenset({TUPLE, SET, FROZENSET, COMMAND})

_NATIVE = frozenset({str, int, float, bool, type(None), bytes, bytearray, memoryview})


class Schema(NamedTuple):
    """An allowed class: its stored name, what is stored of an instance, and how an
    instance is rebuilt from that."""

    name: str
    fields: Callable[[Any], Any]
    build: Callable[[Any], Any]


def encode_datetime(value: dt.datetime) -> tuple[str, str | None, int]:
    """Its ISO text, with the wall time and the zone's key when its zone has one (an
    offset would lose the zone's DST rules), and its fold."""
    tz = value.tzinfo
    if isinstance(tz, zoneinfo.ZoneInfo) and tz.key:
        return value.replace(tzinfo=None).isoformat(), tz.key, value.fold
    return value.isoformat(), None, value.fold


def decode_datetime(text: str, key: str | None, fold: Any) -> dt.datetime:
    value = dt.datetime.fromisoformat(text)
    if key is not None:
        value = value.replace(tzinfo=zoneinfo.ZoneInfo(key))
    return value.replace(fold=1) if fold else value


def _datetime_payload(value: dt.datetime) -> Any:
    text, key, fold = encode_datetime(value)
    return text if key is None and not fold else [text, key, fold]


def _datetime(payload: Any) -> dt.datetime:
    if type(payload) is str:
        return dt.datetime.fromisoformat(payload)
    return decode_datetime(*payload)


def _interrupt(payload: list[Any]) -> Interrupt:
    value, id_, schema = payload
    return Interrupt(value=value, id=id_, response_schema=schema)


def _dict(payload: list[Any]) -> dict[Any, Any]:
    if len(payload) % 2:
        raise ValueError("a dict's pairs have an odd length")
    pairs = iter(payload)
    return dict(zip(pairs, pairs, strict=True))


# What each builtin type is stored as: (code, payload of the instance).


def command_fields(command: Command) -> list[Any]:
    """A Command as stored: a `Send`'s arg may be one (LangGraph's `Send(node, Command(
    goto=...))`), and the packets of a step are saved with its checkpoint."""
    return [command.graph, command.update, command.resume, command.goto]


def timeout_fields(policy: TimeoutPolicy) -> list[Any]:
    """A `Send`'s own timeout as stored after its node and arg (a packet without one is
    stored as before timeouts existed)."""
    return list(dataclasses.astuple(policy))


def timeout_policy(fields: list[Any]) -> TimeoutPolicy:
    """The `TimeoutPolicy` stored as `timeout_fields`."""
    run, idle, refresh_on = fields
    return TimeoutPolicy(run_timeout=run, idle_timeout=idle, refresh_on=refresh_on)


_PAYLOADS: dict[type, Callable[[Any], tuple[int, Any]]] = {
    tuple: lambda o: (TUPLE, list(o)),
    set: lambda o: (SET, list(o)),
    frozenset: lambda o: (FROZENSET, list(o)),
    dt.datetime: lambda o: (DATETIME, _datetime_payload(o)),
    dt.date: lambda o: (DATE, o.isoformat()),
    dt.time: lambda o: (TIME, o.isoformat()),
    dt.timedelta: lambda o: (TIMEDELTA, [o.days, o.seconds, o.microseconds]),
    uuid.UUID: lambda o: (UUID, o.bytes),
    Decimal: lambda o: (DECIMAL, str(o)),
    int: lambda o: (BIG_INT, str(o)),  # the C encoder takes 64 bits
    Interrupt: lambda o: (INTERRUPT, [o.value, o.id, o.response_schema]),
    Send: lambda o: (
        SEND,
        [o.node, o.arg] if o.timeout is None else [o.node, o.arg, timeout_fields(o.timeout)],
    ),
    Overwrite: lambda o: (OVERWRITE, o.value),
    Command: lambda o: (COMMAND, command_fields(o)),
    deque: lambda o: (DEQUE, list(o)),
}
_BUILDERS: dict[int, Callable[[Any], Any]] = {
    TUPLE: tuple,
    SET: set,
    FROZENSET: frozenset,
    DICT: _dict,
    DATETIME: _datetime,
    DATE: dt.date.fromisoformat,
    TIME: dt.time.fromisoformat,
    TIMEDELTA: lambda p: dt.timedelta(*p),
    UUID: lambda p: uuid.UUID(bytes=p),
    DECIMAL: Decimal,
    BIG_INT: int,
    MESSAGE: from_fields,
    INTERRUPT: _interrupt,
    SEND: lambda p: Send(p[0], p[1], timeout=timeout_policy(p[2]) if len(p) > 2 else None),
    OVERWRITE: Overwrite,
    COMMAND: lambda p: Command(*p),
    DEQUE: deque,
}


class Packer:
    """Encodes and decodes format 1 for a serializer whose allowlist it shares.

    `schemas` maps each allowed class to its Schema and `names` each stored name to
    it; `refuse(cls)` is the error for a class that may not be stored, and
    `not_allowed(name)` the one for a stored name that is not in `names`.
    """

    def __init__(
        self,
        schemas: dict[type, Schema],
        names: dict[str, Schema],
        refuse: Callable[[type], Exception],
        not_allowed: Callable[[Any], Exception],
    ) -> None:
        self._schemas = schemas
        self._names = names
        self._refuse = refuse
        self._not_allowed = not_allowed

    def dumps(self, obj: Any) -> bytes:
        try:
            return _packb([VERSION, obj], default=self._default, option=OPTIONS)
        except TypeError:
            # A key that is not a str, or a value that cannot be stored: the walk finds
            # which, and raises the serializer's own error for the latter.
            return _packb([VERSION, self._walk(obj)], option=OPTIONS)

    def dumps_sharing(self, obj: Any, shared: dict[int, Any]) -> bytes:
        """`dumps` for a dict whose values other dicts of the same save hold too (state
        validation copies a list's dicts but not what is inside them): each value is
        encoded once, kept in `shared` by id, and copied from there. The values must
        stay alive and unchanged while `shared` is in use."""
        if type(obj) is not dict:
            return self.dumps(obj)
        fragments = {}
        try:
            for key, value in obj.items():
                fragment = shared.get(id(value))
                if fragment is None:
                    packed = _packb(value, default=self._default, option=OPTIONS)
                    fragment = shared[id(value)] = _Fragment(packed)
                fragments[key] = fragment
            return _packb([VERSION, fragments], option=OPTIONS)
        except TypeError:  # as in dumps: the walk encodes it or says why it cannot
            return self.dumps(obj)

    def _payload(self, obj: Any) -> tuple[int, Any]:
        cls = type(obj)
        payload = _PAYLOADS.get(cls)
        if payload is not None:
            return payload(obj)
        schema = self._schemas.get(cls)
        if schema is not None:
            return SCHEMA, [schema.name, schema.fields(obj)]
        if is_message_class(cls):
            return MESSAGE, stored_fields(obj)
        raise self._refuse(cls)

    def _default(self, obj: Any) -> Any:
        if type(obj) is tuple:
            return list(obj)  # the C encoder writes it as a list, calling back for its items
        return self._ext(obj, self._default)

    def _default_keeping_tuples(self, obj: Any) -> Any:
        """`_default` where a value must stay hashable: a tuple keeps its extension."""
        return self._ext(obj, self._default_keeping_tuples)

    def _ext(self, obj: Any, default: Callable[[Any], Any]) -> Any:
        if isinstance(obj, str) and not isinstance(obj, enum.Enum):
            # A str of some library's subclass (a message's `.text`) is stored as its
            # text and read back as a str, as LangGraph's savers do.
            return str.__str__(obj)
        code, payload = self._payload(obj)
        if code in _KEEP_TUPLES:
            default = self._default_keeping_tuples
        return _Ext(code, _packb(payload, default=default, option=OPTIONS))

    def _walk(self, obj: Any, keep_tuples: bool = False) -> Any:
        """`obj` with every value that is not native to the C encoder already encoded:
        what `dumps` falls back on when that encoder refuses it. With `keep_tuples`
        (inside a set, a dict's key...), a tuple keeps its extension."""
        cls = type(obj)
        if cls in _NATIVE and (cls is not int or -(2**63) <= obj < 2**64):
            return obj
        if cls is list or (cls is tuple and not keep_tuples):
            return [self._walk(x, keep_tuples) for x in obj]
        if cls is dict:
            if all(type(k) is str for k in obj):
                return {k: self._walk(v, keep_tuples) for k, v in obj.items()}
            # A key must stay hashable; a value is as anywhere else.
            pairs = [
                x for k, v in obj.items() for x in (self._walk(k, True), self._walk(v, keep_tuples))
            ]
            return _Ext(DICT, _packb(pairs, option=OPTIONS))
        if isinstance(obj, str) and not isinstance(obj, enum.Enum):
            return str.__str__(obj)  # as in _ext
        code, payload = self._payload(obj)
        inner = keep_tuples or code in _KEEP_TUPLES
        return _Ext(code, _packb(self._walk(payload, inner), option=OPTIONS))

    def loads(self, data: bytes) -> Any:
        """Decode `dumps` output (which starts with FORMAT); raises what failed
        (ormsgpack would only say that something did)."""
        failed: list[Exception] = []

        def build(code: int, inner: bytes) -> Any:
            try:
                payload = _unpackb(inner, ext_hook=build)
                builder = _BUILDERS.get(code)
                if builder is not None:
                    return builder(payload)
                if code == SCHEMA:
                    name, fields = payload
                    schema = self._names.get(name)
                    if schema is None:
                        raise self._not_allowed(name)
                    return schema.build(fields)
                raise ValueError(f"unknown extension code {code}")
            except Exception as exc:
                if not failed:
                    failed.append(exc)  # the innermost: what actually went wrong
                raise

        try:
            return _unpackb(data, ext_hook=build)[1]
        except Exception as exc:
            raise failed[0] if failed else exc from None
