"""Bounded work (issue 22): while the most expensive requests the limits accept run one
after the other (searches and counts with the largest filters over stored rows, bodies of
the most values), the server keeps answering `GET /ok`: round trips of `/ok` begin after
the server has an expensive request and end before its answer arrives, several on average
for each kind, so none holds the event loop for its course. An ordering, not a speed: it
holds however fast or loaded the machine is. The server is a process of its own, as
deployed, so that the test's client does not share its interpreter."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.limits import MAX_FILTER_ENTRIES, MAX_JSON_VALUES
from tests.api.graphs import GRAPHS

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 3
# Rows for the filters to go through: threads (with values), assistants and store items,
# enough that each expensive request is many /ok round trips' worth of work.
THREADS = 20
ROWS = 300  # assistants, and store items
TAGS = 200  # in each row's metadata or value
# /ok round trips that must begin and end while each kind of expensive request is handled,
# on average over its ROUNDS handlings (tens or hundreds do, even on a loaded machine).
AT_LEAST = 2


@pytest.fixture
def process(database_url: str, tmp_path: Path) -> Iterator[str]:
    """`threadline serve` on the test's database, as its own process; its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "THREADLINE_DATABASE_URL": database_url,
        "THREADLINE_GRAPHS": json.dumps(GRAPHS),
        "THREADLINE_PORT": str(port),
    }
    with (tmp_path / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "threadline"), "serve"], env=env, stdout=log, stderr=log
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(f"{url}/ok", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    assert server.poll() is None and time.monotonic() < deadline, "no server"
                    time.sleep(0.1)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)


def widest_filter() -> dict[str, object]:
    """A filter at the limit on entries, of arrays (each element its own comparison)."""
    return {"tags": [f"t{i}" for i in range(MAX_FILTER_ENTRIES // 2 - 1)], "n": {"m": [1] * 48}}


def expensive() -> list[tuple[str, bytes]]:
    """(path, body) of the most expensive requests the limits accept."""
    wide = widest_filter()
    most = {"metadata": {"many": ["v" * 90] * (MAX_JSON_VALUES - 6)}}
    bodies = [
        ("/threads/search", {"metadata": wide, "values": wide, "limit": 1000}),
        ("/threads/count", {"metadata": wide, "values": wide}),
        ("/assistants/search", {"metadata": wide, "limit": 1000}),
        ("/store/items/search", {"filter": wide, "limit": 1000}),
        ("/threads", most),
    ]
    return [(path, json.dumps(body).encode()) for path, body in bodies]


def item(key: str, value: dict[str, object]) -> dict[str, object]:
    """The body of a store item's PUT."""
    return {"namespace": ["n"], "key": key, "value": value}


@dataclass
class Handling:
    """Which expensive request the server has (from the end of its body being sent to the
    arrival of its answer's headers), and the /ok round trips that began and ended within
    each one's handling."""

    current: int | None = None
    done: bool = False
    inside: Counter[int] = field(default_factory=Counter)


async def load(http: httpx.AsyncClient, handling: Handling) -> list[str]:
    """Send the expensive requests one after the other, ROUNDS times; their paths."""
    sent = []
    try:
        for number, (path, body) in enumerate(expensive() * ROUNDS):

            async def trace(event: str, info: dict[str, Any], number: int = number) -> None:
                if event == "http11.send_request_body.complete":
                    handling.current = number
                elif event == "http11.receive_response_headers.complete":
                    handling.current = None

            answer = await http.post(
                path,
                content=body,
                headers={"content-type": "application/json"},
                extensions={"trace": trace},
            )
            assert answer.is_success, (path, answer.status_code, answer.text[:200])
            sent.append(path)
    finally:
        handling.done = True
    return sent


async def probe(http: httpx.AsyncClient, handling: Handling) -> None:
    """`/ok` round trips, one after the other, until the load is done; each counts for the
    expensive request being handled both when it is sent and when its answer arrives."""
    while not handling.done:
        during = handling.current
        (await http.get("/ok")).raise_for_status()
        if during is not None and handling.current == during:
            handling.inside[during] += 1
        await asyncio.sleep(0)  # the load's turn, whatever the connection's readiness


@pytest.mark.slow
async def test_ok_answers_while_the_most_expensive_requests_run(process: str) -> None:
    async with httpx.AsyncClient(base_url=process, timeout=120) as http:
        tags = {"tags": [f"t{i}" for i in range(TAGS)], "n": {"m": [1, 2]}}
        for i in range(THREADS):
            thread = (await http.post("/threads", json={"metadata": tags})).json()["thread_id"]
            said = {"messages": [{"role": "user", "content": f"{i}", "additional_kwargs": tags}]}
            await http.post(
                f"/threads/{thread}/runs/wait", json={"assistant_id": "echo", "input": said}
            )
        assistant = {"graph_id": "echo", "metadata": tags}
        for start in range(0, ROWS, 10):
            batch = range(start, min(start + 10, ROWS))
            stored = await asyncio.gather(
                *(http.post("/assistants", json=assistant) for _ in batch),
                *(http.put("/store/items", json=item(f"k{i}", tags)) for i in batch),
            )
            assert all(answer.is_success for answer in stored)
        handling = Handling()
        sent, _ = await asyncio.gather(load(http, handling), probe(http, handling))
    assert len(sent) == ROUNDS * len(expensive())
    inside: dict[str, list[int]] = defaultdict(list)
    for number, path in enumerate(sent):
        inside[path].append(handling.inside[number])
    # A request that held the loop for its whole handling would let at most one /ok answer
    # in (one answered just after it, read by the client before its own answer): each
    # kind must average more than that over its handlings.
    assert all(sum(counts) >= AT_LEAST * ROUNDS for counts in inside.values()), (
        f"/ok round trips within each handling: {dict(inside)}"
    )
