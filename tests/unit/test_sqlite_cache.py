"""`engine.cache.sqlite.SqliteCache`, the twin of LangGraph's `langgraph.cache.sqlite`:
node results kept in a file, so a second process (here: a second cache on the same
file) is answered from them."""

from __future__ import annotations

import asyncio
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from engine import START, StateGraph
from engine.cache.sqlite import SqliteCache
from engine.func import entrypoint, task
from engine.types import CachePolicy


class State(TypedDict):
    seen: Annotated[list[str], operator.add]


def _graph(cache: SqliteCache, calls: list[str], ttl: int | None = None) -> Any:
    def slow(state: State) -> dict[str, Any]:
        calls.append("slow")
        return {"seen": [f"slow {len(calls)}"]}

    builder = StateGraph(State)
    builder.add_node("slow", slow, cache_policy=CachePolicy(ttl=ttl))
    builder.add_edge(START, "slow")
    return builder.compile(cache=cache)


def test_a_second_cache_on_the_file_answers_from_it(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.db")
    calls: list[str] = []
    first = _graph(SqliteCache(path=path), calls).invoke({"seen": []})
    second = _graph(SqliteCache(path=path), calls).invoke({"seen": []})
    assert first == second == {"seen": ["slow 1"]}
    assert calls == ["slow"]


def test_an_entry_expires(tmp_path: Path) -> None:
    cache = SqliteCache(path=str(tmp_path / "cache.db"))
    cache.set({(("a",), "k"): ("v", 0), (("a",), "kept"): ("w", None)})
    assert cache.get([(("a",), "k"), (("a",), "kept")]) == {(("a",), "kept"): "w"}
    calls: list[str] = []
    graph = _graph(cache, calls, ttl=0)
    graph.invoke({"seen": []})
    graph.invoke({"seen": []})
    assert calls == ["slow", "slow"]


def test_values_round_trip_and_namespaces_stay_apart(tmp_path: Path) -> None:
    cache = SqliteCache(path=str(tmp_path / "cache.db"))
    value = {"t": (1, 2), "b": b"\x00", "s": {3}}
    cache.set({(("a,b",), "k"): (value, None), (("a", "b"), "k"): ("other", None)})
    # A tuple comes back as a list, as from LangGraph's caches (the same serializer).
    assert cache.get([(("a,b",), "k"), (("a", "b"), "k"), (("c",), "k")]) == {
        (("a,b",), "k"): {**value, "t": [1, 2]},
        (("a", "b"), "k"): "other",
    }
    cache.clear([("a,b",)])
    assert cache.get([(("a,b",), "k"), (("a", "b"), "k")]) == {(("a", "b"), "k"): "other"}
    cache.clear()
    assert cache.get([(("a", "b"), "k")]) == {}
    assert cache.get([]) == {}


def test_a_value_it_cannot_write_leaves_the_batch_unwritten(tmp_path: Path) -> None:
    cache = SqliteCache(path=str(tmp_path / "cache.db"))
    with pytest.raises(TypeError):
        cache.set({(("a",), "ok"): ("v", None), (("a",), "bad"): (object(), None)})
    assert cache.get([(("a",), "ok")]) == {}


def test_a_cached_task_of_an_entrypoint_async(tmp_path: Path) -> None:
    calls: list[int] = []

    @task(cache_policy=CachePolicy())
    async def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    def make() -> Any:
        @entrypoint(cache=SqliteCache(path=str(tmp_path / "cache.db")))
        async def main(x: int) -> int:
            return await double(x) + await double(x + 1)

        return main

    assert asyncio.run(make().ainvoke(1)) == 6
    assert asyncio.run(make().ainvoke(1)) == 6
    assert calls == [1, 2]
