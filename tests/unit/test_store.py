"""The engine's store against LangGraph's: the same calls on both stores give the same
results (timestamps aside), sync and async; then our errors and deliberate differences."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.embeddings.fake import DeterministicFakeEmbedding
from langgraph.store import base as lg_base
from langgraph.store.base import embed as lg_embed
from langgraph.store.memory import InMemoryStore as LangGraphStore

from engine.store import base as our_base
from engine.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from engine.store.memory import InMemoryStore

MODES = ["sync", "async"]


async def call(store: Any, mode: str, name: str, *args: Any, **kwargs: Any) -> Any:
    """`store.name(...)`, or its async twin `store.aname(...)`."""
    if mode == "sync":
        return getattr(store, name)(*args, **kwargs)
    return await getattr(store, "a" + name)(*args, **kwargs)


def plain(result: Any) -> Any:
    """A result without timestamps, comparable across the two implementations."""
    if isinstance(result, list):
        return [plain(r) for r in result]
    if isinstance(result, our_base.Item | lg_base.Item):
        score = getattr(result, "score", "no score")
        if isinstance(score, float):
            score = round(score, 9)
        return (type(result).__name__, result.namespace, result.key, result.value, score)
    return result


class Both:
    """An engine store and a LangGraph store driven by the same calls."""

    def __init__(self, mode: str = "sync", **config: Any) -> None:
        self.mode = mode
        self.ours = InMemoryStore(**config)
        self.theirs = LangGraphStore(**config)

    async def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        ours = await call(self.ours, self.mode, name, *args, **kwargs)
        theirs = await call(self.theirs, self.mode, name, *args, **kwargs)
        assert plain(ours) == plain(theirs), (name, args, kwargs)
        return ours

    async def batch(self, ops: list[Any]) -> list[Any]:
        """Our ops on our store, the same ops rebuilt from LangGraph's classes on theirs."""
        ours = await call(self.ours, self.mode, "batch", ops)
        theirs = await call(self.theirs, self.mode, "batch", [_langgraph_op(op) for op in ops])
        assert plain(ours) == plain(theirs)
        return ours


def _langgraph_op(op: Any) -> Any:
    if isinstance(op, ListNamespacesOp):
        conditions = tuple(lg_base.MatchCondition(*c) for c in op.match_conditions or ())
        return lg_base.ListNamespacesOp(conditions, *op[1:])
    return getattr(lg_base, type(op).__name__)(*op)


DOCS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("users", "alice", "memories"), "m1", {"text": "likes tea", "n": 3, "tags": ["a", "b"]}),
    (("users", "alice", "memories"), "m2", {"text": "lives in Oslo", "n": 7, "tags": ["b"]}),
    (("users", "bob", "memories"), "m1", {"text": "plays chess", "n": 1, "meta": {"k": 1}}),
    (("users", "bob", "prefs"), "theme", {"text": "dark", "n": 10, "meta": {"k": 2}}),
    (("docs",), "readme", {"text": "hello", "n": 5, "tags": ["a"]}),
    (("users", "alice", "memories"), "m3", {"text": "owns a cat", "n": 5.5, "flag": True}),
]


async def filled(mode: str = "sync", **config: Any) -> Both:
    both = Both(mode, **config)
    for namespace, key, value in DOCS:
        await both("put", namespace, key, value)
    return both


@pytest.mark.parametrize("mode", MODES)
async def test_put_get_replace_delete(mode: str) -> None:
    both = await filled(mode)
    await both("get", ("users", "alice", "memories"), "m2")
    await both("get", ("users", "alice", "memories"), "missing")
    await both("put", ("users", "alice", "memories"), "m2", {"text": "moved to Rome"})
    item = await both("get", ("users", "alice", "memories"), "m2")
    assert isinstance(item, Item) and item.value == {"text": "moved to Rome"}
    await both("delete", ("users", "alice", "memories"), "m2")
    assert await both("get", ("users", "alice", "memories"), "m2") is None
    await both("delete", ("users", "nobody"), "x")
    await both("search", ("users",))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("prefix", "limit", "offset"),
    [
        ((), 10, 0),
        ((), 2, 0),
        ((), 2, 3),
        ((), 10, 6),
        ((), 0, 0),
        (("users",), 3, 1),
        (("users", "alice"), 10, 0),
        (("users", "alice", "memories"), 1, 2),
        (("users", "al"), 10, 0),
        (("nothing",), 10, 0),
    ],
)
async def test_search_order_and_pages(
    mode: str, prefix: tuple[str, ...], limit: int, offset: int
) -> None:
    both = await filled(mode)
    results = await both("search", prefix, limit=limit, offset=offset)
    assert all(isinstance(r, SearchItem) and r.score is None for r in results)


@pytest.mark.parametrize(
    "filter",
    [
        {"n": 5},
        {"n": 5.5},
        {"text": "dark"},
        {"flag": True},
        {"tags": ["b"]},
        {"tags": ["a", "b"]},
        {"meta": {"k": 2}},
        {"n": {"$eq": 7}},
        {"n": {"$ne": 7}},
        {"n": {"$gt": 5}},
        {"n": {"$gte": 5}},
        {"n": {"$lt": 5}},
        {"n": {"$lte": 5}},
        {"n": {"$gt": 1, "$lt": 10}},
        {"n": {"$gte": "5"}},
        {"n": {"$gt": 2}, "text": "likes tea"},
        {"missing": None},
        {"text": {"$ne": "dark"}},
    ],
)
async def test_search_filters(filter: dict[str, Any]) -> None:
    both = await filled()
    await both("search", (), filter=filter)
    await both("search", ("users",), filter=filter, limit=2, offset=1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"prefix": ("users",)},
        {"prefix": ("users", "*", "memories")},
        {"suffix": ("memories",)},
        {"suffix": ("*", "prefs")},
        {"prefix": ("users",), "suffix": ("memories",)},
        {"prefix": ("users", "alice", "memories", "deeper")},
        {"max_depth": 1},
        {"max_depth": 2},
        {"max_depth": 2, "prefix": ("users",)},
        {"limit": 2},
        {"limit": 2, "offset": 1},
        {"offset": 10},
    ],
)
async def test_list_namespaces(mode: str, kwargs: dict[str, Any]) -> None:
    both = await filled(mode)
    await both.ours.aput(("users", "carol", "memories", "old"), "x", {"text": "deep"})
    await both.theirs.aput(("users", "carol", "memories", "old"), "x", {"text": "deep"})
    await both("list_namespaces", **kwargs)


@pytest.mark.parametrize("mode", MODES)
async def test_batch_reads_before_writes_and_last_put_wins(mode: str) -> None:
    both = await filled(mode)
    ns = ("users", "alice", "memories")
    results = await both.batch(
        [
            PutOp(ns, "m1", {"text": "first"}),
            GetOp(ns, "m1"),
            PutOp(ns, "new", {"text": "a"}),
            SearchOp(ns, {"n": {"$gt": 0}}, 5, 0),
            PutOp(ns, "m1", {"text": "second"}),
            ListNamespacesOp((MatchCondition("suffix", ("memories",)),), None, 10, 0),
            PutOp(ns, "m2", None),
            GetOp(ns, "new"),
        ]
    )
    assert results[1].value["text"] == "likes tea"  # the store before the batch
    assert results[7] is None
    await both("search", ns)


def letters(texts: Sequence[str]) -> list[list[float]]:
    """A tiny embedding: how often each vowel occurs, so similarity is predictable."""
    return [[float(text.lower().count(v)) + 0.1 * len(text) for v in "aeiou"] for text in texts]


async def aletters(texts: Sequence[str]) -> list[list[float]]:
    return letters(texts)


INDEXED: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("mem", "a"), "1", {"text": "banana bread", "tags": ["oat", "rye"], "info": {"c": "eee"}}),
    (("mem", "a"), "2", {"text": "ice cube", "tags": ["kiwi"], "info": {"c": "ooo"}}),
    (("mem", "b"), "3", {"text": "you too", "tags": [], "info": {"c": "a"}}),
    (("mem", "b"), "4", {"title": "no text here"}),
    (("mem", "b"), "5", {"text": "aaaa", "info": {"c": None}}),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "fields",
    [None, ["$"], ["text"], ["tags[*]"], ["info.c"], ["text", "tags[*]"], ["tags[0]"]],
)
async def test_semantic_search(mode: str, fields: list[str] | None) -> None:
    embed = letters if mode == "sync" else aletters
    both = Both(mode, index={"dims": 5, "embed": embed, "fields": fields})
    for namespace, key, value in INDEXED:
        await both("put", namespace, key, value)
    for query in ["banana", "ooo", "eee", "u"]:
        results = await both("search", ("mem",), query=query)
        await both("search", ("mem",), query=query, limit=2)
        await both("search", ("mem",), query=query, limit=2, offset=1)
        await both("search", ("mem", "a"), query=query, filter={"tags": ["kiwi"]})
        scores = [r.score for r in results if r.score is not None]
        assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode", MODES)
async def test_semantic_search_per_put_index(mode: str) -> None:
    both = Both(mode, index={"dims": 5, "embed": letters, "fields": ["text"]})
    await both("put", ("m",), "1", {"text": "aaaa", "other": "eeee"}, index=["other"])
    await both("put", ("m",), "2", {"text": "eeee"}, index=False)
    await both("put", ("m",), "3", {"text": "eee"})
    await both("put", ("m",), "4", {"text": "ooo", "x": {"y": "aaa"}}, index=["text", "x.y"])
    for query in ["eeee", "aaa", "ooo"]:
        await both("search", ("m",), query=query)
        await both("search", ("m",), query=query, limit=3)


async def test_semantic_search_with_a_langchain_embeddings_model() -> None:
    both = Both(index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})
    for namespace, key, value in INDEXED:
        both.ours.put(namespace, key, value)
        both.theirs.put(namespace, key, value)
    await both("search", ("mem",), query="banana bread")
    await both("search", ("mem",), query="aaaa", limit=1)
    both.mode = "async"
    await both("search", ("mem",), query="you too")
    whole_value = json.dumps(INDEXED[0][2], sort_keys=True)  # the text "$" embeds
    best = both.ours.search(("mem",), query=whole_value, limit=1)[0]
    assert best.key == "1" and best.score == pytest.approx(1.0)


async def test_a_text_shared_by_items_is_embedded_once_per_batch() -> None:
    seen: list[list[str]] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        seen.append(list(texts))
        return letters(texts)

    store = InMemoryStore(index={"dims": 5, "embed": embed, "fields": ["t"]})
    store.batch([PutOp(("a",), "1", {"t": "same"}), PutOp(("a",), "2", {"t": "same"})])
    assert seen == [["same"]]
    assert [r.score for r in store.search(("a",), query="same")] == [
        pytest.approx(1.0),
        pytest.approx(1.0),
    ]


@pytest.mark.parametrize(
    "path",
    [
        "$",
        "",
        "text",
        "info.c",
        "tags",
        "tags[*]",
        "tags[0]",
        "tags[-1]",
        "tags[5]",
        "list[*].name",
        "list[1].name",
        "*",
        "info.*",
        "{text,info.c}",
        "{text, n}",
        "n",
        "flag",
        "none",
        "missing.deeper",
        "list[*].{name,n}",
    ],
)
def test_text_at_path_matches_langgraph(path: str) -> None:
    value = {
        "text": "hi",
        "n": 2.5,
        "flag": True,
        "none": None,
        "tags": ["x", "y", 3],
        "info": {"c": "see", "d": [1, 2]},
        "list": [{"name": "a", "n": 1}, {"name": "ü"}],
    }
    assert our_base.tokenize_path(path) == lg_embed.tokenize_path(path)
    assert our_base.get_text_at_path(value, path) == lg_embed.get_text_at_path(value, path)


BAD_NAMESPACES: list[tuple[tuple[Any, ...], str]] = [
    ((), "Namespace cannot be empty"),
    (("a", ""), "cannot be empty strings"),
    (("a.b",), r"cannot contain periods \('\.'\)"),
    (("a\x00",), "cannot contain NUL bytes"),
    (("a", 1), "must be strings, but got int"),
    (("langgraph", "x"), 'Root label for namespace cannot be "langgraph"'),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("namespace", "message"), BAD_NAMESPACES)
async def test_bad_namespaces_raise_like_langgraph(
    mode: str, namespace: tuple[Any, ...], message: str
) -> None:
    for store, error in [
        (InMemoryStore(), InvalidNamespaceError),
        (LangGraphStore(), lg_base.InvalidNamespaceError),
    ]:
        with pytest.raises(error, match=message):
            await call(store, mode, "put", namespace, "k", {"v": 1})
        if namespace and namespace[0] != "langgraph":
            for name, args in [("get", (namespace, "k")), ("search", (namespace,))]:
                with pytest.raises(error, match=message):
                    await call(store, mode, name, *args)
            with pytest.raises(error, match=message):
                await call(store, mode, "list_namespaces", prefix=namespace)
    assert issubclass(InvalidNamespaceError, ValueError)


async def test_reads_may_name_the_langgraph_tree_and_the_empty_prefix() -> None:
    both = await filled()
    await both("get", ("langgraph", "x"), "k")
    await both("search", ("langgraph",))
    await both("delete", ("langgraph", "x"), "k")


@pytest.mark.parametrize("mode", MODES)
async def test_ttl_is_refused_not_ignored(mode: str) -> None:
    for store in [InMemoryStore(), LangGraphStore()]:
        with pytest.raises(NotImplementedError, match="TTL is not supported by InMemoryStore"):
            await call(store, mode, "put", ("a",), "k", {"v": 1}, ttl=5)
        await call(store, mode, "put", ("a",), "k", {"v": 1}, ttl=None)
    with pytest.raises(NotImplementedError, match="TTL"):
        await call(InMemoryStore(), mode, "batch", [PutOp(("a",), "k", {"v": 1}, ttl=1.0)])
    with pytest.raises(NotImplementedError, match=r"ttl=\.\.\."):
        InMemoryStore(ttl={"default_ttl": 5})
    store = InMemoryStore()
    store.put(("a",), "k", {"v": 1})
    assert store.get(("a",), "k", refresh_ttl=False) is not None  # nothing expires anyway


async def test_unsupported_filter_operator_raises_like_langgraph() -> None:
    stores: list[Any] = [InMemoryStore(), LangGraphStore()]
    for store in stores:
        store.put(("a",), "k", {"n": 1})
        with pytest.raises(ValueError, match=r"Unsupported operator: \$in"):
            store.search(("a",), filter={"n": {"$in": [1]}})
        with pytest.raises(ValueError, match="Unsupported operator: y"):
            store.search(("a",), filter={"n": {"$gt": 0, "y": 1}})


def test_errors_for_what_is_not_supported() -> None:
    store: Any = InMemoryStore()  # Any: the calls below break the types on purpose
    store.put(("a",), "k", {"n": 1})
    with pytest.raises(ValueError, match="needs a number"):
        store.search(("a",), filter={"n": {"$gt": "many"}})
    with pytest.raises(ValueError, match="cannot be negative"):
        store.search(("a",), limit=-1)
    with pytest.raises(ValueError, match="cannot be negative"):
        store.list_namespaces(offset=-1)
    with pytest.raises(ValueError, match="max_depth must be at least 1"):
        store.list_namespaces(max_depth=0)
    with pytest.raises(ValueError, match="Unsupported match type"):
        infix: Any = "infix"
        store.batch([ListNamespacesOp((MatchCondition(infix, ("a",)),))])
    with pytest.raises(ValueError, match="Unknown operation type: str"):
        store.batch(["get"])
    with pytest.raises(TypeError, match="must be a dict, got list"):
        store.put(("a",), "k", [1, 2])
    with pytest.raises(TypeError, match="index must be False, None or a list"):
        store.put(("a",), "k", {"n": 1}, index=True)
    with pytest.raises(ValueError, match="Unclosed"):
        store.put(("a",), "k", {"n": 1}, index=["tags[*"])
    with pytest.raises(ValueError, match="Invalid list index"):
        our_base.tokenize_path("tags[x]")
    assert store.get(("a",), "k").value == {"n": 1}


def indexed(config: Any) -> InMemoryStore:
    """A store with an index config that may break the types on purpose."""
    return InMemoryStore(index=config)


def test_embeddings_named_by_a_string_are_made_by_langchain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langchain_openai import OpenAIEmbeddings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")
    index: Any = {"dims": 3, "embed": "openai:text-embedding-3-small"}
    assert isinstance(LangGraphStore(index=index).embeddings, OpenAIEmbeddings)
    assert isinstance(InMemoryStore(index=index)._index._model, OpenAIEmbeddings)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="provider"):
        InMemoryStore(index={"dims": 3, "embed": "no-such-provider:model"})


async def test_ensure_embeddings_as_langgraphs() -> None:
    from langchain_core.embeddings import Embeddings
    from langgraph.store.base.embed import ensure_embeddings as theirs

    from engine.store.base.embed import ensure_embeddings

    model = DeterministicFakeEmbedding(size=4)
    assert ensure_embeddings(model) is model
    for embed in (letters, aletters):
        ours_made, theirs_made = ensure_embeddings(embed), theirs(embed)
        assert isinstance(ours_made, Embeddings)
        texts = ["banana", "ice cube"]
        assert await ours_made.aembed_documents(texts) == await theirs_made.aembed_documents(texts)
        if embed is letters:
            assert ours_made.embed_query("you") == theirs_made.embed_query("you")
        else:
            with pytest.raises(ValueError, match="async"):
                ours_made.embed_query("you")
    with pytest.raises(ValueError, match="embed must be provided"):
        ensure_embeddings(None)


def test_index_config_errors() -> None:
    with pytest.raises(ValueError, match=r"does not support \['distance_type'\]"):
        indexed({"dims": 5, "embed": letters, "distance_type": "l2"})
    with pytest.raises(ValueError, match="needs `embed`"):
        InMemoryStore(index={"dims": 5})
    with pytest.raises(TypeError, match="embeddings model .* or a function"):
        indexed({"dims": 5, "embed": 42})
    with pytest.raises(TypeError, match="fields must be a list"):
        indexed({"dims": 5, "embed": letters, "fields": "text"})
    with pytest.raises(ValueError, match="Unclosed"):
        InMemoryStore(index={"dims": 5, "embed": letters, "fields": ["{a,b"]})
    wrong_dims = InMemoryStore(index={"dims": 4, "embed": letters})
    with pytest.raises(ValueError, match="dims=4"):
        wrong_dims.put(("a",), "k", {"t": "x"})
    short = InMemoryStore(index={"dims": 5, "embed": lambda texts: letters(texts)[:-1]})
    with pytest.raises(ValueError, match="returned 0 vectors for 1 texts"):
        short.put(("a",), "k", {"t": "x"})


async def test_async_embed_function_needs_the_async_methods() -> None:
    store = InMemoryStore(index={"dims": 5, "embed": aletters, "fields": ["t"]})
    with pytest.raises(TypeError, match="async: use the store's async methods"):
        store.put(("a",), "k", {"t": "x"})
    await store.aput(("a",), "k", {"t": "aaa"})
    assert (await store.asearch(("a",), query="aaa"))[0].score == pytest.approx(1.0)


async def test_a_sync_embed_function_runs_off_the_event_loop() -> None:
    loop = asyncio.get_running_loop()
    called_on_loop: list[bool] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        try:
            called_on_loop.append(asyncio.get_running_loop() is loop)
        except RuntimeError:
            called_on_loop.append(False)
        return letters(texts)

    store = InMemoryStore(index={"dims": 5, "embed": embed})
    await store.aput(("a",), "k", {"t": "x"})
    await store.asearch(("a",), query="x")
    assert called_on_loop == [False, False]


# Where we differ from LangGraph's in-memory store, on purpose.


def test_only_namespaces_holding_items_are_listed() -> None:
    store = InMemoryStore()
    store.put(("a", "b"), "k", {"v": 1})
    store.get(("never", "written"), "k")
    store.delete(("a", "b"), "k")
    assert store.list_namespaces() == []
    store.put(("a", "b"), "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b")]


def test_replacing_an_item_keeps_its_created_at_and_position() -> None:
    store = InMemoryStore()
    store.put(("a",), "1", {"v": 1})
    store.put(("a",), "2", {"v": 2})
    first = store.get(("a",), "1")
    store.put(("a",), "1", {"v": 3})
    again = store.get(("a",), "1")
    assert first is not None and again is not None
    assert again.created_at == first.created_at <= again.updated_at
    assert again.created_at.tzinfo is not None
    assert [r.key for r in store.search(("a",))] == ["1", "2"]


def test_values_are_copied_in_and_out() -> None:
    store = InMemoryStore()
    value = {"list": [1]}
    store.put(("a",), "k", value)
    value["list"].append(2)
    got = store.get(("a",), "k")
    assert got is not None and got.value == {"list": [1]}
    got.value["list"].append(3)
    store.search(("a",))[0].value["list"].append(4)
    assert store.get(("a",), "k") == Item(
        namespace=("a",),
        key="k",
        value={"list": [1]},
        created_at=got.created_at,
        updated_at=got.updated_at,
    )


def test_order_operators_skip_items_without_a_number() -> None:
    store = InMemoryStore()
    store.put(("a",), "1", {"n": 1})
    store.put(("a",), "2", {"other": 1})
    store.put(("a",), "3", {"n": "lots"})
    store.put(("a",), "4", {"n": "4"})
    assert [r.key for r in store.search(("a",), filter={"n": {"$gte": 1}})] == ["1", "4"]


def test_a_put_without_index_drops_the_old_vectors() -> None:
    store = InMemoryStore(index={"dims": 5, "embed": letters})
    store.put(("a",), "1", {"t": "aaa"})
    store.put(("a",), "1", {"t": "aaa"}, index=False)
    assert [r.score for r in store.search(("a",), query="aaa")] == [None]


def test_pages_run_on_from_ranked_into_unranked_items() -> None:
    store = InMemoryStore(index={"dims": 5, "embed": letters, "fields": ["t"]})
    values: list[dict[str, Any]] = [{"t": "aaa"}, {"x": 1}, {"t": "eee"}, {}]
    for key, value in zip("1234", values, strict=True):
        store.put(("a",), key, value)
    everything = [(r.key, r.score is None) for r in store.search(("a",), query="aa")]
    assert everything == [("1", False), ("3", False), ("2", True), ("4", True)]
    pages = [store.search(("a",), query="aa", limit=1, offset=i)[0].key for i in range(4)]
    assert pages == ["1", "3", "2", "4"]
    assert store.search(("a",), query="aa", offset=4) == []


def test_a_batch_that_fails_writes_nothing() -> None:
    store = InMemoryStore()
    not_a_dict: Any = "text"
    with pytest.raises(TypeError, match="must be a dict"):
        store.batch([PutOp(("a",), "1", {"v": 1}), PutOp(("a",), "2", not_a_dict)])
    assert store.search(("a",)) == []


def test_threads_may_share_a_store() -> None:
    store = InMemoryStore()

    def work(worker: int) -> None:
        for i in range(100):
            store.put(("w", str(worker)), str(i % 7), {"i": i})
            store.search(("w",), filter={"i": {"$gte": 0}}, limit=50)
            store.list_namespaces(prefix=("w",))
            if i % 3 == 0:
                store.delete(("w", str(worker)), str(i % 7))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.list_namespaces()) == 4


def test_a_query_without_an_index_lists_unranked_like_langgraph() -> None:
    store = InMemoryStore()
    store.put(("a",), "1", {"t": "x"})
    assert [(r.key, r.score) for r in store.search(("a",), query="x")] == [("1", None)]


def test_items() -> None:
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    labels: Any = ["a", "b"]  # a namespace read back from JSON is a list
    item = Item(namespace=labels, key="k", value={"v": 1}, created_at=when, updated_at=when)
    same = Item(
        namespace=("a", "b"),
        key="k",
        value={"v": 1},
        created_at=when.isoformat(),
        updated_at=when.isoformat(),
    )
    found = SearchItem(("a", "b"), "k", {"v": 1}, when, when, score=0.5)
    assert item.namespace == ("a", "b") and same.created_at == when
    assert item == same == found and hash(item) == hash(found)
    assert item != Item(namespace=("a", "b"), key="k", value={}, created_at=when, updated_at=when)
    assert item != "k"
    expected = {
        "namespace": ["a", "b"],
        "key": "k",
        "value": {"v": 1},
        "created_at": "2024-05-01T12:00:00+00:00",
        "updated_at": "2024-05-01T12:00:00+00:00",
    }
    assert item.dict() == expected
    assert found.dict() == {**expected, "score": 0.5}
    theirs = lg_base.SearchItem(("a", "b"), "k", {"v": 1}, when, when, score=0.5)
    assert found.dict() == theirs.dict()
    assert re.sub(r"^\w+", "", repr(found)) == re.sub(r"^\w+", "", repr(theirs))
    assert SearchItem(("a",), "k", {}, when, when).score is None


def test_public_names() -> None:
    for name in [
        "BaseStore",
        "Item",
        "SearchItem",
        "GetOp",
        "PutOp",
        "SearchOp",
        "ListNamespacesOp",
        "MatchCondition",
        "Op",
        "Result",
        "NamespacePath",
        "NamespaceMatchType",
        "InvalidNamespaceError",
        "IndexConfig",
        "TTLConfig",
        "tokenize_path",
        "get_text_at_path",
        "validate_op_namespace",
    ]:
        assert hasattr(our_base, name), name
    ops: list[Any] = [GetOp, PutOp, SearchOp, ListNamespacesOp, MatchCondition]
    for op in ops:
        assert op._fields == getattr(lg_base, op.__name__)._fields
        assert op._field_defaults == getattr(lg_base, op.__name__)._field_defaults
    with pytest.raises(InvalidNamespaceError, match="periods"):
        our_base.validate_op_namespace(SearchOp(("a.b",)))
