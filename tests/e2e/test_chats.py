"""Managing chats: rename, delete, search by title and content, more than a page of them,
and an address per chat (and branch) that a reload or another tab lands on."""

import re
from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from tests.e2e.chat_page import chat, idle, reply, send

pytestmark = pytest.mark.slow


def make_thread(base_url: str, *said: str) -> str:
    """A thread whose messages (human, ai, human, ...) are `said`."""
    thread_id = httpx.post(f"{base_url}/threads", json={"metadata": {"graph_id": "agent"}}).json()[
        "thread_id"
    ]
    messages = [
        {"type": "human" if i % 2 == 0 else "ai", "content": text, "id": f"m{i}"}
        for i, text in enumerate(said)
    ]
    update = {"values": {"messages": messages}, "as_node": "model"}
    httpx.post(f"{base_url}/threads/{thread_id}/state", json=update).raise_for_status()
    return thread_id


def test_rename_delete_and_search(open_page: Callable[..., Page], base_url: str) -> None:
    make_thread(base_url, "plan a trip to Lisbon", "Sure: the tram 28 and the riverside.")
    kept = make_thread(base_url, "what is a superstep", "One round of the Pregel loop.")
    page = open_page()
    threads = page.locator(".thread")
    expect(threads).to_have_count(2)

    # Rename: kept in the thread's metadata, shown in the list, the chat and the tab.
    threads.filter(has_text="what is a superstep").click()
    expect(page).to_have_title("what is a superstep · Threadline")
    page.get_by_role("button", name="Rename or delete “what is a superstep”").click()
    page.get_by_role("button", name="Rename", exact=True).click()
    page.get_by_label("Chat name").fill("Pregel notes")
    page.get_by_label("Chat name").press("Enter")
    expect(threads.filter(has_text="Pregel notes")).to_have_count(1)
    expect(chat(page).locator(".panel-title")).to_have_text("Pregel notes")
    expect(page).to_have_title("Pregel notes · Threadline")
    metadata = httpx.get(f"{base_url}/threads/{kept}").json()["metadata"]
    assert metadata["title"] == "Pregel notes"

    # Search by title, then by something said in the chat only.
    search = page.get_by_label("Search chats")
    search.fill("pregel")
    expect(threads).to_have_count(1)
    expect(threads.locator(".thread-title")).to_have_text("Pregel notes")
    search.fill("tram 28")
    expect(threads).to_have_count(1)
    expect(threads).to_contain_text("plan a trip to Lisbon")
    search.fill("nowhere to be found")
    expect(page.locator(".thread-list")).to_contain_text("No chats match.")
    search.fill("")
    expect(threads).to_have_count(2)

    # Delete, after a confirmation: gone from the list and the server; the chat that
    # showed it is a new chat.
    page.get_by_role("button", name="Rename or delete “Pregel notes”").click()
    page.get_by_role("button", name="Delete", exact=True).click()
    page.get_by_role("group", name="Delete this chat?").get_by_role("button", name="Delete").click()
    expect(threads).to_have_count(1)
    assert httpx.get(f"{base_url}/threads/{kept}").status_code == 404
    expect(chat(page).locator(".panel-title")).to_have_text("New chat")
    expect(page).to_have_title("Threadline")


def test_more_than_a_page_of_chats(open_page: Callable[..., Page], base_url: str) -> None:
    for n in range(55):
        make_thread(base_url, f"question number {n}")
    page = open_page()
    threads = page.locator(".thread")
    expect(threads).to_have_count(50)
    page.get_by_role("button", name="Show more").click()
    expect(threads).to_have_count(55)
    expect(page.get_by_role("button", name="Show more")).to_have_count(0)
    expect(threads.last.locator(".thread-title")).to_have_text("question number 0")


def test_a_late_list_read_does_not_undo_show_more(
    open_page: Callable[..., Page], base_url: str
) -> None:
    """A read of the list that answers after "Show more" (asked for before it) leaves the
    page that "Show more" added."""
    for n in range(55):
        make_thread(base_url, f"question number {n}")
    page = open_page()
    threads = page.locator(".thread")
    expect(threads).to_have_count(50)

    # Hold the next read of the list (a new chat reads it again) until "Show more" is asked.
    held: list[Route] = []

    def hold_first(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route("**/threads/search", hold_first)
    with page.expect_request("**/threads/search"):
        page.get_by_role("button", name="New chat").click()
    page.get_by_role("button", name="Show more").click()
    assert len(held) == 1
    with page.expect_response(lambda response: response.request == held[0].request):
        held[0].continue_()
    expect(threads).to_have_count(55)
    # Round trips after the late answer, which the page has drawn by then: still 55.
    page.evaluate("async () => { await fetch('/ok'); await fetch('/ok'); }")
    assert threads.count() == 55
    expect(page.get_by_role("button", name="Show more")).to_have_count(0)


def test_each_chat_and_branch_has_an_address(open_page: Callable[..., Page], base_url: str) -> None:
    page = open_page()
    a = chat(page)
    send(a, "hello there")
    expect(reply(a, 'You said: "hello there"')).to_be_visible()
    idle(a)
    expect(page).to_have_url(re.compile(r"/#/threads/[\w-]+$"))
    thread_id = page.url.rsplit("/", 1)[1]
    expect(page).to_have_title("hello there · Threadline")

    # Edit the first message: a second branch, with its own title.
    a.locator(".msg.human").get_by_role("button", name="Edit").click()
    a.get_by_label("Edited message").fill("good morning")
    a.locator(".editor").get_by_role("button", name="Send").click()
    expect(reply(a, 'You said: "good morning"')).to_be_visible()
    idle(a)
    expect(page).to_have_title("good morning · Threadline")
    expect(page.locator(".thread-title")).to_have_text("good morning")

    # Back to the first branch: the address names it, and the list shows its title.
    nav = a.locator(".msg.human .branch-nav")
    nav.get_by_role("button", name="Previous branch").click()
    expect(nav.locator(".count")).to_have_text("1/2")
    expect(page).to_have_url(re.compile(rf"/#/threads/{thread_id}/at/[\w-]+$"))
    expect(page).to_have_title("hello there · Threadline")
    expect(page.locator(".thread-title")).to_have_text("hello there")
    branch_url = page.url

    # A reload, and the address in a new tab of a new browser, land on that branch.
    page.reload()
    a = chat(page)
    expect(a.locator(".msg.human .branch-nav .count")).to_have_text("1/2")
    expect(reply(a, 'You said: "hello there"')).to_be_visible()
    other = open_page(branch_url.removeprefix(base_url))
    b = chat(other)
    expect(b.locator(".msg.human .branch-nav .count")).to_have_text("1/2")
    expect(reply(b, 'You said: "hello there"')).to_be_visible()
    expect(other).to_have_title("hello there · Threadline")

    # The address of the thread alone opens its newest branch; "New chat" clears it.
    other.goto(f"/#/threads/{thread_id}")
    expect(reply(b, 'You said: "good morning"')).to_be_visible()
    other.get_by_role("button", name="New chat").click()
    expect(other).to_have_url(re.compile(r"/#/$"))
    other.go_back()
    expect(reply(b, 'You said: "good morning"')).to_be_visible()
