"""A long chat driven straight through a saver, as the loop will drive it: one checkpoint
per turn whose `messages` channel grew by a human and an AI message.

Shared by the storage tests and bench/storage.py, so both measure the same chat the same
way. The texts are deterministic (seeded), about 640 bytes a turn: 130 KB over 200 turns.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from engine.checkpoint.ids import new_checkpoint_id

_WORDS = [
    "the",
    "a",
    "reminder",
    "forecast",
    "tomorrow",
    "morning",
    "rain",
    "umbrella",
    "meeting",
    "call",
    "doctor",
    "train",
    "station",
    "weather",
    "sunny",
    "cloudy",
    "evening",
    "afternoon",
    "week",
    "plan",
    "trip",
    "coffee",
    "lunch",
    "project",
    "deadline",
    "report",
    "review",
    "team",
    "email",
    "schedule",
    "note",
    "list",
    "groceries",
    "milk",
    "bread",
    "pick",
    "up",
    "remember",
    "please",
    "could",
    "you",
    "would",
    "like",
    "at",
    "on",
    "in",
    "for",
    "with",
    "about",
    "before",
    "after",
    "today",
    "temperature",
    "degrees",
    "wind",
    "light",
    "heavy",
    "chance",
    "showers",
    "clear",
    "sky",
    "walk",
    "run",
    "gym",
    "book",
]


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = -1
    while length < size:
        words.append(rng.choice(_WORDS))
        length += len(words[-1]) + 1
    return " ".join(words).capitalize() + "."


def turn_texts(turns: int, seed: int = 0) -> list[tuple[str, str]]:
    """(human, ai) message texts of each turn."""
    rng = random.Random(seed)
    return [
        (_text(rng, rng.randint(120, 280)), _text(rng, rng.randint(330, 530))) for _ in range(turns)
    ]


def reply_to(text: str) -> str:
    """A reply to `text` as long as a turn's `ai` text and as new: the same every time."""
    rng = random.Random(text)
    return _text(rng, rng.randint(330, 530))


def human_message(text: str) -> dict[str, Any]:
    return {"type": "human", "content": text, "id": str(uuid.uuid4())}


def ai_message(text: str) -> dict[str, Any]:
    return {
        "type": "ai",
        "content": text,
        "id": f"run-{uuid.uuid4()}",
        "response_metadata": {"finish_reason": "stop"},
    }


@dataclass
class Chat:
    """A chat thread as the loop sees it: the latest config and the state it put."""

    saver: Any
    thread_id: str
    config: dict[str, Any] = field(init=False)
    messages: list[Any] = field(default_factory=list)
    version: Any = None
    step: int = 0
    raw_bytes: int = 0  # message text stored so far (UTF-8)
    turn_seconds: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.config = {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": ""}}

    async def turn(self, human: str, ai: str) -> dict[str, Any]:
        """Save the checkpoint of one turn; returns its config."""
        started = time.perf_counter()
        previous = self.version
        self.version = self.saver.get_next_version(previous, "messages")
        self.messages = [*self.messages, human_message(human), ai_message(ai)]
        checkpoint = {
            "v": 4,
            "id": new_checkpoint_id(),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {"messages": self.messages},
            "channel_versions": {"messages": self.version},
            "versions_seen": {"chat": {"messages": previous}} if previous else {},
            "updated_channels": ["messages"],
        }
        metadata = {"source": "loop", "step": self.step, "parents": {}, "run_id": str(uuid.uuid4())}
        self.config = await self.saver.aput(
            self.config, checkpoint, metadata, {"messages": self.version}
        )
        self.turn_seconds.append(time.perf_counter() - started)
        self.step += 1
        self.raw_bytes += len(human.encode()) + len(ai.encode())
        return self.config


async def run_chat(saver: Any, thread_id: str, turns: int, seed: int = 0) -> Chat:
    """A `turns`-turn chat on a fresh thread."""
    chat = Chat(saver, thread_id)
    for human, ai in turn_texts(turns, seed):
        await chat.turn(human, ai)
    return chat


async def bytes_on_disk(conn: AsyncConnection) -> int:
    """Bytes the database's tables take on disk, with their indexes, TOAST and maps
    (PostgreSQL), or the pages of its tables and indexes (SQLite)."""
    if conn.dialect.name == "postgresql":
        query = (
            "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class"
            " WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
        )
    else:
        query = "SELECT coalesce(sum(pgsize), 0) FROM dbstat"
    return int(await conn.scalar(text(query)))
