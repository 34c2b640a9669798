"""Item logs: the positions of a list version, and which of them still need preparing."""

from engine.checkpoint.serde import Prepared
from engine.checkpoint.sql.logs import UNPREPARED, pick, place, unprepared


def test_prepared_elements_are_placed_and_picked_by_position() -> None:
    elements: list[object] = []
    assert place(elements, 5, [Prepared(None, 5)]) == 6  # slots grown, padded
    assert place(elements, 0, [Prepared(None, 0), Prepared(None, 1)]) == 0
    assert elements[2] is UNPREPARED and elements[4] is UNPREPARED
    assert pick(elements, [[0, 1], [5, 6]]) == [Prepared(None, 0), Prepared(None, 5)]
    assert pick(elements, [[0, 2]]) == [Prepared(None, 0), Prepared(None, 1)]


def test_the_rows_to_prepare_start_at_the_first_position_not_prepared() -> None:
    p, u = Prepared(None, 1), UNPREPARED
    assert unprepared([], [[0, 3], [12, 13]]) == [[0, 3], [12, 13]]
    assert unprepared([p, p, p], [[0, 5]]) == [[3, 5]]  # a turn's new rows only
    assert unprepared([p, p, p], [[0, 3]]) == []
    assert unprepared([p, u, u, p], [[0, 4], [6, 8]]) == [[1, 4], [6, 8]]
    assert unprepared([p, p, p, p], [[0, 2], [3, 4]]) == []
