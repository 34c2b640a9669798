"""`Held.prefix`: how far a list handed back to a put still holds, object for object,
the elements a read built or a put stored, each unchanged since."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from engine.checkpoint.serde.jsonplus import Prepared, default_serializer
from engine.checkpoint.sql.journal import Held, Stored


def dump(value: Any) -> str:
    return default_serializer.dumps(value).decode()


def read(values: list[Any]) -> Held:
    """What a read of `values`, once stored, returns and keeps."""
    stamps = [
        Stored(p) if type(p) is str else p
        for p in default_serializer.prepare([dump(v) for v in values])
    ]
    built = [
        s.build() if isinstance(s, Prepared) else default_serializer.loads(s.text) for s in stamps
    ]
    return Held(built, stamps)


VALUES = [
    HumanMessage("hi", id="1"),
    AIMessage("", id="2", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c"}]),
    AIMessage("hello", id="3"),
    {"role": "user", "n": 1},
    "text",
    7,
    AIMessage("", id="4", additional_kwargs={"at": datetime(2026, 1, 1)}),  # kept as text
]


def test_the_stored_forms_are_prepared_and_stored_text() -> None:
    held = read(VALUES)
    assert [type(s) for s in held.stamps] == [Prepared] * 6 + [Stored]


def test_the_same_objects_unchanged_are_the_whole_prefix() -> None:
    held = read(VALUES)
    value = [*held.objects, HumanMessage("new")]
    assert held.prefix(value, len(value), dump) == len(VALUES)
    assert held.prefix(value, 3, dump) == 3
    assert held.prefix(value, len(value), dump, start=2) == len(VALUES)


def set_content(v: list[Any]) -> None:
    v[2].content = "changed"


def add_kwarg(v: list[Any]) -> None:
    v[2].additional_kwargs["k"] = 1


def set_extra(v: list[Any]) -> None:
    v[2].custom = 1


def change_call(v: list[Any]) -> None:
    v[1].tool_calls[0]["args"]["q"] = 2


def change_dict(v: list[Any]) -> None:
    v[3]["n"] = 2


def change_date(v: list[Any]) -> None:
    v[6].additional_kwargs["at"] = datetime(2027, 1, 1)


def replace_one(v: list[Any]) -> None:
    v[2] = AIMessage("hello", id="3")  # equal, but not the object held


CHANGES = {
    "content": (set_content, 2),
    "nested dict": (add_kwarg, 2),
    "extra field": (set_extra, 2),
    "tool call": (change_call, 1),
    "stored text": (change_date, 6),
    "plain dict": (change_dict, 3),
    "another object": (replace_one, 2),
}


@pytest.mark.parametrize(("change", "at"), CHANGES.values(), ids=CHANGES.keys())
def test_the_prefix_ends_at_the_first_element_changed(change: Any, at: int) -> None:
    held = read(VALUES)
    value = list(held.objects)
    change(value)
    assert held.prefix(value, len(value), dump) == at
    assert held.prefix(value, len(value), dump, start=at + 1) == len(VALUES)
