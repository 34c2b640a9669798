"""Savers: where a thread's versions live between calls."""

from engine.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointTuple
from engine.checkpoint.memory import InMemorySaver

__all__ = ["BaseCheckpointSaver", "Checkpoint", "CheckpointTuple", "InMemorySaver"]
