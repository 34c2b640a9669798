"""`engine.graph.message` against `langgraph.graph.message` (the dev-only oracle): the same
inputs must give the same messages, the same ids, the same reuse of objects and the same
errors. Each side gets inputs of its own, since both give id-less messages ids in place."""

from __future__ import annotations

import contextlib
import typing
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph import message as oracle

import engine
import engine.graph
from engine.graph import message as ours
from tests.message_samples import (
    BLOCKS,
    TOOL_CALL,
    USAGE,
    sample_messages,
    user_dict_with_blocks,
)

Make = Callable[[], Any]  # builds one side's input afresh
Reducer = Callable[..., Any]

OPENAI_TOOL_CALL = {
    "id": "call_9",
    "type": "function",
    "function": {"name": "search", "arguments": '{"q": "x"}'},
}


class Ids:
    """Names ids that a reducer made up (uuid4s) by order of first appearance, so two
    runs that each made up their own compare equal."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            made_up = uuid.UUID(value).version == 4 and len(value) == 36
        except ValueError:
            made_up = False
        if not made_up:
            return value
        return self.names.setdefault(value, f"<uuid{len(self.names)}>")


def observe(reducer: Reducer, left: Make, right: Make, **kwargs: Any) -> Any:
    """What a call shows: each message's class and fields, which input object it is (or
    None for a new one), and which inputs got an id in place; or the error."""
    lhs, rhs = left(), right()
    inputs = [x for side in (lhs, rhs) for x in (side if isinstance(side, list) else [side])]
    had_id = [getattr(x, "id", None) is not None for x in inputs]
    try:
        merged = reducer(lhs, rhs, **kwargs)
    except Exception as exc:  # the error is the observation
        return {"error": type(exc).__name__, "message": str(exc)}
    ids = Ids()
    return {
        "messages": [
            [
                type(m).__name__,
                {k: ids(v) if k == "id" else v for k, v in m.model_dump().items()},
                next((i for i, x in enumerate(inputs) if x is m), None),
            ]
            for m in merged
        ],
        "given_ids_in_place": [
            isinstance(x, BaseMessage) and not had and x.id is not None
            for x, had in zip(inputs, had_id, strict=True)
        ],
    }


def assert_same(left: Make, right: Make, **kwargs: Any) -> None:
    assert observe(ours.add_messages, left, right, **kwargs) == observe(
        oracle.add_messages, left, right, **kwargs
    )


CASES: dict[str, tuple[Make, Make]] = {
    "empty": (lambda: [], lambda: []),
    "append": (lambda: [HumanMessage("a", id="1")], lambda: [AIMessage("b", id="2")]),
    "append_without_ids": (lambda: [HumanMessage("a")], lambda: [AIMessage("b")]),
    "single_right": (lambda: [HumanMessage("a", id="1")], lambda: AIMessage("b", id="2")),
    "single_left": (lambda: HumanMessage("a", id="1"), lambda: [AIMessage("b", id="2")]),
    "both_single": (lambda: HumanMessage("a", id="1"), lambda: HumanMessage("b")),
    "replace": (
        lambda: [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        lambda: [HumanMessage("a2", id="1")],
    ),
    "replace_changes_class": (
        lambda: [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        lambda: [SystemMessage("s", id="2"), HumanMessage("c", id="3")],
    ),
    "replace_twice_in_one_update": (
        lambda: [HumanMessage("a", id="1")],
        lambda: [HumanMessage("x", id="1"), HumanMessage("y", id="1")],
    ),
    "same_new_id_twice": (
        lambda: [],
        lambda: [HumanMessage("x", id="n"), AIMessage("y", id="n")],
    ),
    "remove": (
        lambda: [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        lambda: [RemoveMessage(id="1")],
    ),
    "remove_then_add_again": (
        lambda: [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        lambda: [RemoveMessage(id="1"), HumanMessage("again", id="1")],
    ),
    "add_again_then_remove": (
        lambda: [HumanMessage("a", id="1")],
        lambda: [HumanMessage("again", id="1"), RemoveMessage(id="1")],
    ),
    "remove_one_added_in_the_same_update": (
        lambda: [],
        lambda: [HumanMessage("x", id="n"), RemoveMessage(id="n")],
    ),
    "remove_missing": (lambda: [HumanMessage("a", id="1")], lambda: [RemoveMessage(id="no")]),
    "remove_from_empty": (lambda: [], lambda: RemoveMessage(id="no")),
    "remove_all": (
        lambda: [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        lambda: [RemoveMessage(id=ours.REMOVE_ALL_MESSAGES)],
    ),
    "remove_all_then_new": (
        lambda: [HumanMessage("a", id="1")],
        lambda: [
            HumanMessage("lost", id="9"),
            RemoveMessage(id=ours.REMOVE_ALL_MESSAGES),
            HumanMessage("kept", id="1"),
            ("ai", "kept too"),
        ],
    ),
    "remove_all_keeps_what_follows_as_it_is": (
        lambda: [HumanMessage("a", id="1")],
        lambda: [
            RemoveMessage(id=ours.REMOVE_ALL_MESSAGES),
            HumanMessage("x", id="d"),
            HumanMessage("y", id="d"),
            RemoveMessage(id="never-there"),
        ],
    ),
    "two_remove_alls": (
        lambda: [HumanMessage("a", id="1")],
        lambda: [
            RemoveMessage(id=ours.REMOVE_ALL_MESSAGES),
            HumanMessage("x", id="2"),
            RemoveMessage(id=ours.REMOVE_ALL_MESSAGES),
            HumanMessage("y", id="3"),
        ],
    ),
    "remove_all_on_empty": (lambda: [], lambda: RemoveMessage(id=ours.REMOVE_ALL_MESSAGES)),
    "same_id_twice_on_the_left": (
        lambda: [HumanMessage("a", id="d"), AIMessage("b", id="x"), HumanMessage("c", id="d")],
        lambda: [HumanMessage("new", id="d")],
    ),
    "same_id_twice_on_the_left_removed": (
        lambda: [HumanMessage("a", id="d"), AIMessage("b", id="x"), HumanMessage("c", id="d")],
        lambda: [RemoveMessage(id="d")],
    ),
    "string": (lambda: [HumanMessage("a", id="1")], lambda: "just text"),
    "strings": (lambda: [], lambda: ["one", "two"]),
    "tuple": (lambda: [], lambda: ("user", "hi")),
    "tuples": (lambda: [], lambda: [("user", "hi"), ("assistant", "yo"), ("system", "s")]),
    "a_list_of_two_strings_is_two_messages": (lambda: [], lambda: ["user", "hi"]),
    "role_dicts": (
        lambda: [{"role": "user", "content": "a", "id": "1"}],
        lambda: [
            {"role": "assistant", "content": "b", "tool_calls": [OPENAI_TOOL_CALL]},
            {"role": "tool", "content": "r", "tool_call_id": "call_9", "id": "t"},
            {"role": "developer", "content": "d"},
            {"role": "user", "content": "replaced", "id": "1"},
        ],
    ),
    "type_dicts": (
        lambda: [],
        lambda: [
            {"type": "human", "content": "a", "id": "1", "name": "n"},
            {"type": "ai", "content": BLOCKS, "tool_calls": [TOOL_CALL]},
            {"type": "system", "content": "s"},
            {"type": "tool", "content": "r", "tool_call_id": "x", "artifact": [1]},
        ],
    ),
    "remove_as_a_dict": (
        lambda: [HumanMessage("a", id="1")],
        lambda: {"type": "remove", "content": "", "id": "1"},
    ),
    "chunks_become_messages": (
        lambda: [AIMessageChunk("left chunk", id="c0"), HumanMessageChunk("h", id="c9")],
        lambda: [
            AIMessageChunk(
                "hi",
                id="c1",
                tool_call_chunks=[{"name": "f", "args": '{"a": 1', "id": "t", "index": 0}],
                usage_metadata=USAGE,
            )
        ],
    ),
    "a_chunk_replaces_by_id": (
        lambda: [AIMessage("old", id="c1")],
        lambda: AIMessageChunk("new", id="c1", chunk_position="last"),
    ),
    "every_class": (lambda: sample_messages()[:11], lambda: sample_messages()[12:]),
    "mixed": (
        lambda: [HumanMessage("a", id="1"), ("ai", "b")],
        lambda: ["c", ToolMessage("t", tool_call_id="x"), {"role": "user", "content": "d"}],
    ),
    "dict_without_role": (lambda: [], lambda: [{"content": "no role"}]),
    # Appended without an index of ids: every new message is without one.
    "new_messages_without_ids": (
        lambda: [HumanMessage("a"), AIMessage("b", id="1")],
        lambda: [HumanMessage("c"), AIMessage("d")],
    ),
    "one_new_message_twice": (lambda: [AIMessage("b", id="1")], lambda: [HumanMessage("c")] * 2),
    "unknown_role": (lambda: [], lambda: [("wizard", "x")]),
    "unknown_type": (lambda: [], lambda: [{"type": "robot", "content": "x"}]),
    "tool_dict_without_call_id": (lambda: [], lambda: [{"role": "tool", "content": "x"}]),
    "not_a_message": (lambda: [], lambda: [42]),
}


@pytest.mark.parametrize(("left", "right"), CASES.values(), ids=CASES.keys())
def test_add_messages_matches_langgraph(left: Make, right: Make) -> None:
    assert_same(left, right)


OPENAI_CASES: dict[str, tuple[Make, Make]] = {
    "blocks": (
        lambda: [HumanMessage("plain", id="1")],
        lambda: [user_dict_with_blocks("2")],
    ),
    "tool_calls_and_results": (
        lambda: [AIMessage("", id="a", tool_calls=[TOOL_CALL])],
        lambda: [ToolMessage([{"type": "text", "text": "r"}], tool_call_id="call_1", id="t")],
    ),
    "every_class": (lambda: sample_messages()[:11], lambda: []),
    "new_messages_without_ids": (lambda: [HumanMessage("a", id="1")], lambda: ["b", ("ai", "c")]),
}


@pytest.mark.parametrize(("left", "right"), OPENAI_CASES.values(), ids=OPENAI_CASES.keys())
def test_openai_format_matches_langgraph(left: Make, right: Make) -> None:
    assert_same(left, right, format="langchain-openai")


@pytest.mark.parametrize(("left", "right"), OPENAI_CASES.values(), ids=OPENAI_CASES.keys())
def test_a_format_given_alone_makes_a_reducer(left: Make, right: Make) -> None:
    reducer = ours.add_messages(format="langchain-openai")
    assert observe(reducer, left, right) == observe(
        ours.add_messages, left, right, format="langchain-openai"
    )


def test_the_format_is_checked() -> None:
    for reducer in (ours.add_messages, oracle.add_messages):
        with pytest.raises(ValueError, match="format"):
            reducer([], [HumanMessage("x")], format="openai")  # type: ignore[arg-type]


@pytest.mark.parametrize(("left", "right"), [(None, []), ([], None)])
def test_both_sides_are_needed(left: Any, right: Any) -> None:
    for reducer in (ours.add_messages, oracle.add_messages):
        with pytest.raises(ValueError):
            reducer(left, right)


def test_remove_all_messages_and_the_public_names() -> None:
    assert ours.REMOVE_ALL_MESSAGES == oracle.REMOVE_ALL_MESSAGES
    assert engine.add_messages is engine.graph.add_messages is ours.add_messages
    assert engine.MessagesState is engine.graph.MessagesState is ours.MessagesState
    assert engine.REMOVE_ALL_MESSAGES is ours.REMOVE_ALL_MESSAGES
    assert all(hasattr(oracle, name) for name in ours.__all__)


def test_messages_state_is_langgraph_s() -> None:
    ours_hints = typing.get_type_hints(ours.MessagesState, include_extras=True)
    oracle_hints = typing.get_type_hints(oracle.MessagesState, include_extras=True)
    assert ours_hints.keys() == oracle_hints.keys() == {"messages"}
    ours_type, ours_reducer = typing.get_args(ours_hints["messages"])
    oracle_type, _ = typing.get_args(oracle_hints["messages"])
    assert ours_type == oracle_type == list[AnyMessage]
    assert ours_reducer is ours.add_messages
    assert ours.MessagesState.__required_keys__ == oracle.MessagesState.__required_keys__


def test_a_long_history_keeps_its_objects() -> None:
    left = [HumanMessage(str(i), id=str(i)) for i in range(5000)]
    out = ours.add_messages(left, [HumanMessage("new", id="2500"), RemoveMessage("10")])
    assert len(out) == 4999 and out[2499].content == "new"
    assert out[0] is left[0] and out is not left


# A property test: random updates applied in turn, each state from the reducer.

ID_POOL = ["a", "b", "c", "d"]
KINDS = ["human", "ai", "system", "tool"]
ROLES = {"human": ["user", "human"], "ai": ["assistant", "ai"], "system": ["system"]}
new_op = st.tuples(
    st.just("new"),
    st.sampled_from(KINDS),
    st.text(alphabet="xyz", max_size=3),
    st.one_of(st.none(), st.sampled_from(ID_POOL)),
    st.sampled_from(["object", "chunk", "role_dict", "type_dict", "tuple", "str"]),
)
replace_op = st.tuples(
    st.just("replace"),
    st.sampled_from(KINDS),
    st.text(alphabet="pq", max_size=2),
    st.integers(0, 50),
)
remove_op = st.tuples(st.just("remove"), st.integers(0, 50), st.sampled_from(["object", "dict"]))
# Repetition weights the choice: mostly appends, some replaces and removes, few wipes.
OPS = ["new"] * 8 + ["replace"] * 3 + ["remove"] * 3 + ["remove_missing", "remove_all"]
STRATEGIES = {
    "new": new_op,
    "replace": replace_op,
    "remove": remove_op,
    "remove_missing": st.just(("remove_missing",)),
    "remove_all": st.just(("remove_all",)),
}
element = st.sampled_from(OPS).flatmap(STRATEGIES.__getitem__)


def build_message(kind: str, content: str, msg_id: str | None, chunk: bool = False) -> Any:
    if kind == "human":
        return HumanMessageChunk(content, id=msg_id) if chunk else HumanMessage(content, id=msg_id)
    if kind == "ai":
        calls = [dict(TOOL_CALL)] if content.startswith("x") else []
        cls = AIMessageChunk if chunk else AIMessage
        return cls(content, id=msg_id, tool_calls=calls)
    if kind == "system":
        return SystemMessage(content, id=msg_id)
    return ToolMessage(content, id=msg_id, tool_call_id="call_1")


def build_element(op: tuple[Any, ...], state: list[Any]) -> Any:
    """One operation as an update element, ids of positions taken from `state`."""
    tag = op[0]
    if tag == "new":
        _, kind, content, msg_id, form = op
        if form == "str" and kind == "human" and msg_id is None:
            return content
        if form == "tuple" and kind in ROLES and msg_id is None:
            return (ROLES[kind][len(content) % len(ROLES[kind])], content)
        if form in ("role_dict", "type_dict"):
            key, value = (
                ("role", ROLES.get(kind, [kind])[-1]) if form == "role_dict" else ("type", kind)
            )
            d: dict[str, Any] = {key: value, "content": content, "id": msg_id}
            if kind == "tool":
                d["tool_call_id"] = "call_1"
            return d
        return build_message(kind, content, msg_id, chunk=form == "chunk")
    if tag == "replace":
        _, kind, content, position = op
        return build_message(kind, content, state[position % len(state)].id if state else "a")
    if tag == "remove":
        _, position, form = op
        target = state[position % len(state)].id if state else "zz-missing"
        return (
            {"type": "remove", "content": "", "id": target}
            if form == "dict"
            else RemoveMessage(id=target)
        )
    if tag == "remove_missing":
        return RemoveMessage(id="zz-missing")
    return RemoveMessage(id=ours.REMOVE_ALL_MESSAGES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    initial=st.lists(new_op.filter(lambda op: op[4] == "object"), max_size=4),
    updates=st.lists(st.tuples(st.lists(element, max_size=5), st.booleans()), max_size=10),
)
def test_updates_in_turn_match_langgraph(
    initial: list[tuple[Any, ...]], updates: list[tuple[list[tuple[Any, ...]], bool]]
) -> None:
    states = {
        reducer: reducer([], [build_element(op, []) for op in initial])
        for reducer in (ours.add_messages, oracle.add_messages)
    }
    for ops, unwrap in updates:
        seen = []
        for reducer, state in list(states.items()):

            def update(
                state: list[Any] = state, ops: list[tuple[Any, ...]] = ops, unwrap: bool = unwrap
            ) -> Any:
                right = [build_element(op, state) for op in ops]
                return right[0] if unwrap and len(right) == 1 else right

            seen.append(observe(reducer, lambda state=state: list(state), update))
            with contextlib.suppress(ValueError):  # the state stays as it was
                states[reducer] = reducer(list(state), update())
        assert seen[0] == seen[1]
