"""The chat as a person uses it while things go on: scrolling while a reply streams, Stop,
failures, stale links, questions from the agent, long input and wide replies. The
assistant here is the scripted one of tests/e2e/graphs.py (long, slow, failing replies on
demand)."""

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from app.services import state as state_service
from tests.e2e.chat_page import chat, composer, from_bottom, idle, reply, send, wait_until_grown
from tests.e2e.graphs import SCRIPTED_GRAPHS

pytestmark = pytest.mark.slow

WAITING = "rgb(161, 92, 7)"  # --waiting in the light theme: a question waits for the reader


@pytest.fixture
def graphs() -> dict[str, str]:
    return SCRIPTED_GRAPHS


def test_scrolling_up_while_a_reply_streams_stays_put_until_jump_to_latest(page: Page) -> None:
    a = chat(page)
    send(a, "long reply please")
    wait_until_grown(a, 1500)
    assert from_bottom(a) < 40  # followed so far

    # The reader scrolls up to read: the reply streams on below, the view stays.
    a.locator(".scroll").hover()
    page.mouse.wheel(0, -500)
    page.wait_for_function(
        "el => el.scrollHeight - el.clientHeight - el.scrollTop > 300",
        arg=a.locator(".scroll").element_handle(),
    )
    wait_until_grown(a, 600)
    assert from_bottom(a) > 600
    jump = a.get_by_role("button", name="Latest messages")
    expect(jump).to_be_visible()

    # From the keyboard: back to the end, and following again.
    jump.focus()
    page.keyboard.press("Enter")
    expect(jump).to_be_hidden()
    wait_until_grown(a, 400)
    assert from_bottom(a) < 40
    a.get_by_role("button", name="Stop").click()
    idle(a)


def test_stop_keeps_the_partial_reply_marked_stopped(page: Page) -> None:
    a = chat(page)
    send(a, "long reply please")
    expect(reply(a, "word40")).to_be_visible()
    a.get_by_role("button", name="Stop").click()
    idle(a)

    # What was streamed stays, marked, and the notice says it plainly (no "null").
    stopped = a.locator(".msg.ai.cut.stopped")
    expect(stopped).to_contain_text("word40")
    expect(stopped).to_contain_text("Stopped")
    expect(a.locator(".notice")).to_have_text("Stopped. The reply so far is kept.")
    # A stop is not a question waiting for the reader: not "interrupted" in orange.
    status = a.locator(".panel-status")
    expect(status).to_have_text("stopped")
    assert status.evaluate("el => getComputedStyle(el).color") != WAITING
    row = page.locator(".thread[aria-current='true']")
    expect(row).to_have_attribute("data-status", "stopped")

    # It stays after a reload, and in its place as the chat goes on.
    page.reload()
    a = chat(page)
    expect(a.locator(".msg.ai.cut.stopped")).to_contain_text("word40")
    send(a, "hello after the stop")
    expect(reply(a, "Echo: hello after the stop")).to_be_visible()
    idle(a)
    texts = a.locator(".msg").all_inner_texts()
    assert [i for i, t in enumerate(texts) if "word40" in t] == [1], texts
    expect(a.locator(".panel-status")).to_have_text("idle")


def test_a_failed_turn_keeps_its_error_and_can_be_retried(
    page: Page, open_page: Callable[..., Page]
) -> None:
    a = chat(page)
    send(a, "boom please")
    failed = a.locator(".msg.ai.cut.failed")
    expect(failed).to_contain_text("the model broke mid-reply")
    expect(failed).to_contain_text("word30")  # what it had written before it broke
    idle(a)
    expect(a.locator(".notice")).to_be_hidden()

    # Another tab sees the failure too (from the thread's `error`).
    other = chat(open_page(page.url))
    expect(other.locator(".msg.ai.cut.failed")).to_contain_text("RuntimeError")

    # Retry runs the failed step again: the reply comes, the marker goes.
    failed.get_by_role("button", name="Retry").click()
    expect(reply(a, "word59")).to_be_visible()
    idle(a)
    expect(a.locator(".msg.ai.cut")).to_have_count(0)

    # A failure not retried stays where it happened as the chat goes on.
    send(a, "boom again")
    expect(a.locator(".msg.ai.cut.failed")).to_be_visible()
    idle(a)
    send(a, "hello")
    expect(reply(a, "Echo: hello")).to_be_visible()
    idle(a)
    texts = a.locator(".msg").all_inner_texts()
    failed_at = [i for i, t in enumerate(texts) if "run failed" in t]
    assert len(failed_at) == 1 and "boom again" in texts[failed_at[0] - 1], texts
    expect(a.locator(".msg.ai.cut.failed").get_by_role("button", name="Retry")).to_have_count(0)


def test_a_link_to_a_chat_that_is_gone_says_so_and_starts_a_new_one(
    open_page: Callable[..., Page],
) -> None:
    page = open_page("/#/threads/1b4e28ba-2fa1-11d2-883f-0016d3cca427")
    a = chat(page)
    gone = a.locator(".gone[role=status]")  # shown (its text is always there)
    expect(gone).to_be_visible()
    expect(gone).to_have_text("This chat no longer exists. Send a message to start a new one.")
    expect(a.locator(".notice")).to_be_hidden()
    send(a, "hello there")
    expect(reply(a, "Echo: hello there")).to_be_visible()
    idle(a)
    expect(gone).to_be_hidden()
    assert "1b4e28ba" not in page.url

    # Deleted, then Back to it: the same.
    page.locator(".thread-row .row-menu").first.click()
    page.locator(".thread-actions").get_by_role("button", name="Delete").click()
    page.locator(".thread-actions.confirm").get_by_role("button", name="Delete").click()
    expect(page.locator(".thread-row")).to_have_count(0)
    page.go_back()
    expect(gone).to_be_visible()
    send(a, "and again")
    expect(reply(a, "Echo: and again")).to_be_visible()
    idle(a)
    expect(a.locator(".notice")).to_be_hidden()
    expect(page.locator(".thread-row")).to_have_count(1)


def test_other_messages_are_not_redrawn_by_a_run(page: Page) -> None:
    a = chat(page)
    send(a, "tool please")
    expect(reply(a, "Looked it up.")).to_be_visible()
    idle(a)
    result = a.locator(".msg.tool")
    result.locator("summary").click()
    expect(result).to_have_attribute("open", "")
    a.locator(".msg").first.evaluate("el => (el.dataset.mark = 'kept')")

    # A selection in a streaming reply survives the tokens that follow it.
    send(a, "long reply please")
    expect(reply(a, "word40")).to_be_visible()
    a.locator(".msg.ai").last.locator(".bubble p").first.evaluate(
        """p => { const range = document.createRange(); range.selectNodeContents(p);
                  getSelection().removeAllRanges(); getSelection().addRange(range); }"""
    )
    expect(reply(a, "word100")).to_be_visible()
    assert page.evaluate("getSelection().toString()").startswith("word0 word1")
    a.get_by_role("button", name="Stop").click()
    idle(a)

    # The run started and ended: the earlier messages are the same elements, still open.
    expect(a.locator(".msg[data-mark='kept']")).to_have_count(1)
    expect(result).to_have_attribute("open", "")


def test_a_free_question_reads_as_text_and_takes_the_answer(page: Page) -> None:
    a = chat(page)
    send(a, "ask me something")
    card = a.locator(".interrupt-card")
    expect(card).to_contain_text("What is your favourite colour?")
    expect(card.locator("pre")).to_have_count(0)  # not a JSON block
    answer = card.get_by_label("Answer")
    expect(answer).to_be_focused()

    # The composer does not take a message meanwhile: it says why, and keeps the text.
    box = composer(a)
    box.fill("blue?")
    box.press("Enter")
    expect(a.locator(".notice")).to_have_text("Answer the question above first.")
    expect(box).to_have_value("blue?")
    expect(card).to_be_visible()

    # Shift+Enter is a new line, Enter answers.
    answer.focus()
    answer.press_sequentially("deep")
    answer.press("Shift+Enter")
    answer.press_sequentially("blue")
    expect(answer).to_have_value("deep\nblue")
    answer.press("Enter")
    expect(reply(a, "Your answer: deep")).to_contain_text("blue")
    idle(a)


def test_enter_sends_an_edited_message(page: Page) -> None:
    a = chat(page)
    send(a, "hello one")
    expect(reply(a, "Echo: hello one")).to_be_visible()
    idle(a)
    a.locator(".msg.human").get_by_role("button", name="Edit").click()
    box = a.get_by_label("Edited message")
    box.fill("hello two")
    box.press("Enter")
    expect(reply(a, "Echo: hello two")).to_be_visible()
    idle(a)
    expect(a.locator(".msg.human .branch-nav .count")).to_have_text("2/2")


def test_long_input_wide_tables_and_long_call_arguments(page: Page) -> None:
    a = chat(page)
    # The composer grows with the text, up to a limit.
    box = composer(a)
    before = box.bounding_box()["height"]
    box.fill("\n".join(f"line {i}" for i in range(4)))
    grown = box.bounding_box()["height"]
    assert grown > before + 20, (before, grown)
    box.fill("\n".join(f"line {i}" for i in range(40)))
    assert 150 < box.bounding_box()["height"] <= 210
    box.fill("")

    # A table wider than the reply scrolls sideways; its words are not cut.
    send(a, "table please")
    table = a.locator(".markdown table")
    expect(table).to_be_visible()
    idle(a)
    holder = a.locator(".table-scroll")
    assert holder.evaluate("el => el.scrollWidth > el.clientWidth + 50")
    header = table.locator("th").first
    assert header.evaluate("el => el.getClientRects().length && el.offsetHeight < 40")

    # A call's long arguments open in full.
    send(a, "tool please")
    call = a.locator(".tool-call", has_text="lookup")
    expect(call).to_be_visible()
    full = call.locator("pre")
    expect(full).to_be_hidden()
    call.get_by_text(re.compile(r"^lookup$")).click()
    expect(full).to_be_visible()
    expect(full).to_contain_text("THE END")


def test_editing_an_early_message_of_a_long_chat_pages_through_its_history(
    page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server ends a history page early on a long thread: the page reads on with
    `before` to find the version to edit (here every page holds one version)."""
    monkeypatch.setattr(state_service, "HISTORY_PAGE_TEXT", 1)
    a = chat(page)
    for text in ("first words", "second words"):
        send(a, text)
        expect(reply(a, f"Echo: {text}")).to_be_visible()
        idle(a)
    a.locator(".msg.human", has_text="first words").get_by_role("button", name="Edit").click()
    box = a.get_by_label("Edited message")
    box.fill("other words")
    box.press("Enter")
    expect(reply(a, "Echo: other words")).to_be_visible()
    idle(a)
    expect(a.locator(".msg.human", has_text="second words")).to_have_count(0)
    expect(a.locator(".msg.human .branch-nav .count")).to_have_text("2/2")
