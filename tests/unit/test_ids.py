"""Checkpoint ids must sort as strings in creation order, within and across threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.checkpoint import ids
from engine.checkpoint.ids import new_checkpoint_id, new_uuid7


def test_id_is_a_lowercase_uuid7_carrying_the_current_time() -> None:
    before_ms = time.time_ns() // 1_000_000
    value = new_checkpoint_id()
    after_ms = time.time_ns() // 1_000_000
    parsed = uuid.UUID(value)
    assert value == str(parsed) and len(value) == 36
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert before_ms <= parsed.int >> 80 <= after_ms


def test_new_uuid7_shares_the_generator() -> None:
    first, middle, last = new_checkpoint_id(), new_uuid7(), new_checkpoint_id()
    assert isinstance(middle, uuid.UUID) and middle.version == 7
    assert first < str(middle) < last


def test_strictly_increasing_over_100k_calls() -> None:
    values = [new_checkpoint_id() for _ in range(100_000)]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))


def test_strictly_increasing_per_thread_and_unique_across_threads() -> None:
    results: list[list[str]] = [[] for _ in range(8)]

    def work(out: list[str]) -> None:
        out.extend(new_checkpoint_id() for _ in range(10_000))

    workers = [threading.Thread(target=work, args=(out,)) for out in results]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for out in results:
        assert all(a < b for a, b in zip(out, out[1:], strict=False))
    assert len({v for out in results for v in out}) == 80_000


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], int]], None]:
    """Swap the generator's clock; its state is restored afterwards, so the future
    timestamps used here do not leak into other tests."""
    monkeypatch.setattr(ids, "_last_ms", ids._last_ms)
    monkeypatch.setattr(ids, "_counter", ids._counter)
    return lambda time_ns: monkeypatch.setattr(ids, "time", SimpleNamespace(time_ns=time_ns))


def test_clock_stepping_back_does_not_reorder(fake_clock: Callable[..., None]) -> None:
    now = time.time_ns() + 10_000_000_000
    times = iter([now, now - 5_000_000_000, now - 6_000_000_000])
    fake_clock(lambda: next(times))
    values = [new_checkpoint_id() for _ in range(3)]
    assert values == sorted(values) and len(set(values)) == 3


def test_exhausted_counter_borrows_the_next_millisecond(fake_clock: Callable[..., None]) -> None:
    now = time.time_ns() + 20_000_000_000
    fake_clock(lambda: now)
    first = new_uuid7()
    ids._counter = ids._COUNTER_MAX
    second = new_uuid7()
    assert second.int >> 80 == (first.int >> 80) + 1
    assert str(first) < str(second)


def test_other_processes_draw_other_ids() -> None:
    code = "from engine.checkpoint import ids\nfor _ in range(1000): print(ids.new_checkpoint_id())"
    root = Path(__file__).resolve().parents[2]
    theirs = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    ).stdout.split()
    ours = [new_checkpoint_id() for _ in range(1000)]
    assert len(theirs) == 1000 and not set(theirs) & set(ours)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_does_not_repeat_the_parents_ids() -> None:
    new_checkpoint_id()  # make sure the generator has state to inherit
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(write_end, new_checkpoint_id().encode())
        os._exit(0)
    os.close(write_end)
    ours = new_checkpoint_id()
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as pipe:
        theirs = pipe.read().decode()
    assert uuid.UUID(theirs).version == 7 and theirs != ours
