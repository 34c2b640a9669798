"""LangGraph's serializer API: `JsonPlusSerializer`'s constructor, the typed methods,
and the `serde` that savers take."""

from __future__ import annotations

import datetime as dt
import warnings
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pydantic.v1
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from engine.checkpoint.base import BaseCheckpointSaver
from engine.checkpoint.memory import InMemorySaver
from engine.checkpoint.serde.base import SerializerProtocol
from engine.checkpoint.serde.jsonplus import JsonPlusSerializer, JsonSerializer, SerializationError
from engine.checkpoint.sql import SQLSaver
from tests.unit.serde_cases import Colour, Point


def round_trip(serde: SerializerProtocol, value: Any) -> Any:
    return serde.loads_typed(serde.dumps_typed(value))


def test_allowlists_name_classes_or_module_tuples() -> None:
    by_class = JsonPlusSerializer(allowed_msgpack_modules=[Point])
    by_tuple = JsonPlusSerializer(allowed_json_modules=[("tests.unit.serde_cases", "Colour")])
    # A tuple comes back as a list, as from LangGraph's savers.
    assert round_trip(by_class, {"p": Point(1, (2,))}) == {"p": Point(1, [2])}
    assert round_trip(by_tuple, [Colour.RED]) == [Colour.RED]
    with pytest.raises(TypeError, match="Point"):
        by_tuple.dumps_typed(Point(1))


@pytest.mark.parametrize(
    ("options", "error", "names"),
    [
        ({"pickle_fallback": True}, ValueError, "pickle_fallback=True"),
        ({"allowed_msgpack_modules": True}, ValueError, "allowed_msgpack_modules=True"),
        ({"allowed_json_modules": True}, ValueError, "allowed_json_modules=True"),
        ({"__unpack_ext_hook__": lambda code, data: data}, ValueError, "__unpack_ext_hook__"),
        ({"allowed_msgpack_modules": ["tests.unit.serde_cases"]}, TypeError, "tuple"),
        ({"allowed_json_modules": [("tests.unit.serde_cases",)]}, TypeError, "tuple"),
    ],
)
def test_what_the_engine_does_not_do_is_refused(
    options: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        JsonPlusSerializer(**options)


@pytest.mark.parametrize(
    "entry",
    [
        ("decimal", "Decimal"),
        ("collections", "OrderedDict"),
        ("pathlib", "Path"),
        ("builtins", "int"),
        ("uuid", "UUID"),
        ("numpy", "ndarray"),
        ("langchain_core.messages", "AIMessage"),
        Decimal,
    ],
)
def test_allowlist_entries_of_types_stored_anyway_are_taken(entry: Any) -> None:
    """As by LangGraph: what is stored without allowing may be allowed too."""
    serde = JsonPlusSerializer(allowed_msgpack_modules=[entry], allowed_json_modules=[entry])
    wider = serde.with_msgpack_allowlist([entry])
    for s in (serde, wider):
        assert round_trip(s, [Decimal("1.5"), OrderedDict(a=1)]) == [
            Decimal("1.5"),
            OrderedDict(a=1),
        ]


def test_allowlist_entries_that_name_nothing_here_allow_nothing() -> None:
    """LangGraph matches entries lazily: a module that is not installed (an optional
    dependency's) is taken silently; a name its module lacks, or that is not a class, is
    taken with a warning (a typo?)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        serde = JsonPlusSerializer(allowed_msgpack_modules=[("optional_pkg_not_here", "Thing")])
        saver = InMemorySaver().with_allowlist([("optional_pkg_not_here", "Thing"), Point])
    assert round_trip(serde, [1]) == [1]
    assert round_trip(saver.serde, Point(1)) == Point(1, [])  # type: ignore[arg-type]
    for entry, says in (
        (("tests.unit.serde_cases", "Nothing"), "names no class"),
        (("tests.unit.serde_cases", "WHEN"), "is not a class"),
    ):
        with pytest.warns(UserWarning, match=says):
            JsonPlusSerializer(allowed_msgpack_modules=[entry, Point])
        with pytest.warns(UserWarning, match=says):
            JsonPlusSerializer().with_msgpack_allowlist([entry])


class Legacy(pydantic.v1.BaseModel):
    """A model of pydantic's v1 API, as LangChain's older schemas are."""

    class Config:
        extra = "allow"

    name: str
    at: dt.datetime | None = None
    inner: LegacyInner | None = None


class LegacyInner(pydantic.v1.BaseModel):
    n: int = 0


Legacy.update_forward_refs()


def test_pydantic_v1_models_round_trip_once_allowed() -> None:
    value = Legacy(name="a", at=dt.datetime(2024, 1, 1), inner=LegacyInner(n=2), extra={"k": [1]})
    for serde in (
        JsonPlusSerializer(allowed_msgpack_modules=[(__name__, "Legacy"), LegacyInner]),
        JsonPlusSerializer().with_msgpack_allowlist([Legacy, (__name__, "LegacyInner")]),
    ):
        for data in (serde.dumps(value), serde.dumps_binary(value)):
            got = serde.loads(data)
            assert type(got) is Legacy and type(got.inner) is LegacyInner
            assert got == value and got.__dict__ == value.__dict__
    with pytest.raises(TypeError, match=r"serde\.allow\(Legacy\)"):
        JsonPlusSerializer().dumps(value)
    with pytest.raises(SerializationError, match="Legacy"):
        JsonPlusSerializer(allowed_msgpack_modules=[LegacyInner]).loads(
            JsonPlusSerializer(allowed_msgpack_modules=[Legacy, LegacyInner]).dumps(value)
        )


def test_with_msgpack_allowlist_is_a_copy() -> None:
    class Strict(JsonPlusSerializer):
        pass

    base = Strict(allowed_msgpack_modules=[Colour])
    wider = base.with_msgpack_allowlist([Point])
    assert type(wider) is Strict
    assert round_trip(wider, (Point(1), Colour.BLUE)) == [Point(1, []), Colour.BLUE]
    with pytest.raises(TypeError, match="Point"):
        base.dumps_typed(Point(1))


def test_typed_methods_refuse_what_another_serializer_wrote() -> None:
    serde = JsonSerializer()
    assert serde.dumps_typed(None)[0] == "msgpack"
    assert serde.loads_typed(("json", serde.dumps({"a": (1,)}))) == {"a": [1]}
    with pytest.raises(SerializationError, match="'pickle'"):
        serde.loads_typed(("pickle", b"\x80\x04N."))


class Reversing:
    """A serializer of the user's own: the engine's bytes, reversed."""

    def __init__(self) -> None:
        self.inner = JsonSerializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        return "reversed-" + kind, data[::-1]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        return self.inner.loads_typed((kind.removeprefix("reversed-"), blob[::-1]))


def test_memory_saver_stores_through_any_serializer() -> None:
    from engine.graph import START, StateGraph

    saver = InMemorySaver(serde=Reversing(), check_immutable=True)
    graph = StateGraph(dict).add_node("a", lambda s: {"n": s["n"] + 1})
    graph = graph.add_edge(START, "a").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 1}, config) == {"n": 2}
    assert graph.get_state(config).values == {"n": 2}
    saver.serde = JsonPlusSerializer()  # set as LangGraph's tests do: later saves use it
    assert graph.invoke({"n": 5}, {"configurable": {"thread_id": "u"}}) == {"n": 6}
    with pytest.raises(TypeError, match="dumps_typed and loads_typed"):
        InMemorySaver(serde=object())  # type: ignore[arg-type]


def test_sql_saver_takes_the_engines_serializers_only() -> None:
    engine = create_async_engine("sqlite+aiosqlite://")
    assert SQLSaver(engine, serde=JsonPlusSerializer(allowed_msgpack_modules=[Point])).serde
    for foreign in (
        Reversing(),
        type("Sub", (JsonPlusSerializer,), {"loads_typed": Reversing.loads_typed})(),
    ):
        with pytest.raises(TypeError, match="JsonSerializer"):
            SQLSaver(engine, serde=foreign)  # type: ignore[arg-type]


def test_a_saver_of_the_users_own_gets_a_serializer() -> None:
    class Mine(BaseCheckpointSaver):
        pass

    assert isinstance(Mine().serde, JsonPlusSerializer)
    given = Reversing()
    assert Mine(serde=given).serde is given


class Untyped:
    """A serializer of LangGraph's older kind: `dumps` and `loads` only."""

    def dumps(self, obj: Any) -> bytes:
        return repr(obj).encode()

    def loads(self, data: bytes) -> Any:
        import ast

        return ast.literal_eval(data.decode())


def test_an_untyped_serializer_is_wrapped_as_langgraphs_savers_wrap_it() -> None:
    from engine.checkpoint.serde.base import SerializerCompat, maybe_add_typed_methods
    from engine.graph import START, StateGraph

    wrapped = maybe_add_typed_methods(Untyped())
    assert isinstance(wrapped, SerializerCompat)
    assert wrapped.dumps_typed({"a": 1}) == ("dict", b"{'a': 1}")
    assert round_trip(wrapped, [1, "x"]) == [1, "x"]
    typed = JsonPlusSerializer()
    assert maybe_add_typed_methods(typed) is typed

    saver = InMemorySaver(serde=Untyped())
    assert isinstance(saver.serde, SerializerCompat)
    graph = StateGraph(dict).add_node("a", lambda s: {"n": s["n"] + 1})
    graph = graph.add_edge(START, "a").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 1}, config) == {"n": 2}
    assert graph.get_state(config).values == {"n": 2}

    class Mine(BaseCheckpointSaver):
        pass

    assert isinstance(Mine(serde=Untyped()).serde, SerializerCompat)  # type: ignore[arg-type]


def test_pickle_fallback_false_is_langgraphs_default_spelled_out() -> None:
    serde = JsonPlusSerializer(pickle_fallback=False)
    assert serde.loads_typed(serde.dumps_typed({"a": (1, 2)})) == {"a": [1, 2]}
