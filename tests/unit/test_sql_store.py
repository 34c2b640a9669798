"""The SQL store under LangGraph's names (`engine.store.postgres`, `.postgres.aio`,
`engine.store.sqlite`, `.sqlite.aio`): the same answers as LangGraph's own
`PostgresStore` (a dev-only oracle, on the same PostgreSQL server) for one script of
puts, gets, searches, namespace listings and deletes; items that expire; a graph that
remembers across runs; and bad input refused before anything is written."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.store import base as langgraph_ops
from langgraph.store.memory import InMemoryStore as LangGraphMemoryStore
from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore
from sqlalchemy import inspect

from alembic import command
from engine.checkpoint.sql.migrations import run_alembic
from engine.graph import START, StateGraph
from engine.runtime import Runtime
from engine.store import base as engine_ops
from engine.store.base import BaseStore, Item, PutOp, SearchOp
from engine.store.postgres import PostgresStore
from engine.store.postgres.aio import AsyncPostgresStore
from engine.store.sql import SQLStore
from engine.store.sql.models import STORE
from engine.store.sqlite import SqliteStore
from engine.store.sqlite.aio import AsyncSqliteStore
from tests.helpers import eventually
from tests.pg import create_database
from tests.unit.test_store import INDEXED, aletters, letters


def script(store: BaseStore, ops: Any = engine_ops) -> list[Any]:
    """What a program sees of a store, step by step: items as (namespace, key, value).
    `ops` is the module of the store's own op classes."""
    seen: list[Any] = []

    def items(found: list[Any]) -> list[Any]:
        return [(item.namespace, item.key, item.value) for item in found]

    def item(found: Item | None) -> Any:
        return None if found is None else (found.namespace, found.key, found.value)

    store.put(("users", "ann", "prefs"), "theme", {"color": "blue", "size": 3})
    store.put(("users", "ann", "memories"), "m1", {"text": "likes tea", "n": 1})
    store.put(("users", "bob", "memories"), "m1", {"text": "likes coffee", "n": 2})
    store.put(("users", "bob", "memories"), "m2", {"text": "has a cat", "n": 5, "tags": ["pet"]})
    store.put(("docs",), "readme", {"title": "Hello", "nested": {"a": {"b": 1}}})
    seen.append(item(store.get(("users", "ann", "prefs"), "theme")))
    seen.append(item(store.get(("users", "ann", "prefs"), "missing")))
    store.put(("users", "ann", "prefs"), "theme", {"color": "red", "size": 4})
    seen.append(item(store.get(("users", "ann", "prefs"), "theme")))
    seen.append(items(store.search(("users",))))
    seen.append(items(store.search(("users",), limit=2)))
    seen.append(items(store.search(("users",), limit=2, offset=1)))
    seen.append(items(store.search(("users", "bob"))))
    seen.append(items(store.search(("users", "bo"))))  # a label is matched whole
    seen.append(items(store.search((), filter={"n": 5})))
    seen.append(items(store.search(("users",), filter={"n": {"$gt": 1}})))
    seen.append(items(store.search(("users",), filter={"n": {"$lte": 2}})))
    seen.append(items(store.search(("users",), filter={"text": {"$ne": "likes tea"}})))
    seen.append(items(store.search(("users",), filter={"text": "likes tea", "n": 1})))
    seen.append(items(store.search(("users",), query="a query, with no index")))
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("users",)))
    seen.append(store.list_namespaces(prefix=("users", "*", "memories")))
    seen.append(store.list_namespaces(suffix=("memories",)))
    seen.append(store.list_namespaces(prefix=("users",), max_depth=2))
    seen.append(store.list_namespaces(max_depth=1))
    seen.append(store.list_namespaces(limit=2, offset=1))
    seen.append(store.list_namespaces(prefix=("nobody",)))
    # LIKE's own characters in labels are matched as themselves.
    store.put(("100%", "x_y"), "k", {"v": 1})
    store.put(("100x", "xzy"), "k", {"v": 2})
    seen.append(items(store.search(("100%",))))
    seen.append(items(store.search(("100%", "x_y"))))
    seen.append(store.list_namespaces(prefix=("100%",)))
    store.delete(("100%", "x_y"), "k")
    store.delete(("100x", "xzy"), "k")
    # A batch's reads see the store as it was before its puts; the last put to a key wins.
    results = store.batch(
        [
            ops.PutOp(("docs",), "readme", {"title": "Changed"}),
            ops.GetOp(("docs",), "readme"),
            ops.PutOp(("docs",), "new", {"v": 1}),
            ops.PutOp(("docs",), "new", {"v": 2}),
            ops.SearchOp(("docs",)),
        ]
    )
    seen.append([result if result is None else item(result) for result in results[:4]])
    seen.append(items(results[4]))
    seen.append(item(store.get(("docs",), "readme")))
    seen.append(item(store.get(("docs",), "new")))
    store.delete(("users", "bob", "memories"), "m1")
    store.delete(("users", "bob", "memories"), "never-there")
    seen.append(items(store.search(("users", "bob"))))
    store.delete(("users", "bob", "memories"), "m2")
    seen.append(store.list_namespaces(prefix=("users",)))
    return seen


@pytest.fixture(scope="module")
def oracle_answers(postgres_url: str) -> list[Any]:
    url = create_database(postgres_url, "langgraph_store_oracle")
    with LangGraphPostgresStore.from_conn_string(url) as store:
        store.setup()
        return script(store, langgraph_ops)


@pytest.fixture
def store_url(postgres_url: str) -> str:
    return create_database(postgres_url, "engine_store")


def test_postgres_store_answers_as_langgraphs(oracle_answers: list[Any], store_url: str) -> None:
    with PostgresStore.from_conn_string(store_url) as store:
        store.setup()
        assert script(store) == oracle_answers


def test_sqlite_store_answers_as_langgraphs_postgres_store(
    oracle_answers: list[Any], tmp_path: Path
) -> None:
    with SqliteStore.from_conn_string(str(tmp_path / "store.db")) as store:
        assert script(store) == oracle_answers


def test_async_stores_answer_as_the_sync_ones(
    oracle_answers: list[Any], store_url: str, tmp_path: Path
) -> None:
    # The script is sync: each async store runs it through a thread of its own.
    async def run(opened: Any) -> list[Any]:
        async with opened as store:
            await store.setup()
            return await asyncio.to_thread(script, _Synced(store, asyncio.get_running_loop()))

    assert asyncio.run(run(AsyncPostgresStore.from_conn_string(store_url))) == oracle_answers
    sqlite = AsyncSqliteStore.from_conn_string(str(tmp_path / "store.db"))
    assert asyncio.run(run(sqlite)) == oracle_answers


class _Synced(BaseStore):
    """An async store's `abatch`, called from a thread on the loop the store lives on."""

    def __init__(self, store: BaseStore, loop: asyncio.AbstractEventLoop) -> None:
        self.store, self.loop = store, loop

    def batch(self, ops: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(self.store.abatch(list(ops)), self.loop).result()

    async def abatch(self, ops: Any) -> Any:
        raise NotImplementedError


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore.from_conn_string(str(tmp_path / "store.db")) as store:
        yield store


def ranked(found: list[Any]) -> list[tuple[float | None, str]]:
    """Scores best first, each with its item's key; items of equal score (or none) in the
    order of their keys, as the stores order ties each their own way. The SQL store keeps
    float32 vectors, as pgvector does."""
    return sorted(
        ((None if r.score is None else round(r.score, 5), r.key) for r in found),
        key=lambda pair: (pair[0] is None, -(pair[0] or 0), pair[1]),
    )


@pytest.mark.parametrize("fields", [None, ["text"], ["tags[*]"], ["text", "info.c"]])
def test_semantic_search_ranks_as_langgraphs_store(
    fields: list[str] | None, tmp_path: Path, store_url: str
) -> None:
    index: Any = {"dims": 5, "embed": letters, "fields": fields}
    theirs = LangGraphMemoryStore(index=index)
    with (
        SqliteStore.from_conn_string(str(tmp_path / "s.db"), index=index) as sqlite,
        PostgresStore.from_conn_string(store_url, index=index) as postgres,
    ):
        postgres.setup()
        for store in (theirs, sqlite, postgres):
            for namespace, key, value in INDEXED:
                store.put(namespace, key, value)
            store.put(("mem", "b"), "6", {"text": "eeee"}, index=False)
            store.put(("mem", "b"), "7", {"text": "xx", "other": "ooo"}, index=["other"])
        for query in ["banana", "ooo", "eee", "u"]:
            expected = ranked(theirs.search(("mem",), query=query, limit=20))
            for ours in (sqlite, postgres):
                assert ranked(ours.search(("mem",), query=query, limit=20)) == expected
                page = ours.search(("mem",), query=query, limit=2, offset=1)
                assert ranked(page) == ranked(ours.search(("mem",), query=query, limit=20)[1:3])
                assert [r.key for r in ours.search(("mem", "a"), query=query)] == [
                    r.key for r in ours.search(("mem",), query=query, limit=20) if r.key in "12"
                ]


def test_async_embeddings_and_a_search_without_query(tmp_path: Path) -> None:
    async def run() -> None:
        index: Any = {"dims": 5, "embed": aletters, "fields": ["text"]}
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "s.db"), index=index) as s:
            await s.aput(("m",), "a", {"text": "aaaa"})
            await s.aput(("m",), "e", {"text": "eeee"})
            best = await s.asearch(("m",), query="eeee", limit=1)
            assert [(r.key, round(r.score or 0, 5)) for r in best] == [("e", 1.0)]
            plain = await s.asearch(("m",))
            assert [(r.key, r.score) for r in plain] == [("e", None), ("a", None)]
        with (
            SqliteStore.from_conn_string(str(tmp_path / "s.db"), index=index) as sync,
            pytest.raises(TypeError, match="embed function is async"),
        ):
            sync.search(("m",), query="eeee")

    asyncio.run(run())


def test_items_keep_their_created_at_and_values_read_back_as_json(
    sqlite_store: SqliteStore,
) -> None:
    import datetime
    import uuid

    when, ident = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC), uuid.uuid4()
    sqlite_store.put(("a",), "k", {"when": when, "id": ident, "set": {1}})
    first = sqlite_store.get(("a",), "k")
    assert first is not None
    assert first.value == {"when": "2024-05-01T12:30:00+00:00", "id": str(ident), "set": [1]}
    assert first.created_at.tzinfo is not None
    sqlite_store.put(("a",), "k", {"v": 2})
    second = sqlite_store.get(("a",), "k")
    assert second is not None and second.value == {"v": 2}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at


def test_items_expire_and_a_read_gives_them_their_time_again(tmp_path: Path) -> None:
    async def run() -> None:
        ttl = {"default_ttl": 0.005, "refresh_on_read": True, "omit_expired": True}
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "s.db"), ttl=ttl) as store:
            await store.aput(("t",), "short", {"v": 1})  # the default: 0.3 s
            await store.aput(("t",), "kept", {"v": 2}, ttl=None)
            await store.aput(("t",), "long", {"v": 3}, ttl=10)
            assert [i.key for i in await store.asearch(("t",))] == ["long", "kept", "short"]

            async def gone() -> bool:
                return await store.aget(("t",), "short", refresh_ttl=False) is None

            await eventually(gone, "the item put with the default ttl to expire")
            assert {i.key for i in await store.asearch(("t",))} == {"kept", "long"}
            assert await store.sweep_ttl() == 1
            assert await store.sweep_ttl() == 0
            assert await store.alist_namespaces() == [("t",)]

    asyncio.run(run())


def test_without_omit_expired_an_expired_item_is_read_until_swept(tmp_path: Path) -> None:
    # LangGraph's default: omitting expired items is a TTL config option.
    with SqliteStore.from_conn_string(str(tmp_path / "s.db")) as store:
        store.put(("t",), "k", {"v": 1}, ttl=0.001)

        async def expired() -> bool:
            return bool(_rows(tmp_path / "s.db", "expires_at < CURRENT_TIMESTAMP"))

        asyncio.run(eventually(expired, "the item's time to run out"))
        assert store.get(("t",), "k", refresh_ttl=False) is not None
        assert store.list_namespaces() == [("t",)]
        assert store.sweep_ttl() == 1
        assert store.get(("t",), "k") is None and store.list_namespaces() == []


def test_a_refreshed_item_outlives_one_left_alone(tmp_path: Path) -> None:
    async def run() -> None:
        ttl = {"omit_expired": True}
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "s.db"), ttl=ttl) as store:
            await store.aput(("t",), "read", {"v": 1}, ttl=0.01)
            await store.aput(("t",), "unread", {"v": 2}, ttl=0.01)

            async def unread_gone() -> bool:
                # Reading "read" gives it its 0.6 s again, each time.
                assert await store.aget(("t",), "read") is not None
                return await store.aget(("t",), "unread", refresh_ttl=False) is None

            await eventually(unread_gone, "the unread item to expire", every=0.1)

    asyncio.run(run())


def test_the_sweeper_deletes_expired_items_until_stopped(tmp_path: Path) -> None:
    with SqliteStore.from_conn_string(str(tmp_path / "s.db")) as store:
        store.put(("t",), "k", {"v": 1}, ttl=0.001)
        finished = store.start_ttl_sweeper(sweep_interval_minutes=0.001)
        assert store.start_ttl_sweeper().done()  # one runs already

        async def swept() -> bool:
            return store.sweep_ttl() == 0 and not _rows(tmp_path / "s.db")

        asyncio.run(eventually(swept, "the sweeper to delete the item"))
        assert store.stop_ttl_sweeper(timeout=10)
        assert finished.result(timeout=10) is None


def _rows(path: Path, where: str = "true") -> list[Any]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT key FROM engine_store_items WHERE {where}").fetchall()


class Visits(TypedDict):
    user: str
    count: int


def remember(state: Visits, runtime: Runtime) -> Visits:
    assert runtime.store is not None
    seen = runtime.store.get(("visits",), state["user"])
    count = (seen.value["count"] if seen else 0) + 1
    runtime.store.put(("visits",), state["user"], {"count": count})
    return {"user": state["user"], "count": count}


async def aremember(state: Visits, runtime: Runtime) -> Visits:
    assert runtime.store is not None
    seen = await runtime.store.aget(("visits",), state["user"])
    count = (seen.value["count"] if seen else 0) + 1
    await runtime.store.aput(("visits",), state["user"], {"count": count})
    return {"user": state["user"], "count": count}


def test_a_graph_remembers_across_runs_and_reopenings(tmp_path: Path, store_url: str) -> None:
    builder = StateGraph(Visits).add_node("remember", remember).add_edge(START, "remember")
    path = str(tmp_path / "memory.db")
    for expected in (1, 2):
        with SqliteStore.from_conn_string(path) as store:
            graph = builder.compile(store=store)
            assert graph.invoke({"user": "ann", "count": 0}) == {"user": "ann", "count": expected}
    with PostgresStore.from_conn_string(store_url) as store:
        store.setup()
        graph = builder.compile(store=store)
        for expected in (1, 2):
            assert graph.invoke({"user": "bob", "count": 0})["count"] == expected

    async def run() -> list[int]:
        builder = StateGraph(Visits).add_node("remember", aremember).add_edge(START, "remember")
        async with AsyncPostgresStore.from_conn_string(store_url) as store:
            graph = builder.compile(store=store)
            return [(await graph.ainvoke({"user": "bob", "count": 0}))["count"] for _ in "ab"]

    assert asyncio.run(run()) == [3, 4]


def test_a_sync_node_uses_an_async_store_of_an_async_run(tmp_path: Path, store_url: str) -> None:
    """Sync nodes of an async run run in worker threads: their sync calls are handed to
    the loop the store's connections belong to. On that loop's own thread they would
    block it, and are refused, naming the async methods; so is a sync `invoke`, whose
    loop is its own."""
    builder = StateGraph(Visits).add_node("remember", remember).add_edge(START, "remember")

    async def run(opened: Any) -> list[int]:
        async with opened as store:
            await store.setup()
            graph = builder.compile(store=store)
            counts = [(await graph.ainvoke({"user": "cy", "count": 0}))["count"] for _ in "ab"]
            with pytest.raises(RuntimeError, match="call its async methods"):
                store.get(("visits",), "cy")
            with pytest.raises(RuntimeError, match="belongs to the event loop it was opened"):
                graph.invoke({"user": "cy", "count": 0})
            return counts

    assert asyncio.run(run(AsyncPostgresStore.from_conn_string(store_url))) == [1, 2]
    sqlite = AsyncSqliteStore.from_conn_string(str(tmp_path / "s.db"))
    assert asyncio.run(run(sqlite)) == [1, 2]


def test_a_pooled_store_used_from_sync_code_keeps_working(tmp_path: Path) -> None:
    """`SQLStore.from_url` (a pooled engine) set up and then called from sync code only:
    each call runs on the thread's own loop, none waits for a loop that is not running."""
    store = SQLStore.from_url(f"sqlite:///{tmp_path / 's.db'}")
    asyncio.run(store.setup())
    seen: list[Any] = []

    def calls() -> None:
        for n in range(3):
            store.put(("a",), "k", {"v": n})
            seen.append(store.get(("a",), "k").value)  # type: ignore[union-attr]

    worker = threading.Thread(target=calls, daemon=True)
    worker.start()
    worker.join(30)
    assert seen == [{"v": 0}, {"v": 1}, {"v": 2}], "a sync call waited for an idle loop"
    asyncio.run(store.aclose())


def test_a_bad_op_fails_its_batch_before_anything_is_written(sqlite_store: SqliteStore) -> None:
    good = PutOp(("a",), "good", {"v": 1})
    with pytest.raises(TypeError, match=r"item 'bad' in namespace \('a',\) is not JSON"):
        sqlite_store.batch([good, PutOp(("a",), "bad", {"v": object()})])
    with pytest.raises(ValueError, match="ttl must be a number of minutes above 0"):
        sqlite_store.batch([good, PutOp(("a",), "bad", {"v": 1}, ttl=-1)])
    with pytest.raises(ValueError, match="limit and offset cannot be negative"):
        sqlite_store.batch([good, SearchOp(("a",), limit=-1)])
    with pytest.raises(TypeError, match="must be a dict"):
        sqlite_store.batch([good, PutOp(("a",), "bad", ["not", "a", "dict"])])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        sqlite_store.batch([good, PutOp(("a",), "k\x00", {"v": 1})])
    with pytest.raises(ValueError, match="take 2,049 bytes"):
        sqlite_store.batch([good, PutOp(("a",), "é" * 1024, {"v": 1})])
    assert sqlite_store.search(("a",)) == []


def test_the_longest_namespace_and_key_fit_postgresql(store_url: str) -> None:
    with PostgresStore.from_conn_string(store_url) as store:
        store.setup()
        namespace = ("n" * 500, "m" * 499)  # 1,000 bytes joined
        key = "".join(f"{i:04x}" for i in range(262))[:1048]  # 2,048 bytes in all
        store.put(namespace, key, {"v": 1})
        assert store.get(namespace, key) is not None


def test_options_it_does_not_support_are_refused(tmp_path: Path, store_url: str) -> None:
    path = str(tmp_path / "s.db")
    for index, error, match in [
        ({"dims": 5, "embed": letters, "distance_type": "l2"}, NotImplementedError, "cosine"),
        ({"dims": 5, "embed": letters, "ann_index_config": {}}, NotImplementedError, "pgvector"),
        ({"embed": letters}, ValueError, "needs dims"),
        ({"dims": 5, "embed": letters, "other": 1}, ValueError, r"support \['other'\]"),
    ]:
        with (
            pytest.raises(error, match=match),
            SqliteStore.from_conn_string(path, index=index),  # type: ignore[arg-type]
        ):
            pass
    with (
        pytest.raises(NotImplementedError, match="pipeline=True tunes"),
        PostgresStore.from_conn_string(store_url, pipeline=True),
    ):
        pass
    with (
        pytest.raises(NotImplementedError, match="pool_config= tunes"),
        PostgresStore.from_conn_string(store_url, pool_config={"max_size": 5}),
    ):
        pass
    with (
        pytest.raises(ValueError, match=r"unknown option\(s\) \['sweep_minutes'\]"),
        SqliteStore.from_conn_string(path, ttl={"sweep_minutes": 1}),  # type: ignore[typeddict-unknown-key]
    ):
        pass
    with pytest.raises(TypeError, match=r"SqliteStore.from_conn_string\(\.\.\.\)"):
        SqliteStore(object())  # type: ignore[arg-type]
    in_memory = SqliteStore(sqlite3.connect(":memory:"))  # a file of its own
    in_memory.put(("a",), "k", {"v": 1})
    assert in_memory.get(("a",), "k") is not None
    made = SqliteStore(sqlite3.connect(path))  # as LangGraph's: the same file, set up
    made.put(("a",), "k", {"v": 1})
    assert made.get(("a",), "k") is not None
    with (
        pytest.raises(ValueError, match="as a URL .* or as libpq's key=value pairs"),
        PostgresStore.from_conn_string("not a connection string"),
    ):
        pass


async def test_the_store_table_has_a_history_of_its_own(empty_database: str) -> None:
    """`setup()` makes exactly the table the model describes, recorded in its own
    version table; downgrading removes it; the checkpoint tables are not made."""
    store = SQLStore.from_url(empty_database)
    try:
        await store.setup()
        await store.setup()  # at head: changes nothing
        async with store.engine.connect() as conn:
            tables = set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
        assert tables == {"engine_store_items", STORE.version_table}
        await run_alembic(empty_database, command.check, history=STORE)  # no drift
        await run_alembic(empty_database, command.downgrade, "base", history=STORE)
        async with store.engine.connect() as conn:
            tables = set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
        assert tables == {STORE.version_table}
    finally:
        await store.aclose()
