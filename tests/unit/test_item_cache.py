"""The item cache of the SQL saver: rows by thread and epoch, and their prepared elements."""

from engine.checkpoint.serde import Prepared
from engine.checkpoint.sql.logs import UNPREPARED, ItemCache, pick, unprepared


def test_elements_are_kept_by_position_for_whole_cached_rows_only() -> None:
    cache = ItemCache(budget=1_000)
    key = (1, 0, "", "m")
    cache.add(*key, {0: (1, "0"), 1: (2, "1,\n2"), 5: (1, "5")})
    cache.keep_prepared(*key, 1, [Prepared(None, 1)])  # half of row 1: not kept
    cache.keep_prepared(*key, 3, [Prepared(None, 3)])  # no row 3
    assert cache.elements(*key) == []
    cache.keep_prepared(*key, 5, [Prepared(None, 5)])
    cache.keep_prepared(*key, 0, [Prepared(None, 0), Prepared(None, 1), Prepared(None, 2)])
    elements = cache.elements(*key)
    assert elements[:3] == [Prepared(None, 0), Prepared(None, 1), Prepared(None, 2)]
    assert elements[3] is UNPREPARED and elements[4] is UNPREPARED
    assert pick(elements, [[0, 1], [5, 6]]) == [Prepared(None, 0), Prepared(None, 5)]
    cache.keep_prepared(*key, 5, [Prepared(None, "again")])  # prepared once only
    assert elements[5] == Prepared(None, 5)


def test_prepared_rows_count_against_the_budget_and_go_with_their_thread() -> None:
    cache = ItemCache(budget=150)
    first, second = (1, 0, "", "m"), (2, 0, "", "m")
    cache.add(*first, {0: (1, "x" * 40)})
    cache.keep_prepared(*first, 0, ["x" * 40])  # 40 + 2 x 40 + 8 (its slot) so far
    assert cache.elements(*first) == ["x" * 40]
    cache.add(*second, {0: (1, "y" * 40)})  # 120 + 40 > 150: the first thread goes
    assert cache.get(*first) == {} and cache.elements(*first) == []
    assert cache.get(*second) == {0: (1, "y" * 40)}


def test_the_slots_before_a_log_s_first_kept_row_count_against_the_budget() -> None:
    cache = ItemCache(budget=10_000)
    key = (1, 0, "", "m")  # a list written out whole far into its log, after many edits
    cache.add(*key, {2_000: (1, "z")})
    cache.keep_prepared(*key, 2_000, ["z"])  # 2,001 slots of 8 bytes: over the budget
    assert cache.get(*key) == {} and cache.elements(*key) == []


def test_the_rows_to_prepare_start_at_the_first_position_not_prepared() -> None:
    p, u = Prepared(None, 1), UNPREPARED
    assert unprepared([], [[0, 3], [12, 13]]) == [[0, 3], [12, 13]]
    assert unprepared([p, p, p], [[0, 5]]) == [[3, 5]]  # a turn's new rows only
    assert unprepared([p, p, p], [[0, 3]]) == []
    assert unprepared([p, u, u, p], [[0, 4], [6, 8]]) == [[1, 4], [6, 8]]
    assert unprepared([p, p, p, p], [[0, 2], [3, 4]]) == []
