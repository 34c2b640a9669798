"""Channels: how each piece of state takes the writes of a step."""

from engine.channels.any_value import AnyValue
from engine.channels.base import MISSING, BaseChannel, Channel
from engine.channels.binop import BinaryOperatorAggregate
from engine.channels.delta import DeltaChannel
from engine.channels.ephemeral_value import EphemeralValue
from engine.channels.last_value import LastValue, LastValueAfterFinish
from engine.channels.named_barrier_value import NamedBarrierValue, NamedBarrierValueAfterFinish
from engine.channels.topic import Topic
from engine.channels.untracked_value import UntrackedValue

__all__ = [
    "MISSING",
    "AnyValue",
    "BaseChannel",
    "BinaryOperatorAggregate",
    "Channel",
    "DeltaChannel",
    "EphemeralValue",
    "LastValue",
    "LastValueAfterFinish",
    "NamedBarrierValue",
    "NamedBarrierValueAfterFinish",
    "Topic",
    "UntrackedValue",
]
