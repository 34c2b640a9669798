"""Webhooks over real HTTP, on both dialects: a receiver in the test gets LangGraph's
payload when a run ends, signed, retried while it fails, once delivered; private and
loopback addresses are refused unless allowed; a path calls the server's own app."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from ipaddress import ip_address
from typing import Any

import httpx
import pytest
from fastapi import Request
from sqlalchemy import select

from app import webhooks
from app.config import Settings
from app.db.database import Database
from app.db.models import WebhookDeliveryRow
from app.main import create_app
from tests.api.graphs import GRAPHS
from tests.helpers import ServeApp, eventually, new_thread, said
from tests.webhook_receiver import receiving

SECRET = "webhook-secret"


def hooked_settings(database_url: str, **overrides: Any) -> Settings:
    """The test graphs, webhooks allowed to this machine's loopback, short retries."""
    options: dict[str, Any] = {
        "database_url": database_url,
        "graphs": json.dumps(GRAPHS),
        "webhook_allow": ("127.0.0.1",),
        "webhook_backoff_s": 0.1,
        "webhook_timeout_s": 5.0,
        **overrides,
    }
    return Settings(**options)


async def deliveries(url: str, run_id: str) -> list[dict[str, Any]]:
    """The delivery rows of a run, read straight from the server's database."""
    db = Database(url)
    try:
        async with db.read() as session:
            rows = await session.scalars(
                select(WebhookDeliveryRow).where(WebhookDeliveryRow.run_id == run_id)
            )
            return [
                {"status": r.status, "attempts": r.attempts, "body": r.body, "error": r.last_error}
                for r in rows
            ]
    finally:
        await db.close()


async def test_a_run_that_ends_posts_langgraph_payload_signed(
    serve_app: ServeApp, database_url: str
) -> None:
    with receiving() as receiver:
        base = serve_app(create_app(hooked_settings(database_url, webhook_secret=SECRET)))
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            thread_id = await new_thread(api)
            response = await api.post(
                f"/threads/{thread_id}/runs/wait",
                json={
                    "assistant_id": "echo",
                    "input": said("hello"),
                    "metadata": {"ticket": 7},
                    "webhook": receiver.url,
                },
            )
            assert response.status_code == 200
            run_id = response.headers["content-location"].rsplit("/", 1)[-1]
            [call] = await asyncio.to_thread(receiver.wait_for, 1)

            payload = call.payload
            assert payload["run_id"] == run_id and payload["thread_id"] == thread_id
            assert payload["status"] == "success" and "error" not in payload
            assert payload["metadata"] == {"ticket": 7}
            assert payload["kwargs"]["webhook"] == receiver.url
            assert payload["values"] == response.json()
            for key in ("created_at", "run_started_at", "run_ended_at", "webhook_sent_at"):
                assert isinstance(payload[key], str)
            assert call.headers["content-type"] == "application/json"
            assert call.headers["x-threadline-attempt"] == "1"
            expected = hmac.new(SECRET.encode(), call.body, hashlib.sha256).hexdigest()
            assert call.headers["x-threadline-signature"] == f"sha256={expected}"
            assert _settled(await _settled_soon(database_url, run_id)) == [("delivered", 1, None)]


async def test_a_failing_receiver_is_retried_with_one_delivery_id(
    serve_app: ServeApp, database_url: str
) -> None:
    with receiving(statuses=[500, 503, 429]) as receiver:
        base = serve_app(create_app(hooked_settings(database_url)))
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            run = (
                await api.post(
                    "/runs",
                    json={"assistant_id": "echo", "input": said("hi"), "webhook": receiver.url},
                )
            ).json()
            calls = await asyncio.to_thread(receiver.wait_for, 4)
            await asyncio.sleep(0.5)  # no fifth call comes
            assert len(receiver.calls) == 4
            assert len({c.headers["x-threadline-delivery"] for c in calls}) == 1
            assert [c.headers["x-threadline-attempt"] for c in calls] == ["1", "2", "3", "4"]
            assert "x-threadline-signature" not in calls[0].headers  # no secret set
            assert {c.payload["run_id"] for c in calls} == {run["run_id"]}
            assert _settled(await _settled_soon(database_url, run["run_id"])) == [
                ("delivered", 4, None)
            ]


async def test_a_receiver_that_refuses_is_not_retried_and_runs_do_not_wait(
    serve_app: ServeApp, database_url: str
) -> None:
    """A 4xx ends the delivery as failed; a run that failed sends its error; a webhook
    that answers slowly delays no run."""
    with receiving(statuses=[400]) as receiver:
        base = serve_app(create_app(hooked_settings(database_url, webhook_attempts=3)))
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            response = await api.post(
                "/runs/wait",
                json={"assistant_id": "looping", "input": {}, "webhook": receiver.url},
            )
            run_id = response.headers["content-location"].rsplit("/", 1)[-1]
            [call] = await asyncio.to_thread(receiver.wait_for, 1)
            assert call.payload["status"] == "error"
            assert call.payload["error"]["error"] == "GraphRecursionError"
            assert "Recursion limit" in call.payload["error"]["message"]
            assert _settled(await _settled_soon(database_url, run_id)) == [
                ("failed", 1, "HTTP 400")
            ]


async def test_a_hanging_receiver_delays_no_run(serve_app: ServeApp, database_url: str) -> None:
    with receiving(hang_first=True) as receiver:
        base = serve_app(create_app(hooked_settings(database_url)))
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            first = await api.post(
                "/runs/wait",
                json={"assistant_id": "echo", "input": said("one"), "webhook": receiver.url},
            )
            await asyncio.to_thread(receiver.wait_for, 1)
            second = await api.post(
                "/runs/wait",
                json={"assistant_id": "echo", "input": said("two"), "webhook": receiver.url},
            )
            assert first.status_code == second.status_code == 200
            # The second run's webhook is not held up behind the first one's.
            calls = await asyncio.to_thread(receiver.wait_for, 2, 5.0)
            assert calls[1].payload["values"] == second.json()


@pytest.mark.parametrize(
    ("webhook", "problem"),
    [
        ("http://127.0.0.1:9/hook", "private or loopback address (127.0.0.1)"),
        ("http://localhost:9/hook", "private or loopback address"),
        ("http://10.20.30.40/hook", "private or loopback address (10.20.30.40)"),
        ("http://169.254.169.254/latest/meta-data", "private or loopback address"),
        ("http://[::1]:9/hook", "private or loopback address (::1)"),
        ("http://[::ffff:127.0.0.1]/hook", "private or loopback address"),
        # IPv6 addresses that lead to 127.0.0.1 through NAT64, 6to4 or SIIT, or by
        # themselves (IPv4-compatible).
        ("http://[64:ff9b::7f00:1]/hook", "private or loopback address (64:ff9b::7f00:1)"),
        ("http://[2002:7f00:1::]/hook", "private or loopback address"),
        ("http://[::ffff:0:7f00:1]/hook", "private or loopback address"),
        ("http://[::127.0.0.1]/hook", "private or loopback address"),
        ("ftp://example.com/hook", "an http or https URL"),
        ("http://xn--/hook", "not a URL"),
        ("http://8.8.8.8:0/hook", "0 is not a port"),
        ("http://8.8.8.8:65536/hook", "65536 is not a port"),
        ("hook", "an http or https URL"),
        ("//evil.example/hook", "a single '/'"),
        ("http://no-such-host.invalid/hook", "cannot be resolved"),
    ],
)
async def test_an_unusable_webhook_is_refused_before_the_run(
    serve_app: ServeApp, tmp_path: Any, webhook: str, problem: str
) -> None:
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}",
        graphs=json.dumps(GRAPHS),
    )
    base = serve_app(create_app(settings))
    async with httpx.AsyncClient(base_url=base, timeout=30) as api:
        thread_id = await new_thread(api)
        response = await api.post(
            f"/threads/{thread_id}/runs",
            json={"assistant_id": "echo", "input": said("hi"), "webhook": webhook},
        )
        assert response.status_code == 422, response.text
        assert problem in response.json()["detail"]
        assert (await api.get(f"/threads/{thread_id}/runs")).json() == []
        if "private" in problem:
            assert "THREADLINE_WEBHOOK_ALLOW" in response.json()["detail"]


async def test_a_path_calls_the_servers_own_app(serve_app: ServeApp, database_url: str) -> None:
    """No allow list needed: the call never leaves the process."""
    got: list[dict[str, Any]] = []
    app = create_app(hooked_settings(database_url, webhook_allow=()))

    async def run_ended(request: Request) -> dict[str, bool]:
        got.append(await request.json())
        return {"ok": True}

    app.add_api_route("/hooks/run-ended", run_ended, methods=["POST"])
    base = serve_app(app)
    async with httpx.AsyncClient(base_url=base, timeout=30) as api:
        response = await api.post(
            "/runs/wait",
            json={"assistant_id": "echo", "input": said("hi"), "webhook": "/hooks/run-ended"},
        )
        run_id = response.headers["content-location"].rsplit("/", 1)[-1]
        assert _settled(await _settled_soon(database_url, run_id)) == [("delivered", 1, None)]
        assert [p["run_id"] for p in got] == [run_id]


def _settled(rows: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    """A done delivery keeps no body."""
    assert all(r["body"] is None for r in rows if r["status"] != "pending")
    return [(r["status"], r["attempts"], r["error"]) for r in rows]


async def _settled_soon(url: str, run_id: str) -> list[dict[str, Any]]:
    """The run's deliveries once none is pending (the receiver answered; the server is
    recording it)."""

    async def settled() -> list[dict[str, Any]] | None:
        rows = await deliveries(url, run_id)
        return rows if rows and all(r["status"] != "pending" for r in rows) else None

    return await eventually(settled, f"the deliveries of run {run_id} to settle")


async def test_each_attempt_connects_to_the_address_it_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name is resolved and checked at every attempt, and the request goes to the checked
    address (its name kept for `Host` and TLS): a name that resolves inward by then (DNS
    rebinding) is refused."""
    answers: dict[str, list[Any]] = {}

    async def resolve(host: str, port: int) -> list[Any]:
        return answers[host]

    monkeypatch.setattr(webhooks, "_resolve", resolve)
    sent: list[httpx.Request] = []
    inner = httpx.MockTransport(lambda request: sent.append(request) or httpx.Response(204))
    guard = webhooks.Guard.of(["10.0.0.0/8", "hooks.internal", "xn--bcher-kva.internal"])
    async with httpx.AsyncClient(transport=webhooks.GuardedTransport(guard, inner)) as client:
        answers["hooks.example"] = [ip_address("93.184.215.14"), ip_address("2606:2800::1")]
        await client.post("https://hooks.example/done")
        answers["hooks.example"] = [ip_address("2606:2800::1")]
        await client.post("http://hooks.example:8080/done")
        answers["inside.example"] = [ip_address("10.1.2.3")]
        await client.post("http://inside.example/done")
        await client.post("http://hooks.internal/done")  # allowed by name: not resolved
        await client.post("http://bücher.internal/done")  # by the name DNS knows it by
        answers["hooks.example"] = [ip_address("127.0.0.1")]
        with pytest.raises(webhooks.WebhookRefused, match=r"\(127\.0\.0\.1\)"):
            await client.post("https://hooks.example/done")

    assert [str(r.url) for r in sent] == [
        "https://93.184.215.14/done",
        "http://[2606:2800::1]:8080/done",
        "http://10.1.2.3/done",
        "http://hooks.internal/done",
        "http://xn--bcher-kva.internal/done",
    ]
    assert [r.headers["host"] for r in sent] == [
        "hooks.example",
        "hooks.example:8080",
        "inside.example",
        "hooks.internal",
        "xn--bcher-kva.internal",
    ]
    assert sent[0].extensions["sni_hostname"] == "hooks.example"
    assert "sni_hostname" not in sent[1].extensions


def test_a_failed_delivery_is_logged_without_the_urls_password() -> None:
    assert (
        webhooks._shown("https://hooks:s3cret@example.com/x") == "https://hooks:***@example.com/x"
    )
    assert webhooks._shown("https://example.com/x?k=1") == "https://example.com/x?k=1"
