"""Storage benchmark: the same long chat through our SQL saver and LangGraph's Postgres saver.

    .venv/bin/python bench/storage.py                  # starts a throwaway PostgreSQL
    .venv/bin/python bench/storage.py --url postgresql://user@host/db --turns 200,1000

Each saver gets a fresh database on the same server and the same chat texts, in two ways:

- "saver": the chat driven straight through the saver (tests/checkpoint/chat.py), one
  checkpoint per turn with two messages more each time, for each of --turns;
- "graph": a one-node chat graph (START -> chat -> END on MessagesState) run turn by turn,
  ours on our engine and LangGraph's on langgraph: what a server stores, with the input
  and step checkpoints and the pending writes of every turn (--graph-turns);
- "subgraph": the same graph whose node is itself a one-node chat graph, run per call,
  so that it saves in a new namespace every turn and gets and hands back the whole
  history (--nested-turns).

Printed per chat: bytes on disk (every table with its indexes, TOAST and maps), the growth
over the empty schema per turn and per byte of message text, the bytes of stored values,
the mean time of a turn, and the median time to read the thread's head: by the saver that
wrote it, and as the first read of a new saver (another process or a restarted one, whose
caches know nothing of the thread yet).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import multiprocessing
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# Run as a script from anywhere: the chat and the PostgreSQL helpers live in tests/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import langgraph.graph  # noqa: E402
import psycopg  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402

import engine  # noqa: E402
from engine.checkpoint.sql.migrations import migrate  # noqa: E402
from engine.checkpoint.sql.saver import SQLSaver  # noqa: E402
from tests.checkpoint.chat import run_chat, turn_texts  # noqa: E402
from tests.pg import create_database, throwaway_cluster  # noqa: E402

HEAD_READS = 50
FIRST_READS = 10  # new savers, one first read each
WARM_UP = "warm-up"  # their first thread, written after the sizes are taken
TABLES_QUERY = (
    "SELECT relname, pg_total_relation_size(oid) FROM pg_class"
    " WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
)


@dataclass(frozen=True)
class Library:
    """One side of the comparison: its graph API and its saver."""

    name: str
    graph: ModuleType
    open_saver: Callable[[str], contextlib.AbstractAsyncContextManager[Any]]
    value_bytes: str  # SQL: the bytes of stored values (ours: whole compressed records)


@contextlib.asynccontextmanager
async def our_saver(url: str) -> AsyncIterator[SQLSaver]:
    await migrate(url)
    saver = SQLSaver.from_url(url)
    try:
        yield saver
    finally:
        await saver.aclose()


@contextlib.asynccontextmanager
async def langgraph_saver(url: str) -> AsyncIterator[AsyncPostgresSaver]:
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        yield saver


OURS = Library(
    "threadline",
    engine,
    our_saver,
    "SELECT coalesce(sum(octet_length(data)), 0) FROM checkpoint_saves",
)
LANGGRAPH = Library(
    "langgraph",
    langgraph.graph,
    langgraph_saver,
    "SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs",
)


@dataclass
class Chat:
    config: dict[str, Any]
    raw_bytes: int
    turn_seconds: list[float]


async def saver_chat(saver: Any, library: Library, turns: int) -> Chat:
    chat = await run_chat(saver, "bench", turns)
    return Chat(chat.config, chat.raw_bytes, chat.turn_seconds)


async def graph_chat(saver: Any, library: Library, turns: int, *, nested: bool = False) -> Chat:
    """Run the chat on the library's graph (our engine and langgraph share the API); with
    `nested`, the reply comes from a sub-agent: a subgraph node, which saves checkpoints
    of its own in the task's namespace every turn."""
    g, answers = library.graph, []

    def chat(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content=answers.pop())]}

    def one_node(node: Any, saver: Any = None) -> Any:
        builder = g.StateGraph(g.MessagesState).add_node("chat", node)
        return builder.add_edge(g.START, "chat").add_edge("chat", g.END).compile(checkpointer=saver)

    graph = one_node(one_node(chat) if nested else chat, saver)
    config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    raw, seconds = 0, []
    for human, ai in turn_texts(turns):
        answers.append(ai)
        started = time.perf_counter()
        await graph.ainvoke({"messages": [{"role": "user", "content": human}]}, config)
        seconds.append(time.perf_counter() - started)
        raw += len(human.encode()) + len(ai.encode())
    return Chat(config, raw, seconds)


Driver = Callable[[Any, Library, int], Awaitable[Chat]]


@dataclass
class Result:
    raw_bytes: int
    empty: dict[str, int]  # bytes on disk per table, before the chat
    tables: dict[str, int]  # and after it
    value_bytes: int
    turn_ms: float
    head_ms: float
    first_read_ms: float

    @property
    def disk_bytes(self) -> int:
        return sum(self.tables.values())

    @property
    def growth(self) -> int:
        return self.disk_bytes - sum(self.empty.values())

    def table_growth(self) -> dict[str, int]:
        grown = {name: size - self.empty.get(name, 0) for name, size in self.tables.items()}
        return {name: size for name, size in grown.items() if size}


def scalar(url: str, query: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def table_sizes(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {name: int(size) for name, size in conn.execute(TABLES_QUERY)}


async def measure(url: str, library: Library, drive: Driver, turns: int) -> Result:
    async with library.open_saver(url) as saver:
        empty = table_sizes(url)
        chat = await drive(saver, library, turns)
        # As a server does once started: what is loaded stays out of full collections,
        # which reads of long chats (thousands of new objects each) keep triggering.
        gc.collect()
        gc.freeze()
        timings = []
        for _ in range(HEAD_READS):
            started = time.perf_counter()
            await saver.aget_tuple(chat.config)
            timings.append(time.perf_counter() - started)
        tables, value_bytes = table_sizes(url), scalar(url, library.value_bytes)
        await run_chat(saver, WARM_UP, 1)
        first_reads = [await first_read(url, library, chat.config) for _ in range(FIRST_READS)]
        gc.unfreeze()
    return Result(
        raw_bytes=chat.raw_bytes,
        empty=empty,
        tables=tables,
        value_bytes=value_bytes,
        turn_ms=statistics.mean(chat.turn_seconds) * 1000,
        head_ms=statistics.median(timings) * 1000,
        first_read_ms=statistics.median(first_reads) * 1000,
    )


async def first_read(url: str, library: Library, config: dict[str, Any]) -> float:
    """How long a new saver takes to read the head, once connected: it reads a one-turn
    thread first, so connecting and preparing its statements are not counted."""
    async with library.open_saver(url) as saver:
        await saver.aget_tuple({"configurable": {"thread_id": WARM_UP, "checkpoint_ns": ""}})
        started = time.perf_counter()
        await saver.aget_tuple(config)
        return time.perf_counter() - started


def report(title: str, turns: int, us: Result, them: Result) -> None:
    def row(label: str, mine: float, theirs: float, fmt: str) -> None:
        ratio = f"{theirs / mine:,.1f}x" if mine else "-"
        print(f"  {label:<24}{format(mine, fmt):>14}{format(theirs, fmt):>14}{ratio:>12}")

    print(f"\n{title}, {us.raw_bytes:,} bytes of message text")
    print(f"  {'':<24}{OURS.name:>14}{LANGGRAPH.name:>14}{'lg / ours':>12}")
    row("bytes on disk", us.disk_bytes, them.disk_bytes, ",")
    row("  growth over empty", us.growth, them.growth, ",")
    row("  growth / text bytes", us.growth / us.raw_bytes, them.growth / them.raw_bytes, ".2f")
    row("bytes per turn", us.growth / turns, them.growth / turns, ",.0f")
    row("stored value bytes", us.value_bytes, them.value_bytes, ",")
    row("mean turn (ms)", us.turn_ms, them.turn_ms, ".2f")
    row("head read (ms, median)", us.head_ms, them.head_ms, ".2f")
    row("  by a new saver", us.first_read_ms, them.first_read_ms, ".2f")
    for name, result in ((OURS.name, us), (LANGGRAPH.name, them)):
        grown = sorted(result.table_growth().items(), key=lambda item: -item[1])
        print(f"  {name} per turn: " + ", ".join(f"{t} {b / turns:,.0f}" for t, b in grown))


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with throwaway_cluster() as cluster:
        yield cluster.url()


LIBRARIES = {library.name: library for library in (OURS, LANGGRAPH)}
DRIVERS: dict[str, Driver] = {
    "saver": saver_chat,
    "graph": graph_chat,
    "subgraph": functools.partial(graph_chat, nested=True),
}


def measure_apart(url: str, library: str, driver: str, turns: int) -> Result:
    """`measure` in a new process: what an earlier chat left behind (a 1,000-turn chat on
    LangGraph's saver goes through gigabytes) slowed the reads of later ones by half."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_measure, url, library, driver, turns).result()


def _measure(url: str, library: str, driver: str, turns: int) -> Result:
    return asyncio.run(measure(url, LIBRARIES[library], DRIVERS[driver], turns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a PostgreSQL server to create the databases on")
    parser.add_argument("--turns", default="200,1000", help="saver chat lengths")
    parser.add_argument("--graph-turns", default="200,1000", help="graph chat lengths")
    parser.add_argument(
        "--nested-turns",
        default="200",
        help="chat lengths of a graph whose reply comes from a subgraph",
    )
    args = parser.parse_args()
    with server(args.url) as url:
        plan = (
            ("saver", args.turns),
            ("graph", args.graph_turns),
            ("subgraph", args.nested_turns),
        )
        for driver, lengths in plan:
            for turns in (int(t) for t in lengths.split(",") if t):
                us, them = (
                    measure_apart(
                        create_database(
                            url,
                            f"bench_{driver}_{turns}_{lib.name}",
                        ),
                        lib.name,
                        driver,
                        turns,
                    )
                    for lib in LIBRARIES.values()
                )
                report(f"{turns}-turn chat driven by the {driver}", turns, us, them)


if __name__ == "__main__":
    main()
