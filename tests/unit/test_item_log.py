"""Item logs: the positions of a list version, in which namespaces' logs, and which of them
still need preparing."""

from dataclasses import replace

from engine.checkpoint.serde.jsonplus import Prepared
from engine.checkpoint.sql.item_log import (
    UNPREPARED,
    at_positions,
    enclosing,
    extend,
    pieces,
    place_prepared,
    rebase,
    truncate,
    unprepared,
)
from engine.checkpoint.sql.records import (
    FORMAT,
    FORMAT_SHARING,
    CheckpointEntry,
    Record,
    Shared,
    decode,
    encode,
)


def test_prepared_elements_are_placed_and_picked_by_position() -> None:
    elements: list[object] = []
    assert place_prepared(elements, 5, [Prepared(None, 5, 5)]) == 6  # slots grown, padded
    assert place_prepared(elements, 0, [Prepared(None, 0, 0), Prepared(None, 1, 1)]) == 0
    assert elements[2] is UNPREPARED and elements[4] is UNPREPARED
    assert at_positions(elements, [[0, 1], [5, 6]]) == [Prepared(None, 0, 0), Prepared(None, 5, 5)]
    assert at_positions(elements, [[0, 2]]) == [Prepared(None, 0, 0), Prepared(None, 1, 1)]


def test_the_rows_to_prepare_start_at_the_first_position_not_prepared() -> None:
    p, u = Prepared(None, 1, 1), UNPREPARED
    assert unprepared([], [[0, 3], [12, 13]]) == [[0, 3], [12, 13]]
    assert unprepared([p, p, p], [[0, 5]]) == [[3, 5]]  # a turn's new rows only
    assert unprepared([p, p, p], [[0, 3]]) == []
    assert unprepared([p, u, u, p], [[0, 4], [6, 8]]) == [[1, 4], [6, 8]]
    assert unprepared([p, p, p, p], [[0, 2], [3, 4]]) == []


def test_a_version_s_ranges_may_be_in_an_enclosing_namespace_s_log() -> None:
    segments = [[0, 5, ""], [3, 4]]  # a subgraph's: its graph's history, then its own row
    assert pieces(segments, "a:1") == [("", [[0, 5]]), ("a:1", [[3, 4]])]
    assert pieces([[0, 2], [4, 6]], "") == [("", [[0, 2], [4, 6]])]
    assert rebase(segments, "a:1", "") == [[0, 5], [3, 4, "a:1"]]
    assert rebase([[0, 5]], "", "a:1|b:2") == [[0, 5, ""]]
    assert truncate(segments, 6) == segments
    assert truncate(segments, 3) == [[0, 3, ""]]
    assert extend([[0, 5, ""]], 5, 2) == [[0, 5, ""], [5, 7]]  # another log's: kept apart
    assert extend([[0, 5]], 5, 2) == [[0, 7]]
    assert enclosing("a:1|b:2") == "a:1" and enclosing("a:1") == ""


def test_only_a_record_that_refers_to_other_namespaces_takes_the_sharing_format() -> None:
    plain = Record(
        [CheckpointEntry("", "1", None, {}, 1, "ts", {"m": 1}, {}, None, None, {"m": [[0, 2]]})],
        [("", "1", "task", 0, "m", "", '["a"]')],
        [("", "m", 0, 2, '"a",\n"b"')],
    )
    assert encode(plain).data[0] == FORMAT and decode(encode(plain).data).record == plain
    shared = Shared("m", [[0, 2, ""]])
    sharing = Record(
        [replace(plain.checkpoints[0], ns="a:1", stored={"m": [[0, 2, ""], [0, 1]]})],
        [("a:1", "1", "task", 0, "m", "", ("[", shared, ',"c"]'))],
        [("a:1", "m", 0, 1, '"c"')],
        [("a:1", "__start__", "1", ('{"m":[', shared, "]}"))],
    )
    data = encode(sharing).data
    assert data[0] == FORMAT_SHARING and decode(data).record == sharing
