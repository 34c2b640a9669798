"""State schemas: which keys a graph has, their channels, and how nodes see them.

A schema is a TypedDict, a dataclass or a pydantic model. Any other type (`int`, `dict`,
`Annotated[list, add_messages]`) is the type of the whole state: one key, `ROOT`, that
nodes read and write as a value (LangGraph's root channel). `Annotated[T, reducer]` makes
a key fold its writes with the reducer, `Annotated[T, DeltaChannel(reducer)]` fold each
step's writes in one call, `Annotated[T, Topic(T, accumulate=True)]` (or another channel,
or a channel class) take its writes as that channel does; any other key keeps the last
value written.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from functools import partial
from typing import Any, get_args, get_origin, get_type_hints

import typing_extensions

from engine._annotations import _QUALIFIERS, unwrapped
from engine._weak_cache import weakly_cached
from engine.channels import MISSING, BinaryOperatorAggregate, Channel, LastValue
from engine.channels.binop import check_reducer
from engine.channels.delta import DeltaChannel
from engine.errors import ErrorCode, InvalidUpdateError, create_error_message
from engine.managed import ManagedValue, managed_of


def _is_pydantic(schema: Any) -> bool:
    return isinstance(schema, type) and hasattr(schema, "model_fields")


def is_object_schema(schema: Any) -> bool:
    """True for schemas whose nodes receive an instance rather than a plain dict."""
    return _is_pydantic(schema) or dataclasses.is_dataclass(schema)


ROOT = "__root__"
"""The one key of a state that is a value rather than a class of keys."""


def is_root(schema: Any) -> bool:
    """Whether the whole state is one value: `schema` has no keys of its own (LangGraph's
    rule: no annotations), or its one key is `ROOT` (a TypedDict of `__root__`)."""
    if schema is None or schema is Any:
        return False
    annotations = getattr(schema, "__annotations__", None)
    return annotations is None or (isinstance(annotations, dict) and list(annotations) == [ROOT])


def pydantic_ready(schema: Any) -> Any:
    """`schema` as pydantic takes it: before Python 3.12 pydantic refuses typing's
    TypedDict (programs use it as often as typing_extensions'), so such a schema becomes
    typing_extensions' TypedDict of the same name, keys and required keys."""
    if sys.version_info >= (3, 12) or type(schema).__module__ != "typing":
        return schema
    if not typing_extensions.is_typeddict(schema):
        return schema
    required = schema.__required_keys__
    keys = {
        key: typing_extensions.Required[hint]
        if key in required
        else typing_extensions.NotRequired[hint]
        for key, hint in field_types(schema).items()
    }
    ready = typing_extensions.TypedDict(schema.__name__, keys)  # type: ignore[operator]
    ready.__module__ = schema.__module__
    ready.__doc__ = schema.__doc__
    return ready


def field_types(schema: Any) -> dict[str, Any]:
    """Each key of `schema` with its annotation, Annotated extras included; a root
    schema's one key is `ROOT`."""
    if schema is None or schema is Any:
        return {}
    if is_root(schema) and not hasattr(schema, "__annotations__"):
        return {ROOT: schema}
    try:
        hints = _type_hints(schema)
    except Exception:  # names that do not resolve (yet), or a schema that is not hashable
        try:
            hints = get_type_hints(schema, include_extras=True)
        except Exception:
            hints = dict(getattr(schema, "__annotations__", {}))
    if _is_pydantic(schema):
        return {name: hints.get(name, Any) for name in schema.model_fields}
    if dataclasses.is_dataclass(schema):
        return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(schema)}
    return {k: v for k, v in hints.items() if not k.startswith("__") or k == ROOT}


@weakly_cached
def _type_hints(schema: Any) -> dict[str, Any]:
    """A schema's resolved annotations, worked out once (a failure is not kept): every
    compile of a graph reads them for each of its schemas, and resolving them was a third
    of a small graph's compile. Callers never hand the dict out."""
    return get_type_hints(schema, include_extras=True)


def reducer_of(annotation: Any) -> Callable[[Any, Any], Any] | None:
    """The key's reducer: as in LangGraph, only the last `Annotated` item may be one, so
    a reducer followed by a doc string or a pydantic `Field` leaves the key last-value."""
    while get_origin(annotation) in _QUALIFIERS:
        annotation = get_args(annotation)[0]
    metadata = getattr(annotation, "__metadata__", ())
    last = metadata[-1] if metadata else None
    return last if callable(last) and not isinstance(last, type) else None


def _channel_of(annotation: Any) -> Channel | type[Channel] | None:
    """A channel (or channel class) an `Annotated` key declares as its own; a
    `DeltaChannel` only made, as it needs its reducer."""
    for meta in unwrapped(annotation)[1]:
        if isinstance(meta, Channel) or (
            isinstance(meta, type) and issubclass(meta, Channel) and meta is not DeltaChannel
        ):
            return meta
    return None


def declared_channel(template: Channel | type[Channel], key: str) -> Channel:
    """A fresh channel for `key` like the declared one: a channel class is made with no
    value type, a channel is made empty with its type and options (`from_checkpoint`, as
    LangGraph makes a run's channels), so no run shares a value with the template."""
    channel = template(None) if isinstance(template, type) else template.from_checkpoint(MISSING)
    channel.key = key
    return channel


def channels_for(schema: Any) -> dict[str, Callable[[], Channel]]:
    """A factory per key, so each run gets fresh channels."""
    factories: dict[str, Callable[[], Channel]] = {}
    for key, annotation in field_types(schema).items():
        if managed_of(annotation) is not None:
            continue
        reducer = reducer_of(annotation)
        declared = _channel_of(annotation)
        if isinstance(declared, DeltaChannel):
            factories[key] = partial(declared.bound, key, annotation)
            factories[key]()  # a type with no empty value fails here, not at the first run
        elif declared is not None:
            factories[key] = partial(declared_channel, declared, key)
        elif reducer is None:
            factories[key] = _last_value_factory(key)
        else:
            check_reducer(reducer)
            factories[key] = _aggregate_factory(key, unwrapped(annotation)[0], reducer)
    return factories


def managed_keys(schema: Any) -> dict[str, type[ManagedValue[Any]]]:
    """Keys the loop fills in per task (`RemainingSteps`, `IsLastStep`)."""
    out = {}
    for key, annotation in field_types(schema).items():
        manager = managed_of(annotation)
        if manager is not None:
            out[key] = manager
    return out


def _last_value_factory(key: str) -> Callable[[], Channel]:
    return lambda: LastValue(key=key)


def _aggregate_factory(key: str, typ: Any, reducer: Callable[..., Any]) -> Callable[[], Channel]:
    return lambda: BinaryOperatorAggregate(typ, reducer, key=key)


def defaults_of(schema: Any) -> dict[str, Any]:
    """Declared defaults, which a dataclass or pydantic node input falls back to."""
    if _is_pydantic(schema):
        return {
            name: f.get_default(call_default_factory=True)
            for name, f in schema.model_fields.items()
            if not f.is_required()
        }
    if dataclasses.is_dataclass(schema):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(schema):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
        return out
    return {}


def coerce_input(schema: Any, values: dict[str, Any]) -> Any:
    """Node input: a dict for TypedDict schemas, an instance for dataclass/pydantic ones."""
    if is_object_schema(schema):
        return schema(**values)
    return values


def update_items(
    output: Any, keys: Any, node: str, *, command: bool = False
) -> list[tuple[str, Any]]:
    """The (key, value) writes of a node's update; unknown keys are ignored. Of a root
    state, the update is the value written.

    A node's return (or a run's input, or `update_state`'s values) is a dict, or an
    object of an annotated class (a dataclass, a pydantic model, a NamedTuple...), read
    by attribute. A Command's `update` (`command=True`) may also be a list of (key,
    value) pairs, and one of any other kind is taken as the whole state's value, which a
    state with keys has no channel for: it is dropped. LangGraph draws the same lines:
    a node returning pairs, a bare value or an empty list is refused.
    """
    if output is None:
        return []
    if ROOT in keys and len(keys) == 1:
        return [(ROOT, output)]
    if isinstance(output, dict):
        return [(k, v) for k, v in output.items() if k in keys]
    if command and isinstance(output, list | tuple) and _are_pairs(output):
        return [(k, v) for k, v in output if k in keys]
    if is_object_schema(type(output)):
        if _is_pydantic(type(output)):
            # A None left at its None default was not set: it does not overwrite.
            fields, given = type(output).model_fields, output.model_fields_set
            data = {
                k: value
                for k, f in fields.items()
                if (value := getattr(output, k)) is not None or f.default is not None or k in given
            }
        else:
            data = {f.name: getattr(output, f.name) for f in dataclasses.fields(output)}
        return [(k, v) for k, v in data.items() if k in keys]
    annotated = _annotated_keys(type(output))
    if annotated:
        # Any other object whose class declares its keys: each state key it has an
        # attribute for (a NamedTuple, a plain annotated class).
        missing = object()
        found = ((k, getattr(output, k, missing)) for k in annotated if k in keys)
        return [(k, v) for k, v in found if v is not missing]
    if command:
        return []
    raise InvalidUpdateError(
        create_error_message(
            message=f"Expected dict, got {output}",
            error_code=ErrorCode.INVALID_GRAPH_NODE_RETURN_VALUE,
        )
    )


def _are_pairs(items: list[Any] | tuple[Any, ...]) -> bool:
    return all(isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], str) for i in items)


def _annotated_keys(cls: type) -> tuple[str, ...]:
    """The names annotated on `cls` and its bases, the bases' first (dict-like order)."""
    keys: dict[str, None] = {}
    for base in reversed(cls.__mro__):
        annotations = base.__dict__.get("__annotations__")
        if isinstance(annotations, dict):
            keys.update(dict.fromkeys(annotations))
    return tuple(keys)
