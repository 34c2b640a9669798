"""The saver's cache of journals: bounded in characters and in threads, least recently
used first, and kept at a cost that does not grow with the threads it holds."""

from __future__ import annotations

from engine.checkpoint.sql.journal import Journal, Journals


def journal(size: int) -> Journal:
    made = Journal(key=1, epoch=0)
    made.size = size
    return made


def test_the_least_recently_used_go_first_when_the_text_is_over_budget() -> None:
    cache = Journals(budget=100, threads=10)
    a, b = journal(40), journal(40)
    cache.keep("a", a)
    cache.keep("b", b)
    assert cache.get("a") is a  # now the most recent
    cache.keep("c", journal(40))
    assert cache.get("b") is None and cache.get("a") is a


def test_a_journal_s_growth_counts_from_its_next_keep() -> None:
    cache = Journals(budget=100, threads=10)
    a = journal(10)
    cache.keep("a", a)
    cache.keep("b", journal(10))
    a.size = 85  # its saves grew it
    cache.keep("c", journal(10))  # 30 counted: a's growth not yet
    cache.keep("a", a)  # its next read: 105
    assert cache.get("b") is None  # the least recently used
    assert cache.get("c") is not None and cache.get("a") is a


def test_a_dropped_journal_frees_its_share() -> None:
    cache = Journals(budget=100, threads=10)
    cache.keep("a", journal(60))
    cache.drop("a")
    cache.drop("a")  # twice: no harm
    cache.keep("b", journal(60))
    assert cache.get("b") is not None


def test_the_one_just_kept_stays_however_big() -> None:
    cache = Journals(budget=100, threads=10)
    cache.keep("a", journal(10))
    big = journal(500)
    cache.keep("big", big)
    assert cache.get("big") is big and cache.get("a") is None


def test_at_most_so_many_threads() -> None:
    cache = Journals(budget=10**9, threads=2)
    for name in "abc":
        cache.keep(name, journal(1))
    assert cache.get("a") is None and cache.get("b") is not None
