"""LangGraph's helpers for saver authors (`langgraph.checkpoint.base`) have twins in
`engine.checkpoint.base` that give the same results (ids and times aside), and a
server's user fits `engine.runtime.BaseUser`."""

from typing import Any

import langgraph.checkpoint.base as theirs
import pytest

import engine.checkpoint.base as ours
from app.auth import GraphUser
from engine.channels import BinaryOperatorAggregate, LastValue, Topic
from engine.runtime import BaseUser, ServerInfo


def comparable(checkpoint: dict[str, Any]) -> dict[str, Any]:
    return {
        key: checkpoint.get(key)
        for key in ("channel_values", "channel_versions", "versions_seen", "updated_channels")
    }


def test_empty_copy_and_create_checkpoint() -> None:
    empty = ours.empty_checkpoint()
    assert empty["v"] == ours.LATEST_VERSION and empty["id"] and empty["ts"]
    assert comparable(empty) == comparable(theirs.empty_checkpoint())

    base = {**empty, "channel_versions": {"a": 1, "b": 1, "t": 1}, "versions_seen": {"n": {"a": 1}}}
    copied = ours.copy_checkpoint(base)
    copied["versions_seen"]["n"]["a"] = 2
    copied["channel_versions"]["a"] = 2
    assert base["versions_seen"] == {"n": {"a": 1}} and base["channel_versions"]["a"] == 1

    a, b, t = LastValue(int), BinaryOperatorAggregate(int, lambda x, y: x + y), Topic(str)
    a.update([3])
    b.update([4])
    made = ours.create_checkpoint(base, {"a": a, "b": b, "t": t, "z": LastValue(int)}, 1)
    assert made["channel_values"] == {"a": 3, "b": 4}
    assert made["id"] != base["id"] and made["versions_seen"] == base["versions_seen"]
    assert ours.create_checkpoint(made, None, 2, id="x")["channel_values"] == {"a": 3, "b": 4}
    assert ours.create_checkpoint(made, None, 2, id="x")["id"] == "x"


@pytest.mark.parametrize(
    "config",
    [
        {"configurable": {"thread_id": "t", "checkpoint_id": "c"}},
        {"configurable": {"user": "a\x00b", "__secret": 1, "n": 2, "nested": {}, "f": 0.5}},
        {"metadata": {"m": True, "user": "meta"}, "configurable": {"user": "conf"}},
        {},
    ],
)
def test_checkpoint_metadata_and_id(config: dict[str, Any]) -> None:
    metadata: Any = {"source": "loop", "step": 1, "note": "x\x00y", "writes": {}}
    assert ours.get_checkpoint_metadata(config, metadata) == theirs.get_checkpoint_metadata(
        config, metadata
    )
    assert ours.get_serializable_checkpoint_metadata(
        config, metadata
    ) == theirs.get_serializable_checkpoint_metadata(config, metadata)
    if "configurable" in config:
        assert ours.get_checkpoint_id(config) == theirs.get_checkpoint_id(config)
    assert ours.writes_sort_key("~a", "t", 2) == theirs.writes_sort_key("~a", "t", 2)


def test_the_error_and_the_write_indexes_are_there() -> None:
    from engine.checkpoint.base import EmptyChannelError
    from engine.errors import EmptyChannelError as Original

    assert EmptyChannelError is Original
    for channel, index in theirs.WRITES_IDX_MAP.items():
        assert ours.WRITES_IDX_MAP[channel] == index


def test_a_servers_user_is_a_base_user() -> None:
    user = GraphUser("ann", is_authenticated=True)
    assert isinstance(user, BaseUser)
    assert ServerInfo("assistant", "graph", user).user is user
    assert not isinstance("ann", BaseUser)
