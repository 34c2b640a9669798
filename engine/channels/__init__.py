"""Channels: how each piece of state takes the writes of a step."""

from engine.channels.aggregate import BinaryOperatorAggregate
from engine.channels.barrier import NamedBarrierValue
from engine.channels.base import MISSING, Channel
from engine.channels.ephemeral import EphemeralValue
from engine.channels.last_value import LastValue
from engine.channels.topic import Topic

__all__ = [
    "MISSING",
    "BinaryOperatorAggregate",
    "Channel",
    "EphemeralValue",
    "LastValue",
    "NamedBarrierValue",
    "Topic",
]
