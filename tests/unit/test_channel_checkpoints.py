"""Channels are rebuilt as LangGraph rebuilds them: `from_checkpoint` on a channel gives a
new one of the same kind and options, empty (MISSING) or holding what `checkpoint()`
returned, never sharing a value with the channel it was made from."""

import operator

import pytest

from engine.channels import (
    BinaryOperatorAggregate,
    EphemeralValue,
    LastValue,
    NamedBarrierValue,
    Topic,
    UntrackedValue,
)
from engine.channels.base import MISSING
from engine.checkpoint.serde.types import ChannelProtocol, SendProtocol
from engine.errors import EmptyChannelError
from engine.types import Send


def test_a_last_value_round_trips() -> None:
    channel = LastValue(int).from_checkpoint(MISSING)
    with pytest.raises(EmptyChannelError):
        channel.get()
    channel.update([3])
    again = LastValue(int).from_checkpoint(channel.checkpoint())
    assert again.get() == 3 and again.ValueType is int


def test_an_aggregate_starts_empty_each_time() -> None:
    template = BinaryOperatorAggregate(list, operator.iadd)
    first = template.from_checkpoint(MISSING)
    first.update([["a"]])
    second = template.from_checkpoint(MISSING)
    assert second.get() == [] and template.get() == []
    assert template.from_checkpoint(first.checkpoint()).get() == ["a"]


def test_topics_barriers_and_untracked_values() -> None:
    topic = Topic(str, accumulate=True).from_checkpoint(["x"])
    topic.update(["y"])
    assert topic.get() == ["x", "y"] and topic.accumulate
    barrier = NamedBarrierValue(str, {"a", "b"}).from_checkpoint(MISSING)
    assert barrier.value == frozenset()
    assert NamedBarrierValue(str, {"a", "b"}).from_checkpoint(["a"]).value == {"a"}
    untracked = UntrackedValue(dict).from_checkpoint(MISSING)
    untracked.update([{"k": 1}])
    assert untracked.checkpoint() is MISSING
    with pytest.raises(EmptyChannelError):
        UntrackedValue(dict).from_checkpoint(untracked.checkpoint()).get()
    with pytest.raises(EmptyChannelError):
        EphemeralValue(int).from_checkpoint(MISSING).get()


def test_the_protocols_fit_the_engines_objects() -> None:
    assert isinstance(Send("node", {}), SendProtocol)
    assert hasattr(ChannelProtocol, "from_checkpoint")
