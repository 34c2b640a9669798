"""The web page in a real browser: chat, interrupts, branches, and the run view.

Each test drives the page served by a real server (see conftest.py) the way a person would,
and saves screenshots under tests/e2e/artifacts/.
"""

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, idle, reply, send

pytestmark = pytest.mark.slow


def test_chat_interrupts_branches_and_versions(page: Page, base_url: str, artifacts: Path) -> None:
    a = chat(page)

    # A reply streams in token by token.
    send(a, "hello there")
    expect(reply(a, 'You said: "hello there"')).to_be_visible()
    idle(a)
    streamed = a.locator(".msg.ai").last.get_attribute("data-chunks")
    assert streamed is not None and int(streamed) > 5, streamed
    page.screenshot(path=artifacts / "01-streamed-reply.png")

    # One reminder approved through the card...
    send(a, "remind me to call mom tomorrow at 9")
    card = a.locator(".interrupt-card")
    expect(card).to_contain_text("Set a reminder to call mom, due tomorrow at 9.")
    expect(page.locator(".call[data-reason='interrupt']")).to_have_count(1)
    page.screenshot(path=artifacts / "02-interrupt-card.png")
    card.get_by_role("button", name="Approve").click()
    expect(reply(a, "Done: I set a reminder to call mom (tomorrow at 9).")).to_be_visible()
    idle(a)

    # ...and another edited in its form.
    send(a, "remind me to water the plants tonight")
    card.get_by_role("button", name="Edit").click()
    card.get_by_label("text").fill("water the cactus")
    page.screenshot(path=artifacts / "03-edit-form.png")
    card.get_by_role("button", name="Save and approve").click()
    expect(reply(a, "Done: I set a reminder to water the cactus (tonight).")).to_be_visible()
    idle(a)
    # The chat shows the call as it ran, with the edited arguments.
    expect(a.locator(".tool-call", has_text="water the cactus")).to_be_visible()
    expect(a.locator(".tool-call", has_text="water the plants")).to_have_count(0)
    reminders = httpx.get(f"{base_url}/reminders").json()
    assert [(r["text"], r["due"]) for r in reminders] == [
        ("call mom", "tomorrow at 9"),
        ("water the cactus", "tonight"),
    ]

    # A tool call and its result, shown compactly.
    send(a, "weather in Paris tomorrow")
    expect(reply(a, "The forecast for Paris tomorrow")).to_be_visible()
    idle(a)
    expect(a.locator(".tool-call", has_text="get_forecast")).to_be_visible()
    expect(a.locator(".msg.tool", has_text="get_forecast")).to_be_visible()

    # Regenerate the reply: a second branch of the turn, "2/2" on the reply.
    paris = a.locator(".msg.ai", has_text="The forecast for Paris tomorrow")
    paris.get_by_role("button", name="Regenerate").click()
    idle(a)
    nav = a.locator(".msg.ai .branch-nav")
    expect(nav.locator(".count")).to_have_text("2/2")
    expect(page.locator(".call .kind", has_text="regenerate")).to_have_count(1)
    nav.get_by_role("button", name="Previous branch").click()
    expect(nav.locator(".count")).to_have_text("1/2")
    page.screenshot(path=artifacts / "04-regenerated.png")

    # Edit and resend the question: a third branch, on the user message this time.
    question = a.locator(".msg.human", has_text="weather in Paris tomorrow")
    question.get_by_role("button", name="Edit").click()
    a.get_by_label("Edited message").fill("weather in Rome tomorrow")
    a.locator(".editor").get_by_role("button", name="Send").click()
    expect(reply(a, "The forecast for Rome tomorrow")).to_be_visible()
    idle(a)
    nav = a.locator(".msg.human .branch-nav")
    expect(nav.locator(".count")).to_have_text("3/3")
    expect(reply(a, "The forecast for Paris")).to_have_count(0)
    # Earlier turns are kept on the new branch.
    expect(reply(a, "water the cactus")).to_be_visible()

    # Back to the first branch: its question and reply are shown again.
    nav.get_by_role("button", name="Previous branch").click()
    expect(nav.locator(".count")).to_have_text("2/3")
    nav.get_by_role("button", name="Previous branch").click()
    expect(nav.locator(".count")).to_have_text("1/3")
    expect(reply(a, "The forecast for Paris tomorrow")).to_be_visible()
    expect(reply(a, "The forecast for Rome")).to_have_count(0)
    # The rows show the other branches above the current one.
    expect(page.locator(".versions .version.off").first).to_be_visible()
    page.screenshot(path=artifacts / "05-branches.png")

    # A click on a version opens its state beside the rows.
    version = page.locator(".versions .version[data-step='1']").first
    checkpoint_id = version.get_attribute("data-checkpoint")
    version.click()
    inspector = page.locator(".inspector")
    expect(inspector.locator("[data-field='checkpoint']")).to_contain_text(checkpoint_id or "?")
    expect(inspector.locator("[data-field='next']")).to_contain_text("END")
    expect(inspector.locator("[data-field='metadata']")).to_contain_text('"step": 1')
    expect(inspector.locator("[data-field='values']")).to_contain_text("hello there")
    page.screenshot(path=artifacts / "06-version-state.png")

    # A question pending, the graph waiting at ask_user, branches in the rows and a
    # version's state open.
    send(a, "remind me to call dad tonight")
    expect(a.locator(".interrupt-card")).to_contain_text("call dad")
    expect(page.locator(".legend-item[data-kind='waiting']")).to_contain_text("ask_user")
    page.locator(".versions .version.head").click()
    expect(inspector.locator("[data-field='interrupts']")).to_contain_text("action_requests")
    page.screenshot(path=artifacts / "10-page.png")


def test_reload_rejoins_stop_cancels_and_two_chats_run_at_once(
    page: Page, artifacts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A slow forecast keeps each turn open long enough to act in the middle of it.
    monkeypatch.setenv("THREADLINE_FORECAST_DELAY_S", "2")
    a = chat(page)

    # The graph lights the node the open run is at.
    send(a, "weather in Oslo")
    expect(page.locator("svg.graph .node.running[data-node='tools']")).to_be_visible()
    expect(page.locator(".call.open")).to_have_count(1)
    page.screenshot(path=artifacts / "07-running-tools.png")

    # A reload in the middle of the turn rejoins the stream and loses nothing.
    page.reload()
    a = chat(page)
    expect(reply(a, "The forecast for Oslo today")).to_be_visible()
    idle(a)
    expect(a.locator(".msg")).to_have_count(4)  # question, tool call, tool result, reply
    expect(a.locator(".tool-call", has_text="get_forecast")).to_have_count(1)
    expect(page.locator(".call[data-reason='END']")).to_have_count(1)

    # Stop cancels the open run; the call closes as cancelled.
    send(a, "weather in Lima")
    expect(page.locator(".call.open")).to_have_count(1)
    a.get_by_role("button", name="Stop").click()
    expect(page.locator(".call[data-reason='cancelled']")).to_have_count(1)
    idle(a)
    expect(a.locator(".notice")).to_contain_text("Stopped")

    # Two chats side by side, both running at once, in one run view.
    page.get_by_role("button", name="Chat B beside").click()
    b = chat(page, "B")
    send(b, "weather in Berlin")
    send(a, "weather in Madrid")
    expect(page.locator(".track-calls[data-slot='A'] .call.open")).to_have_count(1)
    expect(page.locator(".track-calls[data-slot='B'] .call.open")).to_have_count(1)
    expect(page.locator("svg.graph .pips circle")).to_have_count(2)
    page.screenshot(path=artifacts / "08-two-chats-running.png")
    expect(reply(b, "The forecast for Berlin today")).to_be_visible()
    expect(reply(a, "The forecast for Madrid today")).to_be_visible()
    expect(page.locator(".call.open")).to_have_count(0)
    expect(page.locator(".track-row")).to_have_count(2)
    page.screenshot(path=artifacts / "09-two-chats-done.png")


def test_api_key_is_sent_with_every_call(page: Page) -> None:
    """With a key in the field, the page's calls carry it as `x-api-key` (the server here
    has auth off and ignores it; the page works the same with auth on)."""
    key = page.get_by_label("API key")
    key.fill("tl_example_secret")
    # The thread list also refreshes on its own: wait for a call made after the key took
    # effect (a page that never sends it times out here).
    with page.expect_request(
        lambda r: r.url.endswith("/threads/search") and "x-api-key" in r.headers
    ) as search:
        key.press("Enter")
        key.blur()
    assert search.value.headers.get("x-api-key") == "tl_example_secret"
    with page.expect_request(lambda r: "/runs/stream" in r.url) as stream:
        send(chat(page), "hello")
    assert stream.value.headers.get("x-api-key") == "tl_example_secret"
    expect(reply(chat(page), 'You said: "hello"')).to_be_visible()


def test_a_reminder_come_due_shows_up_live_in_the_open_chat(page: Page, artifacts: Path) -> None:
    """Nothing is sent: the page listens to the open chat's thread, and the reminder's
    turn streams in as the agent says it."""
    a = chat(page)
    send(a, "remind me to stretch in 3 seconds")
    card = a.locator(".interrupt-card")
    expect(card).to_contain_text("Set a reminder to stretch, due in 3 seconds. That is ")
    card.get_by_role("button", name="Approve").click()
    expect(reply(a, "Done: I set a reminder to stretch (in 3 seconds).")).to_be_visible()
    idle(a)
    expect(reply(a, "⏰ Reminder: stretch.")).to_be_visible(timeout=15_000)
    idle(a)
    expect(reply(a, "⏰ Reminder: stretch.")).to_have_count(1)
    page.screenshot(path=artifacts / "reminder-said.png")
