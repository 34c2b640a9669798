"""The server goes away and comes back: the page says so plainly, keeps what it shows,
retries on its own, and picks up where it was (a reply being streamed resumes from its
last event; a message that never left is kept with Retry)."""

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, idle, reply, send
from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow

# The page asks again after 1, 2, 4, 8 s...: enough for a few tries.
BACK_MS = 25_000


def test_a_stream_cut_by_an_outage_resumes(
    server: Server,
    open_page: Callable[..., Page],
    monkeypatch: pytest.MonkeyPatch,
    artifacts: Path,
) -> None:
    # A slow forecast keeps the turn open while the server stops.
    monkeypatch.setenv("THREADLINE_FORECAST_DELAY_S", "3")
    page = open_page()
    rejoins: list[str] = []
    page.on(
        "request",
        lambda r: (
            r.method == "GET"
            and "/runs/" in r.url  # a run's stream, not the thread's (listened to when idle)
            and r.url.endswith("/stream")
            and rejoins.append(r.headers.get("last-event-id", ""))
        ),
    )
    a = chat(page)
    send(a, "weather in Oslo")
    expect(page.locator("svg.graph .node.running[data-node='tools']")).to_be_visible()
    streamed = a.locator(".tool-call", has_text="get_forecast")
    expect(streamed).to_be_visible()

    server.stop()
    banner = page.locator("#banner")
    expect(banner).to_contain_text("Can't reach the server, retrying")
    expect(a.locator(".panel-status")).to_have_text("reconnecting…")
    # What was on screen stays: the chat list, the question, the call streamed so far.
    expect(page.locator(".thread")).to_have_count(1)
    expect(a.locator(".msg.human", has_text="weather in Oslo")).to_be_visible()
    expect(streamed).to_be_visible()
    page.screenshot(path=artifacts / "outage-01-offline.png")

    # The run was put back in the queue; the restarted server continues it, and the page
    # rejoins its stream from the last event it had.
    monkeypatch.setenv("THREADLINE_FORECAST_DELAY_S", "0")
    server.start()
    expect(banner).to_be_hidden(timeout=BACK_MS)
    expect(reply(a, "The forecast for Oslo today")).to_be_visible()
    idle(a)
    expect(a.locator(".panel-status")).to_have_text("idle")
    expect(a.locator(".msg")).to_have_count(4)  # question, tool call, tool result, reply
    expect(reply(a, "The forecast for Oslo")).to_have_count(1)
    expect(page.locator("body")).not_to_contain_text("Failed to fetch")
    # It rejoined after the events it had, not from the start.
    assert rejoins and all(int(last) > 0 for last in rejoins), rejoins


def test_a_message_sent_offline_is_kept_with_retry(
    server: Server, open_page: Callable[..., Page]
) -> None:
    page = open_page()
    a = chat(page)
    send(a, "hello there")
    expect(reply(a, 'You said: "hello there"')).to_be_visible()
    idle(a)

    server.stop()
    send(a, "are you still there")
    unsent = a.locator(".msg.human.unsent")
    expect(unsent).to_contain_text("are you still there")
    expect(unsent).to_contain_text("Not sent")
    expect(a.locator(".notice")).to_contain_text(
        "Your message was not sent: can't reach the server"
    )
    expect(page.locator("#banner")).to_contain_text("Can't reach the server")
    idle(a)  # never stuck busy
    expect(a.locator(".panel-status")).not_to_have_text("busy")
    expect(page.locator(".thread")).to_have_count(1)  # the list is kept
    expect(page.locator("body")).not_to_contain_text("Failed to fetch")

    server.start()
    expect(page.locator("#banner")).to_be_hidden(timeout=BACK_MS)
    a.get_by_role("button", name="Retry").click()
    expect(reply(a, 'You said: "are you still there"')).to_be_visible()
    idle(a)
    expect(a.locator(".unsent")).to_have_count(0)
    expect(a.locator(".msg.human")).to_have_count(2)
