"""The item cache of the SQL saver: rows by thread and epoch, and their prepared elements."""

from engine.checkpoint.serde import Prepared
from engine.checkpoint.sql.logs import ALL_TEXT, ItemCache


def test_a_log_is_all_text_only_while_every_cached_row_is_prepared_as_text() -> None:
    cache = ItemCache(budget=1_000)
    key = (1, 0, "", "messages")
    cache.add(*key, {0: (2, '{"a":1},\n{"b":2}'), 2: (1, '{"c":3}')})
    assert not cache.all_text(*key)  # nothing prepared yet
    cache.keep_prepared(*key, {0: ALL_TEXT})
    assert not cache.all_text(*key)  # row 2 is not
    cache.keep_prepared(*key, {2: ALL_TEXT})
    assert cache.all_text(*key)
    cache.add(*key, {3: (1, '{"$t":"msg","v":{"content":"x","type":"ai"}}')})
    assert not cache.all_text(*key)  # a new row, not prepared
    cache.keep_prepared(*key, {3: [Prepared(None, 1)]})
    assert not cache.all_text(*key)  # and not text
    assert cache.prepared(*key) == {0: ALL_TEXT, 2: ALL_TEXT, 3: [Prepared(None, 1)]}


def test_prepared_rows_count_against_the_budget_and_go_with_their_thread() -> None:
    cache = ItemCache(budget=150)
    first, second = (1, 0, "", "m"), (2, 0, "", "m")
    cache.add(*first, {0: (1, "x" * 40)})
    cache.keep_prepared(*first, {0: ALL_TEXT, 1: ALL_TEXT})  # row 1 is not cached: not kept
    assert cache.prepared(*first) == {0: ALL_TEXT}  # 40 + 2 x 40 so far
    cache.add(*second, {0: (1, "y" * 40)})  # 120 + 40 > 150: the first thread goes
    assert cache.get(*first) == {} and cache.prepared(*first) == {}
    assert cache.get(*second) == {0: (1, "y" * 40)}
