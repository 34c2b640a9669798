"""Save records: a write's task stored as the node whose pull task it is."""

from __future__ import annotations

import pytest

from engine.checkpoint.ids import new_checkpoint_id, pull_task_id, task_id
from engine.checkpoint.sql.records import (
    CHAINED,
    FORMAT,
    NAMED_TASKS,
    CheckpointEntry,
    Record,
    decode,
    encode,
)
from engine.constants import PUSH


def _checkpoint(
    checkpoint_id: str, step: int, seen: list[str], updated: list[str]
) -> CheckpointEntry:
    return CheckpointEntry(
        "",
        checkpoint_id,
        None,
        {"source": "loop", "step": step},
        1,
        "ts",
        {},
        {n: {} for n in seen},
        updated,
        None,
        {},
    )


def test_a_pull_task_s_id_is_stored_as_its_node_and_read_back() -> None:
    first, second = new_checkpoint_id(), new_checkpoint_id()
    start = pull_task_id(first, "", 4, "__start__")
    reply = pull_task_id(second, "", 5, "reply")  # a node that has not run before
    record = Record(
        [
            _checkpoint(first, 3, [], ["__start__"]),
            _checkpoint(second, 4, ["__start__"], ["branch:to:reply"]),
        ],
        [
            ("", first, start, 0, "messages", "", '["a"]'),
            ("", first, start, 1, "branch:to:reply", "", "null"),
            ("", second, reply, 0, "messages", "", '["b"]'),
        ],
    )
    encoded = encode(record)
    assert encoded.data[0] == FORMAT + NAMED_TASKS
    assert start.encode() not in encoded.stream and reply.encode() not in encoded.stream
    assert decode(encoded.data).record == record
    chained = encode(record, encoded.stream)
    assert chained.data[0] == FORMAT + CHAINED + NAMED_TASKS
    assert decode(chained.data, encoded.stream).record == record


def test_other_task_ids_are_stored_as_they_are() -> None:
    here, before = new_checkpoint_id(), new_checkpoint_id()
    others = [
        "a task id of another engine",
        task_id(here, "", 1, "node", PUSH, 0),  # a Send's
        pull_task_id(here, "", 2, "node"),  # of another step than the checkpoint's next
        pull_task_id(here, "", 1, "elsewhere"),  # of a node the checkpoint does not name
        pull_task_id(before, "", 1, "node"),  # to a checkpoint of an earlier record
    ]
    record = Record(
        [_checkpoint(here, 0, ["node"], ["branch:to:node"])],
        [("", before if n == 4 else here, tid, 0, "x", "", "1") for n, tid in enumerate(others)],
    )
    encoded = encode(record)
    assert encoded.data[0] == FORMAT
    assert decode(encoded.data).record == record


def test_a_record_of_a_later_format_is_refused() -> None:
    data = bytes([FORMAT + CHAINED + NAMED_TASKS + 2]) + encode(Record()).data[1:]
    with pytest.raises(ValueError, match="unknown format"):
        decode(data)
