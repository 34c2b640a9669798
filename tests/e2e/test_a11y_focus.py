"""The keyboard focus as things change around it: the chat list drawn again, a chat or a
row's menu opened from the keyboard, Escape there, a chat deleted, Send and Stop, a run
ending while the reader is elsewhere. It is never dropped on the page's body, nor taken
from where the reader is. The assistant is the scripted one (a slow reply on demand)."""

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, composer, idle, reply, send
from tests.e2e.graphs import SCRIPTED_GRAPHS

pytestmark = pytest.mark.slow


@pytest.fixture
def graphs() -> dict[str, str]:
    return SCRIPTED_GRAPHS


def make_thread(base_url: str, asked: str, answered: str) -> None:
    """A chat of one turn, made through the API."""
    thread = {"metadata": {"graph_id": "agent"}}
    thread_id = httpx.post(f"{base_url}/threads", json=thread).json()["thread_id"]
    messages = [
        {"type": "human", "content": asked, "id": "m0"},
        {"type": "ai", "content": answered, "id": "m1"},
    ]
    update = {"values": {"messages": messages}, "as_node": "answer"}
    httpx.post(f"{base_url}/threads/{thread_id}/state", json=update).raise_for_status()


def shown_thread(page: Page) -> str:
    thread_id = page.locator(".thread[aria-current='true']").get_attribute("data-thread-id")
    assert thread_id
    return thread_id


def test_the_focus_stays_on_its_row_when_the_list_is_drawn_again(page: Page, base_url: str) -> None:
    make_thread(base_url, "plan a trip to Lisbon", "Sure.")
    a = chat(page)
    send(a, "hello there")
    idle(a)
    thread_id = shown_thread(page)
    toggle = page.locator(f".thread-row[data-thread-id='{thread_id}'] .row-menu")
    toggle.focus()

    # Another client renames the chat and runs it: the page follows the run, and reads
    # and draws the list again as it starts and ends.
    title = {"metadata": {"title": "Renamed elsewhere"}}
    httpx.patch(f"{base_url}/threads/{thread_id}", json=title).raise_for_status()
    run = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "again"}]}}
    httpx.post(f"{base_url}/threads/{thread_id}/runs/wait", json=run, timeout=30)
    expect(reply(a, "Echo: again")).to_be_visible()
    expect(page.locator(".thread", has_text="Renamed elsewhere")).to_be_visible()
    idle(a)
    expect(toggle).to_be_focused()

    # Any redraw (the reminder poll's, a title's): the same row's same control.
    still = page.evaluate(
        """() => {
            const before = document.activeElement;
            window.threadline.bus.dispatchEvent(new CustomEvent("title", {detail: {}}));
            const now = document.activeElement;
            return now !== before && now.matches(".row-menu") &&
                now.closest("li").dataset.threadId === before.closest("li").dataset.threadId;
        }"""
    )
    assert still


def test_a_chat_and_its_menu_from_the_keyboard(page: Page, base_url: str) -> None:
    make_thread(base_url, "plan a trip to Lisbon", "Sure: the tram 28.")
    make_thread(base_url, "what is a superstep", "One round of the Pregel loop.")
    page.reload()
    a = chat(page)

    # Enter on a chat opens it; the focus stays on its row.
    lisbon = page.locator(".thread", has_text="plan a trip to Lisbon")
    lisbon.focus()
    page.keyboard.press("Enter")
    expect(reply(a, "the tram 28")).to_be_visible()
    expect(lisbon).to_have_attribute("aria-current", "true")
    expect(lisbon).to_be_focused()

    # The row's ⋯ takes the focus into its menu; Escape closes it, back to ⋯.
    toggle = page.get_by_role("button", name="Rename or delete “what is a superstep”")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Rename", exact=True)).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator(".thread-actions")).to_have_count(0)
    expect(toggle).to_be_focused()

    # Escape closes the "Delete this chat?" question too.
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    confirm = page.get_by_role("group", name="Delete this chat?")
    expect(confirm.get_by_role("button", name="Delete")).to_be_focused()
    page.keyboard.press("Escape")
    expect(confirm).to_have_count(0)
    expect(toggle).to_be_focused()

    # A chat deleted: the focus goes to the next one, not the search box (a phone's
    # keyboard would cover the screen).
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    expect(page.locator(".thread")).to_have_count(1)
    expect(lisbon).to_be_focused()


def test_send_and_stop_from_the_keyboard_keep_the_focus(page: Page) -> None:
    a = chat(page)
    composer(a).fill("long reply please")
    a.get_by_role("button", name="Send").focus()
    page.keyboard.press("Enter")
    # Send hides while the run goes: Stop, in its place, has the focus.
    stop = a.get_by_role("button", name="Stop")
    expect(stop).to_be_focused()
    expect(reply(a, "word20")).to_be_visible()
    page.keyboard.press("Enter")
    idle(a)
    expect(composer(a)).to_be_focused()


def test_a_run_ending_leaves_the_focus_where_the_reader_is(page: Page, base_url: str) -> None:
    a = chat(page)
    send(a, "long reply please")
    expect(reply(a, "word5")).to_be_visible()
    key = page.get_by_label("API key")
    key.focus()

    # The run ends (stopped from another tab) while the reader is in another field.
    thread_id = shown_thread(page)
    [run] = httpx.get(f"{base_url}/threads/{thread_id}/runs?status=running").json()
    cancel = f"{base_url}/threads/{thread_id}/runs/{run['run_id']}/cancel?action=interrupt"
    httpx.post(cancel, json={}).raise_for_status()
    expect(a.locator(".msg.ai.cut.stopped")).to_be_visible()
    idle(a)
    expect(key).to_be_focused()
