"""Time-ordered ids (UUIDv7 layout) so checkpoint ids sort as strings in creation order.

Layout: 48-bit unix milliseconds, version 7, then 74 bits split into a 42-bit counter
(the 12 rand_a bits and the top 30 rand_b bits, around the 2 variant bits) and 32 random
bits. The counter starts at a random value below 2**41 each millisecond and is bumped
for every further id in the same millisecond, so ids from one process strictly increase
while ids from different processes still differ in 73 random bits.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from typing import Any

from engine.constants import PULL

_COUNTER_BITS = 42
_COUNTER_MAX = (1 << _COUNTER_BITS) - 1

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def _reset_lock_in_child() -> None:
    # A fork while another thread held the lock would leave the child's copy locked.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_in_child)


def _random_bits(n_bytes: int) -> int:
    return int.from_bytes(os.urandom(n_bytes), "big")


def _next_int() -> int:
    """The next id as a 128-bit integer, greater than every earlier one in this process."""
    global _last_ms, _counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _last_ms:
            _last_ms = now_ms
            # Top bit left clear: room for 2**41 more ids within this millisecond.
            _counter = _random_bits(6) >> 7
        elif _counter < _COUNTER_MAX:
            # Same millisecond, or the clock stepped back: keep counting from the last id.
            _counter += 1
        else:
            # Counter exhausted: borrow the next millisecond rather than repeat an id.
            _last_ms += 1
            _counter = _random_bits(6) >> 7
        ms, counter = _last_ms, _counter
    rand_a = counter >> 30
    rand_b = ((counter & ((1 << 30) - 1)) << 32) | _random_bits(4)
    return (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b


def new_uuid7() -> uuid.UUID:
    """A fresh time-ordered UUID (for run and thread ids)."""
    return uuid.UUID(int=_next_int())


def new_checkpoint_id() -> str:
    """A fresh checkpoint id: a UUIDv7 as its lower-case 36-character string."""
    h = f"{_next_int():032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def task_id(checkpoint_id: str, ns: str, step: int, name: str, kind: str, key: Any) -> str:
    """A task's id: deterministic, so a resumed or retried step finds its tasks' saved
    writes, and a saver can store a pull task's id as its node's name (`pull_task_id`)."""
    digest = hashlib.blake2b(
        f"{checkpoint_id}|{ns}|{step}|{name}|{kind}|{key}".encode(), digest_size=16
    ).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"


def pull_task_id(checkpoint_id: str, ns: str, step: int, name: str) -> str:
    """The id of the task that runs node `name` at `step` because its triggers changed,
    prepared at checkpoint `checkpoint_id` of namespace `ns`."""
    return task_id(checkpoint_id, ns, step, name, PULL, name)
