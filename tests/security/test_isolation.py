"""Each user has their own chats (issue 8): bob tries every endpoint of the API on alice's
threads, runs, assistant, store item, reminders and cron, and gets exactly what a missing
resource gets (404, or an empty search); without a credential every endpoint answers 401.
Afterwards alice's world reads exactly as before."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import said
from tests.security.conftest import SecureServer

OPENAPI = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())
REMIND = "remind me to call mom tomorrow at 9"


@dataclass(frozen=True)
class World:
    """Alice's resources, by id."""

    assistant: str
    thread: str  # a finished chat: checkpoints, runs
    run: str
    checkpoint: str
    asking: str  # a thread waiting for an answer
    slow: str  # a thread with a run still going while bob tries
    slow_run: str
    agent: str  # the thread where the agent set a reminder
    cron: str  # would run on alice's finished chat every hour (it is disabled)

    def fill(self, template: str) -> str:
        return template.format(
            thread_id=self.thread,
            run_id=self.run,
            assistant_id=self.assistant,
            checkpoint_id=self.checkpoint,
            cron_id=self.cron,
            namespace="inner",
        )


@dataclass(frozen=True)
class Attempt:
    """One request of bob's on alice's resources, and the only answer it may get."""

    method: str
    path: str  # an OpenAPI path template
    body: Any = None
    params: dict[str, Any] | None = None
    status: int = 404


@pytest.fixture
async def clients(secure_server: SecureServer) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """alice, bob and a client without credentials."""
    async with (
        httpx.AsyncClient(
            base_url=secure_server.url, headers=secure_server.headers["alice"], timeout=30
        ) as alice,
        httpx.AsyncClient(
            base_url=secure_server.url, headers=secure_server.headers["bob"], timeout=30
        ) as bob,
        httpx.AsyncClient(base_url=secure_server.url, timeout=30) as nobody,
    ):
        yield {"alice": alice, "bob": bob, "nobody": nobody}


async def ok(response: Any) -> Any:
    """The JSON of a 2xx response (the request awaited here)."""
    answer = await response
    assert answer.is_success, (answer.request.method, answer.request.url, answer.text)
    return answer.json() if answer.content else None


async def build_world(alice: httpx.AsyncClient) -> World:
    assistant = await ok(alice.post("/assistants", json={"graph_id": "echo", "name": "mine"}))
    thread = await ok(alice.post("/threads", json={"metadata": {"who": "alice"}}))
    tid, aid = thread["thread_id"], assistant["assistant_id"]
    runs = f"/threads/{tid}/runs"
    await ok(alice.post(f"{runs}/wait", json={"assistant_id": aid, "input": said("a")}))
    run = await ok(alice.post(runs, json={"assistant_id": aid, "input": said("b")}))
    await ok(alice.get(f"{runs}/{run['run_id']}/join"))
    state = await ok(alice.get(f"/threads/{tid}/state"))
    asking = await ok(alice.post("/threads", json={}))
    await ok(
        alice.post(
            f"/threads/{asking['thread_id']}/runs/wait",
            json={"assistant_id": "asker", "input": {"question": "secret?"}},
        )
    )
    agent = await ok(alice.post("/threads", json={}))
    agent_path = f"/threads/{agent['thread_id']}/runs/wait"
    await ok(alice.post(agent_path, json={"assistant_id": "agent", "input": said(REMIND)}))
    await ok(alice.post(agent_path, json={"assistant_id": "agent", "command": {"resume": "yes"}}))
    await ok(
        alice.put("/store/items", json={"namespace": ["notes"], "key": "k", "value": {"secret": 1}})
    )
    cron = await ok(
        alice.post(
            f"{runs}/crons",
            json={
                "assistant_id": aid,
                "schedule": "@hourly",
                "enabled": False,
                "metadata": {"who": "alice"},
            },
        )
    )
    slow = await ok(alice.post("/threads", json={}))
    slow_run = await ok(
        alice.post(
            f"/threads/{slow['thread_id']}/runs",
            json={"assistant_id": "slow", "input": {"delay": 1.5}},
        )
    )
    return World(
        assistant=aid,
        thread=tid,
        run=run["run_id"],
        checkpoint=state["checkpoint"]["checkpoint_id"],
        asking=asking["thread_id"],
        slow=slow["thread_id"],
        slow_run=slow_run["run_id"],
        agent=agent["thread_id"],
        cron=cron["cron_id"],
    )


async def snapshot(alice: httpx.AsyncClient, w: World) -> dict[str, Any]:
    """Everything alice can read of her finished resources."""
    reads = {
        "thread": alice.get(f"/threads/{w.thread}"),
        "state": alice.get(f"/threads/{w.thread}/state"),
        "history": alice.post(f"/threads/{w.thread}/history", json={"limit": 100}),
        "runs": alice.get(f"/threads/{w.thread}/runs", params={"limit": 100}),
        "tree": alice.get(f"/threads/{w.thread}/tree"),
        "storage": alice.get(f"/threads/{w.thread}/storage"),
        "asking": alice.get(f"/threads/{w.asking}/state"),
        "agent": alice.get(f"/threads/{w.agent}/state"),
        "assistant": alice.get(f"/assistants/{w.assistant}"),
        "item": alice.get("/store/items", params={"namespace": "notes", "key": "k"}),
        "reminders": alice.get("/reminders"),
        "namespaces": alice.post("/store/namespaces", json={}),
        "threads": alice.post("/threads/search", json={"limit": 100}),
        "crons": alice.post("/runs/crons/search", json={}),
    }
    seen = {name: await ok(read) for name, read in reads.items()}
    # The slow thread changes as its run goes on: that is alice's own doing.
    seen["threads"] = [t for t in seen["threads"] if t["thread_id"] != w.slow]
    return seen


def attempts(w: World) -> list[Attempt]:
    """Bob's attempts: every endpoint that names a thread, run or assistant, with alice's
    ids; then the ones that reach her resources by a body (stateless runs, bulk cancel,
    prune, creating with her ids)."""
    run = {"assistant_id": "echo", "input": said("mine now")}
    resume = {"assistant_id": "asker", "command": {"resume": "bob"}}
    t, r = "/threads/{thread_id}", "/threads/{thread_id}/runs/{run_id}"
    a = "/assistants/{assistant_id}"
    c = "/runs/crons/{cron_id}"
    cron = {"assistant_id": "echo", "schedule": "@daily"}
    return [
        Attempt("GET", a),
        Attempt("PATCH", a, {"name": "bob's"}),
        Attempt("DELETE", a),
        Attempt("GET", f"{a}/graph"),
        Attempt("GET", f"{a}/schemas"),
        Attempt("GET", f"{a}/subgraphs"),
        Attempt("GET", f"{a}/subgraphs/{{namespace}}"),
        Attempt("POST", f"{a}/versions", {}),
        Attempt("POST", f"{a}/latest", {"version": 1}),
        Attempt("GET", t),
        Attempt("PATCH", t, {"metadata": {"who": "bob"}}),
        Attempt("DELETE", t),
        Attempt("POST", f"{t}/copy"),
        Attempt("GET", f"{t}/state"),
        Attempt("POST", f"{t}/state", {"values": {"messages": said("x")["messages"]}}),
        Attempt("POST", f"{t}/state/checkpoint", {"checkpoint": {"checkpoint_id": w.checkpoint}}),
        Attempt("GET", f"{t}/state/{{checkpoint_id}}"),
        Attempt("GET", f"{t}/history"),
        Attempt("POST", f"{t}/history", {"limit": 100}),
        Attempt("GET", f"{t}/tree"),
        Attempt("GET", f"{t}/storage"),
        Attempt("GET", f"{t}/stream"),
        Attempt("GET", f"{t}/runs"),
        Attempt("POST", f"{t}/runs", run),
        Attempt("POST", f"{t}/runs/stream", run),
        Attempt("POST", f"{t}/runs/wait", run),
        Attempt("POST", f"{t}/runs/wait", {**run, "checkpoint_id": w.checkpoint}),
        Attempt("POST", "/runs/batch", [{**run, "thread_id": w.thread}]),
        Attempt("POST", f"{t}/runs/crons", cron),
        Attempt("GET", c),
        Attempt("PATCH", c, {"enabled": True}),
        Attempt("DELETE", c),
        Attempt("GET", r),
        Attempt("DELETE", r),
        Attempt("GET", f"{r}/join"),
        Attempt("GET", f"{r}/stream", params={"cancel_on_disconnect": "true"}),
        Attempt("POST", f"{r}/cancel", params={"action": "rollback"}),
        Attempt("POST", f"/threads/{w.asking}/runs/wait", resume),
        Attempt("POST", f"/threads/{w.slow}/runs/{w.slow_run}/cancel"),
        # Her assistant, from bob's own (stateless) runs.
        Attempt("POST", "/runs", {**run, "assistant_id": w.assistant}),
        Attempt("POST", "/runs/stream", {**run, "assistant_id": w.assistant}),
        Attempt("POST", "/runs/wait", {**run, "assistant_id": w.assistant}),
        Attempt("POST", "/runs/batch", [{**run, "assistant_id": w.assistant}]),
        Attempt("POST", "/runs/crons", {**cron, "assistant_id": w.assistant}),
        # Bulk operations skip what is not bob's, as they skip unknown ids.
        Attempt("POST", "/runs/cancel", {"run_ids": [w.run, w.slow_run]}, status=204),
        Attempt("POST", "/runs/cancel", {"thread_id": w.slow}, status=204),
        Attempt("POST", "/threads/prune", {"thread_ids": [w.thread, w.asking]}, status=200),
        Attempt("DELETE", "/store/items", {"namespace": ["notes"], "key": "k"}, status=204),
        # Her ids are taken, and never handed out (not even with do_nothing).
        Attempt("POST", "/threads", {"thread_id": w.thread, "if_exists": "do_nothing"}, status=409),
        Attempt(
            "POST", "/assistants", {"graph_id": "echo", "assistant_id": w.assistant}, status=409
        ),
        Attempt("POST", f"{t}/runs/wait", {**run, "if_not_exists": "create"}, status=409),
    ]


async def test_users_cannot_reach_each_others_resources(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    world = await build_world(alice)
    before = await snapshot(alice, world)
    assert len(before["reminders"]) == 1 and before["item"]["value"] == {"secret": 1}

    tried = attempts(world)
    for attempt in tried:
        answer = await bob.request(
            attempt.method, world.fill(attempt.path), json=attempt.body, params=attempt.params
        )
        assert answer.status_code == attempt.status, (attempt, answer.text)
        if attempt.status == 404:
            assert "not found" in answer.json()["detail"]
        if attempt.path == "/threads/prune":
            assert answer.json() == {"pruned_count": 0}

    # Every endpoint that names a thread, run or assistant was tried.
    named = {
        (method.upper(), path)
        for path, operations in OPENAPI["paths"].items()
        for method in operations
        if "{" in path
    }
    assert named <= {(a.method, a.path) for a in tried}

    # Searches, counts and lists show bob none of alice's resources.
    assert await ok(bob.post("/threads/search", json={"ids": [world.thread]})) == []
    assert await ok(bob.post("/threads/count", json={"metadata": {"who": "alice"}})) == 0
    searched = await ok(bob.post("/assistants/search", json={"limit": 1000}))
    assert world.assistant not in {found["assistant_id"] for found in searched}
    assert await ok(bob.post("/assistants/count", json={"name": "mine"})) == 0
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    mcp_headers = {"accept": "application/json"}
    tools = await ok(bob.post("/mcp", json=mcp, headers=mcp_headers))
    assert "mine" not in {tool["name"] for tool in tools["result"]["tools"]}
    call = {**mcp, "method": "tools/call", "params": {"name": "mine", "arguments": {}}}
    called = await ok(bob.post("/mcp", json=call, headers=mcp_headers))
    assert called["error"]["message"] == "Unknown tool: mine"
    assert await ok(bob.post("/runs/crons/search", json={"thread_id": world.thread})) == []
    assert await ok(bob.post("/runs/crons/count", json={"metadata": {"who": "alice"}})) == 0
    assert await ok(bob.get("/reminders")) == []
    missing = await bob.get("/store/items", params={"namespace": "notes", "key": "k"})
    assert (missing.status_code, missing.json()) == (200, None)  # as a missing one is
    assert await ok(bob.post("/store/items/search", json={})) == {"items": []}
    assert await ok(bob.post("/store/namespaces", json={})) == {"namespaces": []}

    # The same namespace and key are bob's own, apart from alice's.
    bobs = {"namespace": ["notes"], "key": "k", "value": {"secret": 2}}
    assert (await bob.put("/store/items", json=bobs)).status_code == 204
    mine = await ok(bob.get("/store/items", params={"namespace": "notes", "key": "k"}))
    assert mine["value"] == {"secret": 2}

    # Alice's slow run was never cancelled, and nothing of hers changed.
    joined = await ok(alice.get(f"/threads/{world.slow}/runs/{world.slow_run}/join"))
    assert joined["log"] == ["step", "step2"]
    assert await snapshot(alice, world) == before


async def test_every_endpoint_needs_a_credential(clients: dict[str, httpx.AsyncClient]) -> None:
    alice, nobody = clients["alice"], clients["nobody"]
    world = await build_world(alice)
    before = await snapshot(alice, world)
    bad = ({}, {"x-api-key": "tl_000000000000_wrong"}, {"Authorization": "Bearer not.a.token"})
    protected = [
        (method.upper(), world.fill(path))
        for path, operations in OPENAPI["paths"].items()
        for method, operation in operations.items()
        if operation.get("security")
    ]
    assert len(protected) > 40
    for method, path in protected:
        body = [] if path == "/runs/batch" else {}
        for headers in bad:
            answer = await nobody.request(method, path, json=body, headers=headers)
            assert answer.status_code == 401, (method, path, answer.text)
            assert answer.headers["www-authenticate"] == "Bearer"
    # Only probes, the forecast demo and metrics are open.
    open_paths = {
        path
        for path, operations in OPENAPI["paths"].items()
        for operation in operations.values()
        if not operation.get("security")
    }
    assert open_paths <= {"/ok", "/info", "/demo/forecast", "/metrics"}
    assert await snapshot(alice, world) == before
