"""Tests for engine.graph.messages, checked against langchain_core / langgraph as oracles.

The oracles are dev-only: they are imported here, never by the engine.
"""

import copy
import json
import pickle
import typing
import uuid
from collections.abc import Callable
from functools import reduce
from types import SimpleNamespace
from typing import Any

import langchain_core.messages as lc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.utils.json import parse_partial_json
from langgraph.graph.message import REMOVE_ALL_MESSAGES as LG_REMOVE_ALL
from langgraph.graph.message import add_messages as lg_add_messages

import engine.graph.messages as ours
from engine.graph.messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    MessagesState,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    add_messages,
    coerce_message,
    convert_to_messages,
    message_from_dict,
    message_to_dict,
)

# Both modules expose the same constructor signatures, so one factory builds either side.
OURS = SimpleNamespace(
    HumanMessage=HumanMessage,
    AIMessage=AIMessage,
    SystemMessage=SystemMessage,
    ToolMessage=ToolMessage,
    RemoveMessage=RemoveMessage,
    AIMessageChunk=AIMessageChunk,
    REMOVE_ALL=REMOVE_ALL_MESSAGES,
    add=add_messages,
    dump=message_to_dict,
)
LC = SimpleNamespace(
    HumanMessage=lc.HumanMessage,
    AIMessage=lc.AIMessage,
    SystemMessage=lc.SystemMessage,
    ToolMessage=lc.ToolMessage,
    RemoveMessage=lc.RemoveMessage,
    AIMessageChunk=lc.AIMessageChunk,
    REMOVE_ALL=LG_REMOVE_ALL,
    add=lg_add_messages,
    dump=lambda m: m.model_dump(),
)
Factory = Callable[[SimpleNamespace], Any]

TC = {"name": "search", "args": {"q": "x"}, "id": "call_1"}
USAGE = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
BLOCKS = [{"type": "text", "text": "Hello "}, {"type": "image_url", "image_url": {"url": "u"}}]


def _is_uuid4(value: Any) -> bool:
    try:
        return isinstance(value, str) and uuid.UUID(value).version == 4 and len(value) == 36
    except ValueError:
        return False


def _normalise(dumps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace auto-assigned uuid4 ids so the two implementations can be compared."""
    return [{**d, "id": "<auto>"} if _is_uuid4(d["id"]) else d for d in dumps]


# --------------------------------------------------------------------------- #
# Construction and shapes
# --------------------------------------------------------------------------- #


def test_content_positional_or_keyword() -> None:
    assert HumanMessage("hi") == HumanMessage(content="hi")
    m = HumanMessage(content="hi", id="1", name="bob")
    assert (m.content, m.id, m.name, m.additional_kwargs, m.response_metadata) == (
        "hi",
        "1",
        "bob",
        {},
        {},
    )
    with pytest.raises(TypeError):
        HumanMessage("hi", "1")  # type: ignore[misc]  # everything but content is keyword-only


def test_types() -> None:
    assert [
        c.type
        for c in (
            HumanMessage,
            AIMessage,
            ToolMessage,
            SystemMessage,
            AIMessageChunk,
            RemoveMessage,
        )
    ] == ["human", "ai", "tool", "system", "AIMessageChunk", "remove"]
    assert HumanMessage("x").type == "human"
    assert isinstance(AIMessageChunk("x"), AIMessage)  # as in LangChain


def test_slots_and_no_dict() -> None:
    for m in (HumanMessage("x"), AIMessage("x"), ToolMessage("x", tool_call_id="1")):
        assert not hasattr(m, "__dict__")


def test_equality_by_value() -> None:
    assert HumanMessage("a", id="1") == HumanMessage("a", id="1")
    assert HumanMessage("a", id="1") != HumanMessage("a", id="2")
    assert HumanMessage("a") != SystemMessage("a")
    assert AIMessage("a") != AIMessageChunk("a")
    assert RemoveMessage("x") == RemoveMessage(id="x")


def test_mutable_defaults_not_shared() -> None:
    a, b = HumanMessage("a"), HumanMessage("b")
    a.additional_kwargs["k"] = 1
    assert b.additional_kwargs == {}


def test_ai_message_tool_calls_get_type() -> None:
    m = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None, "extras": {"x": 1}}])
    assert m.tool_calls == [{"name": "f", "args": {}, "id": None, "type": "tool_call"}]
    with pytest.raises(ValueError, match="name"):
        AIMessage("", tool_calls=[{"args": {}}])


def test_tool_message_requires_tool_call_id_and_coerces() -> None:
    with pytest.raises(TypeError):
        ToolMessage("x")  # type: ignore[call-arg]
    m = ToolMessage(42, tool_call_id=7)  # type: ignore[arg-type]
    assert (m.content, m.tool_call_id, m.status, m.artifact) == ("42", "7", "success", None)
    assert ToolMessage(("a", 1, {"b": 2}), tool_call_id="1").content == ["a", "1", {"b": 2}]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="status"):
        ToolMessage("x", tool_call_id="1", status="ok")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_call_id"):
        ToolMessage("x", tool_call_id=None)  # type: ignore[arg-type]


def test_remove_message() -> None:
    m = RemoveMessage(id="x")
    assert (m.content, m.id, m.type) == ("", "x", "remove")
    with pytest.raises(ValueError, match="content"):
        RemoveMessage(id="x", content="y")
    with pytest.raises(ValueError, match="content"):
        lc.RemoveMessage(id="x", content="y")
    with pytest.raises(ValueError):
        RemoveMessage(id=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "content",
    [
        "plain",
        "",
        [],
        BLOCKS,
        ["a", {"type": "text", "text": "b"}, {"type": "reasoning", "reasoning": "r"}, "c"],
        [{"type": "text"}, {"type": "text", "text": 5}, {"type": "text", "text": "ok"}],
    ],
)
def test_text_matches_langchain(content: Any) -> None:
    assert HumanMessage(content).text == str(lc.HumanMessage(content).text)
    assert isinstance(HumanMessage(content).text, str)


def test_pickle_and_copy_roundtrip() -> None:
    msgs = [
        HumanMessage("a", id="1"),
        AIMessage("b", tool_calls=[TC], usage_metadata=USAGE),
        ToolMessage("c", tool_call_id="call_1", artifact={"x": 1}),
        AIMessageChunk("d", tool_call_chunks=[{"name": "f", "args": "{", "id": "c", "index": 0}]),
        RemoveMessage("z"),
    ]
    for m in msgs:
        assert pickle.loads(pickle.dumps(m)) == m
        assert copy.deepcopy(m) == m


# --------------------------------------------------------------------------- #
# message_to_dict / message_from_dict against LangChain's model_dump
# --------------------------------------------------------------------------- #

SHAPE_CASES: list[Factory] = [
    lambda M: M.HumanMessage("hi"),
    lambda M: M.HumanMessage(content=BLOCKS, id="1", name="bob"),
    lambda M: M.HumanMessage("x", additional_kwargs={"a": 1}, response_metadata={"b": [1]}),
    lambda M: M.SystemMessage("be nice", id="s"),
    lambda M: M.AIMessage("hello"),
    lambda M: M.AIMessage("", tool_calls=[TC], id="a1", usage_metadata=USAGE),
    lambda M: M.AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}]),
    lambda M: M.AIMessage(
        "x", invalid_tool_calls=[{"name": "f", "args": "{", "id": "1", "error": None}]
    ),
    lambda M: M.AIMessage(
        "x",
        additional_kwargs={
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
                {"id": "d", "type": "function", "function": {"name": "g", "arguments": "{bad"}},
                {"id": "e", "type": "function", "function": {"name": "h", "arguments": "null"}},
                {"id": "f"},
            ]
        },
    ),
    lambda M: M.ToolMessage("result", tool_call_id="call_1"),
    lambda M: M.ToolMessage(
        [{"type": "text", "text": "r"}], tool_call_id="c", status="error", artifact=[1], id="t"
    ),
    lambda M: M.RemoveMessage(id="gone"),
    lambda M: M.AIMessageChunk("part", id="lc_run-1"),
    lambda M: M.AIMessageChunk("", tool_calls=[TC]),
    lambda M: M.AIMessageChunk(
        "",
        tool_call_chunks=[
            {"name": "f", "args": '{"a": "he', "id": "c1", "index": 0},
            {"name": "g", "args": "[1]", "id": "c2", "index": 1},
            {"name": None, "args": "", "id": None, "index": 2},
        ],
        usage_metadata=USAGE,
    ),
    lambda M: M.AIMessageChunk(
        "",
        additional_kwargs={
            "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"'}}]
        },
    ),
]


@pytest.mark.parametrize("make", SHAPE_CASES)
def test_message_to_dict_matches_model_dump(make: Factory) -> None:
    mine, theirs = make(OURS), make(LC)
    assert message_to_dict(mine) == theirs.model_dump()
    assert list(message_to_dict(mine)) == list(theirs.model_dump())  # same key order
    assert mine.to_dict() == message_to_dict(mine)
    assert mine.text == str(theirs.text)
    json.dumps(message_to_dict(mine))  # JSON-serialisable


@pytest.mark.parametrize("make", SHAPE_CASES)
def test_message_from_dict_roundtrip(make: Factory) -> None:
    mine, theirs = make(OURS), make(LC)
    assert message_from_dict(message_to_dict(mine)) == mine
    # LangChain dumps load too, both the model_dump shape and messages_to_dict's {type, data}.
    assert message_from_dict(theirs.model_dump()) == mine
    assert message_from_dict(lc.message_to_dict(theirs)) == mine


def test_message_from_dict_errors() -> None:
    with pytest.raises(ValueError, match="Unknown message type"):
        message_from_dict({"type": "chat", "content": "x"})
    with pytest.raises(ValueError, match="Unknown keys"):
        message_from_dict({"type": "human", "content": "x", "tool_call_id": "1"})
    with pytest.raises(ValueError, match="tool_call_id"):
        message_from_dict({"type": "tool", "content": "x"})
    with pytest.raises(ValueError, match="content"):
        message_from_dict({"type": "remove", "content": "x", "id": "1"})
    with pytest.raises(ValueError):
        message_from_dict("human")  # type: ignore[arg-type]
    # Legacy LangChain dumps carried example=False.
    assert message_from_dict({"type": "human", "content": "x", "example": False}) == HumanMessage(
        "x"
    )


# --------------------------------------------------------------------------- #
# Coercion against langchain_core.messages.convert_to_messages
# --------------------------------------------------------------------------- #

COERCE_CASES: list[Any] = [
    "hello",
    ("user", "hi"),
    ("human", BLOCKS),
    ["assistant", "yo"],
    ("ai", "yo"),
    ("system", "sys"),
    ("developer", "dev"),
    {"role": "user", "content": "hi"},
    {"role": "user", "content": None},
    {"role": "user", "content": BLOCKS, "id": "1", "name": "bob"},
    {"role": "assistant", "content": "", "tool_calls": [TC]},
    {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "args": {}, "id": "x"}]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "system", "content": "s"},
    {"role": "developer", "content": "s"},
    {"role": "tool", "content": "r", "tool_call_id": "call_1"},
    {"role": "tool", "content": "r", "tool_call_id": "c", "status": "error", "artifact": {"a": 1}},
    {"role": "user", "content": "x", "extra": 1, "additional_kwargs": {"k": 2}},
    {"role": "user", "content": "x", "response_metadata": {"r": 1}},
    {"role": "user", "type": "ai", "content": "role wins"},
    {"type": "human", "content": "hi", "id": "h"},
    {"type": "ai", "content": "a", "id": "2", "tool_calls": [TC], "name": None},
    {"type": "system", "content": "s"},
    {"type": "tool", "content": "r", "tool_call_id": "1"},
    {"type": "remove", "content": "", "id": "gone"},
    {"type": "remove", "content": "ignored", "id": "gone"},
    {"type": "human", "content": "x", "additional_kwargs": {}, "response_metadata": {}},
    {"type": "human", "content": "x", "example": False},
    {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
        "kwargs": {"content": "from envelope", "id": "e1"},
    },
    lc.HumanMessage("x").model_dump(),
    lc.SystemMessage("x", id="1").model_dump(),
    lc.ToolMessage("x", tool_call_id="1", status="error").model_dump(),
]


@pytest.mark.parametrize("item", COERCE_CASES)
def test_coerce_matches_convert_to_messages(item: Any) -> None:
    theirs = lc.convert_to_messages([copy.deepcopy(item)])[0]
    mine = coerce_message(copy.deepcopy(item))
    assert message_to_dict(mine) == theirs.model_dump()


def test_coerce_full_ai_dump_keeps_fields() -> None:
    """Deliberate divergence: LangChain files these keys under additional_kwargs."""
    dump = AIMessage("x", id="1", tool_calls=[TC], usage_metadata=USAGE).to_dict()
    m = coerce_message(dump)
    assert m == AIMessage("x", id="1", tool_calls=[TC], usage_metadata=USAGE)
    assert coerce_message({**AIMessageChunk("x", id="c").to_dict()}) == AIMessageChunk("x", id="c")


def test_coerce_leniencies() -> None:
    assert coerce_message({"type": "remove", "id": "x"}) == RemoveMessage("x")
    m = HumanMessage("same")
    assert coerce_message(m) is m
    chunk = AIMessageChunk("c")
    assert coerce_message(chunk) is chunk
    assert convert_to_messages(["a", ("ai", "b")]) == [HumanMessage("a"), AIMessage("b")]


BAD_ITEMS: list[tuple[Any, str]] = [
    (1, "int"),
    (None, "NoneType"),
    (("a", "b", "c"), "3 items"),
    (("user",), "1 items"),
    ({"content": "x"}, "'role' or 'type'"),
    ({"role": "user"}, "'content'"),
    ({"role": "wizard", "content": "x"}, "wizard"),
    ({"role": "function", "content": "x", "name": "f"}, "function"),
    ((3, "x"), "3"),
]


@pytest.mark.parametrize(("item", "fragment"), BAD_ITEMS)
def test_coerce_errors_are_clear_value_errors(item: Any, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        coerce_message(item)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "item",
    [
        {"content": "x"},
        {"role": "user"},
        {"role": "wizard", "content": "x"},
        ("wizard", "x"),
    ],
)
def test_coerce_value_errors_where_oracle_raises_value_error(item: Any) -> None:
    with pytest.raises(ValueError):
        lc.convert_to_messages([item])
    with pytest.raises(ValueError):
        coerce_message(item)


def test_oracle_uses_other_error_classes_for_some_shapes() -> None:
    """Documented divergence: LangChain raises NotImplementedError/KeyError here."""
    for item, oracle_error in [
        (1, NotImplementedError),
        (("a", "b", "c"), NotImplementedError),
        ({"role": "tool", "content": "r"}, KeyError),
    ]:
        with pytest.raises(oracle_error):
            lc.convert_to_messages([item])
        with pytest.raises(ValueError):
            coerce_message(item)


def test_convert_to_messages_rejects_single_items() -> None:
    with pytest.raises(ValueError, match="single"):
        convert_to_messages("hello")
    with pytest.raises(ValueError, match="single"):
        convert_to_messages({"role": "user", "content": "x"})


# --------------------------------------------------------------------------- #
# add_messages: differential tests against langgraph
# --------------------------------------------------------------------------- #


def _run(side: SimpleNamespace, left: Factory, right: Factory) -> Any:
    try:
        return _normalise([side.dump(m) for m in side.add(left(side), right(side))])
    except Exception as e:  # the exception class itself is compared
        return e


ADD_CASES: list[tuple[str, Factory, Factory]] = [
    ("empty", lambda M: [], lambda M: []),
    ("append", lambda M: [M.HumanMessage("a", id="1")], lambda M: [M.AIMessage("b", id="2")]),
    ("append_no_ids", lambda M: [M.HumanMessage("a")], lambda M: [M.AIMessage("b")]),
    ("single_right", lambda M: [M.HumanMessage("a", id="1")], lambda M: M.AIMessage("b", id="2")),
    ("single_left", lambda M: M.HumanMessage("a", id="1"), lambda M: [M.AIMessage("b", id="2")]),
    ("both_single", lambda M: M.HumanMessage("a", id="1"), lambda M: M.HumanMessage("b")),
    (
        "replace",
        lambda M: [M.HumanMessage("a", id="1"), M.AIMessage("b", id="2")],
        lambda M: [M.HumanMessage("a2", id="1")],
    ),
    (
        "replace_changes_class",
        lambda M: [M.HumanMessage("a", id="1"), M.AIMessage("b", id="2")],
        lambda M: [M.SystemMessage("s", id="2"), M.HumanMessage("c", id="3")],
    ),
    (
        "replace_twice_in_one_update",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: [M.HumanMessage("x", id="1"), M.HumanMessage("y", id="1")],
    ),
    (
        "duplicate_new_ids_in_update",
        lambda M: [],
        lambda M: [M.HumanMessage("x", id="n"), M.AIMessage("y", id="n")],
    ),
    (
        "remove",
        lambda M: [M.HumanMessage("a", id="1"), M.AIMessage("b", id="2")],
        lambda M: [M.RemoveMessage(id="1")],
    ),
    (
        "remove_then_readd",
        lambda M: [M.HumanMessage("a", id="1"), M.AIMessage("b", id="2")],
        lambda M: [M.RemoveMessage(id="1"), M.HumanMessage("again", id="1")],
    ),
    (
        "readd_then_remove",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: [M.HumanMessage("again", id="1"), M.RemoveMessage(id="1")],
    ),
    (
        "remove_appended_in_same_update",
        lambda M: [],
        lambda M: [M.HumanMessage("x", id="n"), M.RemoveMessage(id="n")],
    ),
    (
        "remove_missing",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: [M.RemoveMessage(id="nope")],
    ),
    ("remove_from_empty", lambda M: [], lambda M: M.RemoveMessage(id="nope")),
    (
        "remove_all",
        lambda M: [M.HumanMessage("a", id="1"), M.AIMessage("b", id="2")],
        lambda M: [M.RemoveMessage(id=M.REMOVE_ALL)],
    ),
    (
        "remove_all_then_new",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: [
            M.HumanMessage("lost", id="9"),
            M.RemoveMessage(id=M.REMOVE_ALL),
            M.HumanMessage("kept", id="1"),
            ("ai", "kept too"),
        ],
    ),
    (
        "remove_all_tail_is_verbatim",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: [
            M.RemoveMessage(id=M.REMOVE_ALL),
            M.HumanMessage("x", id="d"),
            M.HumanMessage("y", id="d"),
            M.RemoveMessage(id="never-existed"),
        ],
    ),
    (
        "two_remove_alls",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: [
            M.RemoveMessage(id=M.REMOVE_ALL),
            M.HumanMessage("x", id="2"),
            M.RemoveMessage(id=M.REMOVE_ALL),
            M.HumanMessage("y", id="3"),
        ],
    ),
    (
        "remove_all_on_empty",
        lambda M: [],
        lambda M: M.RemoveMessage(id=M.REMOVE_ALL),
    ),
    (
        "duplicate_left_ids",
        lambda M: [
            M.HumanMessage("a", id="d"),
            M.AIMessage("b", id="x"),
            M.HumanMessage("c", id="d"),
        ],
        lambda M: [M.HumanMessage("new", id="d")],
    ),
    (
        "duplicate_left_ids_removed",
        lambda M: [
            M.HumanMessage("a", id="d"),
            M.AIMessage("b", id="x"),
            M.HumanMessage("c", id="d"),
        ],
        lambda M: [M.RemoveMessage(id="d")],
    ),
    ("string", lambda M: [M.HumanMessage("a", id="1")], lambda M: "just text"),
    ("strings_list", lambda M: [], lambda M: ["one", "two"]),
    ("tuple", lambda M: [], lambda M: ("user", "hi")),
    ("tuple_list", lambda M: [], lambda M: [("user", "hi"), ("assistant", "yo"), ("system", "s")]),
    ("list_pair_is_two_strings", lambda M: [], lambda M: ["user", "hi"]),
    (
        "role_dicts",
        lambda M: [{"role": "user", "content": "a", "id": "1"}],
        lambda M: [
            {"role": "assistant", "content": "b", "tool_calls": [TC]},
            {"role": "tool", "content": "r", "tool_call_id": "call_1", "id": "t"},
            {"role": "user", "content": "replaced", "id": "1"},
        ],
    ),
    (
        "type_dicts",
        lambda M: [],
        lambda M: [
            {"type": "human", "content": "a", "id": "1", "name": "n"},
            {"type": "ai", "content": BLOCKS},
            {"type": "system", "content": "s"},
            {"type": "tool", "content": "r", "tool_call_id": "x"},
        ],
    ),
    (
        "remove_dict",
        lambda M: [M.HumanMessage("a", id="1")],
        lambda M: {"type": "remove", "content": "", "id": "1"},
    ),
    (
        "chunk_becomes_message",
        lambda M: [M.AIMessageChunk("left chunk", id="c0")],
        lambda M: [
            M.AIMessageChunk(
                "hi",
                id="c1",
                tool_call_chunks=[{"name": "f", "args": '{"a": 1', "id": "t", "index": 0}],
                usage_metadata=USAGE,
            )
        ],
    ),
    (
        "mixed",
        lambda M: [M.HumanMessage("a", id="1"), ("ai", "b")],
        lambda M: ["c", M.ToolMessage("t", tool_call_id="x"), {"role": "user", "content": "d"}],
    ),
    ("bad_item", lambda M: [], lambda M: [{"content": "no role"}]),
    ("bad_role", lambda M: [], lambda M: [("wizard", "x")]),
]


@pytest.mark.parametrize(
    ("left", "right"), [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES]
)
def test_add_messages_matches_langgraph(left: Factory, right: Factory) -> None:
    mine, theirs = _run(OURS, left, right), _run(LC, left, right)
    if isinstance(theirs, Exception):
        assert isinstance(mine, ValueError), mine
        assert isinstance(theirs, ValueError), theirs
    else:
        assert mine == theirs


def test_add_messages_error_message_names_the_id() -> None:
    with pytest.raises(ValueError, match="nope"):
        add_messages([HumanMessage("a", id="1")], [RemoveMessage("nope")])


def test_add_messages_none_arguments() -> None:
    with pytest.raises(ValueError, match="left"):
        add_messages(None, [])
    with pytest.raises(ValueError, match="right"):
        add_messages([], None)
    with pytest.raises(ValueError):
        lg_add_messages([], None)


def test_add_messages_assigns_uuid4_without_mutating() -> None:
    left = [HumanMessage("a")]
    right = [AIMessage("b"), HumanMessage("c", id="keep")]
    left_before, right_before = copy.deepcopy(left), copy.deepcopy(right)
    out = add_messages(left, right)
    assert left == left_before and right == right_before  # inputs untouched
    assert left[0].id is None and right[0].id is None
    assert all(_is_uuid4(m.id) for m in out[:2]) and out[2].id == "keep"
    assert out[2] is right[1]  # messages with ids are reused, not copied
    assert [m.content for m in out] == ["a", "b", "c"]
    assert out is not left


def test_add_messages_returns_new_list_and_reuses_messages() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    out = add_messages(left, [])
    assert out == left and out is not left
    assert all(x is y for x, y in zip(out, left, strict=True))


def test_add_messages_output_never_contains_chunks() -> None:
    out = add_messages([], [AIMessageChunk("x", id="1")])
    assert type(out[0]) is AIMessage


def test_messages_state_annotation() -> None:
    hints = typing.get_type_hints(MessagesState, include_extras=True)
    annotated = hints["messages"]
    assert typing.get_origin(annotated) is typing.Annotated
    base_type, reducer = typing.get_args(annotated)
    assert reducer is add_messages
    assert typing.get_origin(base_type) is list
    assert set(typing.get_args(typing.get_args(base_type)[0])) >= {HumanMessage, AIMessage}
    assert MessagesState.__required_keys__ == frozenset({"messages"})
    assert ours.AnyMessage is not None


def test_add_messages_large_history_reuses_objects() -> None:
    left = [HumanMessage(str(i), id=str(i)) for i in range(5000)]
    out = add_messages(left, [HumanMessage("new", id="2500"), RemoveMessage("10")])
    assert len(out) == 4999
    assert out[2499].content == "new"
    assert out[0] is left[0]


# --------------------------------------------------------------------------- #
# add_messages: property test against langgraph
# --------------------------------------------------------------------------- #

ID_POOL = ["a", "b", "c", "d"]
KINDS = ["human", "ai", "system", "tool"]
ROLE_NAMES = {
    "human": ["user", "human"],
    "ai": ["assistant", "ai"],
    "system": ["system"],
    "tool": ["tool"],
}

new_op = st.tuples(
    st.just("new"),
    st.sampled_from(KINDS),
    st.text(alphabet="xyz", max_size=3),
    st.one_of(st.none(), st.sampled_from(ID_POOL)),
    st.sampled_from(["obj", "role_dict", "type_dict", "tuple", "str"]),
    st.integers(0, 1),
)
replace_op = st.tuples(
    st.just("replace"),
    st.sampled_from(KINDS),
    st.text(alphabet="pq", max_size=2),
    st.integers(0, 50),
)
remove_op = st.tuples(st.just("remove"), st.integers(0, 50), st.sampled_from(["obj", "dict"]))
missing_op = st.just(("remove_missing",))
remove_all_op = st.just(("remove_all",))
# Repetition weights the choice: mostly appends, some replaces/removes, rare errors/wipes.
OP_WEIGHTS = ["new"] * 8 + ["replace"] * 3 + ["remove"] * 3 + ["remove_missing", "remove_all"]
OP_STRATEGIES = {
    "new": new_op,
    "replace": replace_op,
    "remove": remove_op,
    "remove_missing": missing_op,
    "remove_all": remove_all_op,
}
element = st.sampled_from(OP_WEIGHTS).flatmap(OP_STRATEGIES.__getitem__)
update = st.tuples(st.lists(element, min_size=0, max_size=5), st.booleans())


def _build_message(side: SimpleNamespace, kind: str, content: str, msg_id: str | None) -> Any:
    if kind == "human":
        return side.HumanMessage(content, id=msg_id)
    if kind == "ai":
        calls = [dict(TC)] if content.startswith("x") else []
        return side.AIMessage(content, id=msg_id, tool_calls=calls)
    if kind == "system":
        return side.SystemMessage(content, id=msg_id)
    return side.ToolMessage(content, id=msg_id, tool_call_id="call_1")


def _build_element(side: SimpleNamespace, op: tuple[Any, ...], state: list[Any]) -> Any:
    """Render one operation for one implementation, resolving positions in its own state."""
    tag = op[0]
    if tag == "new":
        _, kind, content, msg_id, form, role_choice = op
        if form in ("tuple", "str") and msg_id is None and kind != "tool":
            if form == "str" and kind == "human":
                return content
            return (ROLE_NAMES[kind][role_choice % len(ROLE_NAMES[kind])], content)
        if form in ("role_dict", "type_dict"):
            d: dict[str, Any] = {"content": content}
            if form == "role_dict":
                d["role"] = ROLE_NAMES[kind][role_choice % len(ROLE_NAMES[kind])]
            else:
                d["type"] = kind
            if msg_id is not None:
                d["id"] = msg_id
            if kind == "tool":
                d["tool_call_id"] = "call_1"
            return d
        return _build_message(side, kind, content, msg_id)
    if tag == "replace":
        _, kind, content, pos = op
        target = state[pos % len(state)].id if state else "a"
        return _build_message(side, kind, content, target)
    if tag == "remove":
        _, pos, form = op
        target = state[pos % len(state)].id if state else "zz-missing"
        return (
            {"type": "remove", "content": "", "id": target}
            if form == "dict"
            else (side.RemoveMessage(id=target))
        )
    if tag == "remove_missing":
        return side.RemoveMessage(id="zz-missing")
    return side.RemoveMessage(id=side.REMOVE_ALL)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    initial=st.lists(new_op.filter(lambda op: op[4] == "obj"), max_size=4),
    updates=st.lists(update, min_size=1, max_size=10),
)
def test_add_messages_property_matches_langgraph(
    initial: list[tuple[Any, ...]], updates: list[tuple[list[tuple[Any, ...]], bool]]
) -> None:
    # States always come out of the reducer, so every message in them has an id.
    state_ours: list[Any] = add_messages([], [_build_element(OURS, op, []) for op in initial])
    state_lc: list[Any] = lg_add_messages([], [_build_element(LC, op, []) for op in initial])
    for ops, unwrap in updates:
        outcome = []
        for side, state in ((OURS, state_ours), (LC, state_lc)):
            right = [_build_element(side, op, state) for op in ops]
            if unwrap and len(right) == 1:
                right = right[0]
            try:
                outcome.append(side.add(state, right))
            except ValueError as e:
                outcome.append(e)
        mine, theirs = outcome
        if isinstance(theirs, Exception) or isinstance(mine, Exception):
            assert type(mine) is type(theirs) is ValueError, (mine, theirs)
            continue
        assert _normalise([message_to_dict(m) for m in mine]) == _normalise(
            [m.model_dump() for m in theirs]
        )
        assert all(m.id is not None for m in mine)
        state_ours, state_lc = mine, theirs


# --------------------------------------------------------------------------- #
# AIMessageChunk against LangChain
# --------------------------------------------------------------------------- #


def test_chunk_add_basic() -> None:
    a = AIMessageChunk("He", id="run-1", response_metadata={"model": "m"})
    b = AIMessageChunk("llo", response_metadata={"finish_reason": "stop"})
    c = a + b
    assert c.content == "Hello"
    assert c.response_metadata == {"model": "m", "finish_reason": "stop"}
    assert c.id == "run-1"
    assert a.content == "He" and a.response_metadata == {"model": "m"}  # inputs untouched
    assert (a + [b, AIMessageChunk("!")]).content == "Hello!"
    msg = c.to_message()
    assert type(msg) is AIMessage and msg.content == "Hello" and msg.id == "run-1"
    with pytest.raises(TypeError):
        a + HumanMessage("x")  # type: ignore[operator]


def test_chunk_keeps_name() -> None:
    """Divergence: LangChain drops ``name`` when adding chunks; we keep the first one."""
    assert (AIMessageChunk("a", name="bot") + AIMessageChunk("b")).name == "bot"


def test_chunk_list_plus_string_keeps_text() -> None:
    """Divergence: LangChain drops a string added to empty list content."""
    assert (AIMessageChunk([]) + AIMessageChunk("a")).content == ["a"]


CHUNK_PAIRS: list[tuple[Factory, Factory]] = [
    (lambda M: M.AIMessageChunk("a"), lambda M: M.AIMessageChunk("b", id="abc")),
    (lambda M: M.AIMessageChunk("a", id="lc_x"), lambda M: M.AIMessageChunk("b", id="prov")),
    (lambda M: M.AIMessageChunk("a", id="lc_x"), lambda M: M.AIMessageChunk("b", id="lc_run-y")),
    (lambda M: M.AIMessageChunk("a", id="lc_run-x"), lambda M: M.AIMessageChunk("b", id="lc_y")),
    (lambda M: M.AIMessageChunk("a", id="p1"), lambda M: M.AIMessageChunk("b", id="p2")),
    (
        lambda M: M.AIMessageChunk([{"type": "text", "text": "a", "index": 0}]),
        lambda M: M.AIMessageChunk(
            [{"type": "text", "text": "b", "index": 0}, {"type": "text", "text": "c", "index": 1}]
        ),
    ),
    (lambda M: M.AIMessageChunk("a"), lambda M: M.AIMessageChunk([{"type": "text", "text": "b"}])),
    (lambda M: M.AIMessageChunk(["a"]), lambda M: M.AIMessageChunk("b")),
    (lambda M: M.AIMessageChunk([{"type": "text", "text": "a"}]), lambda M: M.AIMessageChunk("")),
    (lambda M: M.AIMessageChunk([{"type": "text", "text": "a"}]), lambda M: M.AIMessageChunk("b")),
    (
        lambda M: M.AIMessageChunk(
            "",
            additional_kwargs={
                "s": "a",
                "n": 1,
                "same": 2,
                "d": {"x": "1"},
                "l": [1],
                "none": None,
            },
            response_metadata={"created": 1, "id": "r", "model_provider": "p", "flag": True},
        ),
        lambda M: M.AIMessageChunk(
            "",
            additional_kwargs={
                "s": "b",
                "n": 2,
                "same": 2,
                "d": {"x": "2", "y": 3},
                "l": [2],
                "none": 5,
            },
            response_metadata={"created": 9, "id": "r", "model_provider": "p", "flag": True},
        ),
    ),
    (
        lambda M: M.AIMessageChunk("", usage_metadata=USAGE),
        lambda M: M.AIMessageChunk(
            "",
            usage_metadata={
                "input_tokens": 1,
                "output_tokens": 1,
                "total_tokens": 2,
                "input_token_details": {"cache_read": 1},
            },
        ),
    ),
    (lambda M: M.AIMessageChunk("", usage_metadata=USAGE), lambda M: M.AIMessageChunk("")),
    (lambda M: M.AIMessageChunk(""), lambda M: M.AIMessageChunk("", usage_metadata=USAGE)),
    (
        lambda M: M.AIMessageChunk(
            "", tool_call_chunks=[{"name": "f", "args": '{"a"', "id": "c1", "index": 0}]
        ),
        lambda M: M.AIMessageChunk(
            "",
            tool_call_chunks=[
                {"name": None, "args": ": 1}", "id": None, "index": 0},
                {"name": "g", "args": "", "id": "c2", "index": 1},
            ],
        ),
    ),
    (
        lambda M: M.AIMessageChunk(
            "", tool_call_chunks=[{"name": "f", "args": "{", "id": "c1", "index": 0}]
        ),
        lambda M: M.AIMessageChunk(
            "", tool_call_chunks=[{"name": "g", "args": "}", "id": "c2", "index": 0}]
        ),
    ),
    (
        lambda M: M.AIMessageChunk("", tool_calls=[TC]),
        lambda M: M.AIMessageChunk("", chunk_position="last"),
    ),
]


@pytest.mark.parametrize(("left", "right"), CHUNK_PAIRS)
def test_chunk_add_matches_langchain(left: Factory, right: Factory) -> None:
    mine = left(OURS) + right(OURS)
    theirs = left(LC) + right(LC)
    assert message_to_dict(mine) == theirs.model_dump()
    assert message_to_dict(mine.to_message()) == message_chunk_to_message(theirs).model_dump()


def test_chunk_merge_type_conflict_is_type_error() -> None:
    for side in (OURS, LC):
        with pytest.raises(TypeError):
            side.AIMessageChunk("", additional_kwargs={"a": 1}) + side.AIMessageChunk(
                "", additional_kwargs={"a": "x"}
            )


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-1000, 1000),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        st.text(alphabet='ab "\\\n{}[],:é', max_size=6),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(alphabet='ab"\\', max_size=3), children, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 2]))
def test_partial_json_matches_langchain_on_every_prefix(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    for end in range(len(text) + 1):
        prefix = text[:end]
        try:
            expected: Any = ("ok", parse_partial_json(prefix))
        except ValueError:
            expected = ("error",)
        try:
            got: Any = ("ok", ours._parse_partial_json(prefix))
        except ValueError:
            got = ("error",)
        assert got == expected, prefix


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="ab ", max_size=3), min_size=1, max_size=6),
    args=st.lists(st.dictionaries(st.sampled_from("xyz"), json_values, max_size=3), max_size=2),
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    first_id=st.sampled_from([None, "lc_run-1", "prov-1"]),
    with_usage=st.booleans(),
)
def test_streamed_chunks_match_langchain(
    texts: list[str],
    args: list[dict[str, Any]],
    cuts: list[int],
    first_id: str | None,
    with_usage: bool,
) -> None:
    """Split text and tool-call args into pieces; every running sum must match LangChain."""
    pieces: list[dict[str, Any]] = [{"content": t} for t in texts]
    for index, a in enumerate(args):
        raw = json.dumps(a, ensure_ascii=False)
        pos, k, first = 0, 0, True
        while pos < len(raw) or first:
            step = cuts[k % len(cuts)]
            chunk = {"name": "tool" if first else None, "args": raw[pos : pos + step]}
            chunk.update({"id": f"call_{index}" if first else None, "index": index})
            pieces.append({"content": "", "tool_call_chunks": [chunk]})
            pos, k, first = pos + step, k + 1, False
    pieces[0]["id"] = first_id
    pieces[0]["response_metadata"] = {"model_name": "m"}
    pieces[-1]["response_metadata"] = {"finish_reason": "stop"}
    pieces[-1]["chunk_position"] = "last"
    if with_usage:
        pieces[-1]["usage_metadata"] = USAGE

    def build(side: SimpleNamespace) -> list[Any]:
        return [side.AIMessageChunk(**copy.deepcopy(p)) for p in pieces]

    mine_chunks, lc_chunks = build(OURS), build(LC)
    mine, theirs = mine_chunks[0], lc_chunks[0]
    for m_next, l_next in zip(mine_chunks[1:], lc_chunks[1:], strict=True):
        mine, theirs = mine + m_next, theirs + l_next
        assert message_to_dict(mine) == theirs.model_dump()
    assert message_to_dict(mine.to_message()) == message_chunk_to_message(theirs).model_dump()
    folded = mine_chunks[0] + mine_chunks[1:]
    assert folded == reduce(lambda x, y: x + y, mine_chunks)
    via_chunk = add_messages([], [mine])
    assert type(via_chunk[0]) is AIMessage
    assert via_chunk[0].id is not None
    assert {**message_to_dict(via_chunk[0]), "id": None} == {
        **message_to_dict(mine.to_message()),
        "id": None,
    }


def test_base_message_is_exported() -> None:
    assert issubclass(HumanMessage, BaseMessage)
    for name in ours.__all__:
        assert hasattr(ours, name), name
