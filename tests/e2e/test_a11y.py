"""Accessibility: an axe-core scan of every part of the page in both themes, on a desktop and
on a phone; the dark theme; the keyboard (visible focus, Escape); forms brought into view."""

import re
from collections.abc import Callable

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, composer, idle, reply, send
from tests.e2e.conftest import DESKTOP
from tests.e2e.graphs import SCRIPTED_GRAPHS

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}
DARK_BACKGROUND = "rgb(23, 28, 34)"  # --panel in the dark theme
LIGHT_BACKGROUND = "rgb(255, 255, 255)"


def assert_no_serious_violations(page: Page, where: str) -> None:
    results = Axe().run(page)
    serious = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not serious, f"{where}:\n{results.generate_report()}"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_on_a_desktop(
    open_page: Callable[..., Page], scheme: str
) -> None:
    page = open_page(color_scheme=scheme)
    a = chat(page)
    send(a, "weather in Paris tomorrow")
    expect(reply(a, "The forecast for Paris")).to_be_visible()
    idle(a)
    a.locator(".msg.ai").last.get_by_role("button", name="Regenerate").click()
    expect(a.locator(".branch-nav .count")).to_have_text("2/2")
    idle(a)
    send(a, "remind me to call mom tomorrow at 9")
    expect(a.locator(".interrupt-card")).to_be_visible()
    expect(page.locator(".call[data-reason='interrupt']")).to_have_count(1)
    page.locator(".versions .version.head").click()
    expect(page.locator(".inspector [data-field='interrupts']")).to_be_visible()
    page.get_by_role("button", name="Chat B beside").click()
    assert_no_serious_violations(page, f"desktop, {scheme}")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_on_a_phone(open_page: Callable[..., Page], scheme: str) -> None:
    page = open_page(color_scheme=scheme, viewport=PHONE, is_mobile=True, has_touch=True)
    a = chat(page)
    send(a, "remind me to call mom tomorrow at 9")
    expect(a.locator(".interrupt-card")).to_be_visible()
    assert_no_serious_violations(page, f"phone chat, {scheme}")
    page.get_by_role("button", name="Run view").click()
    expect(page.locator("svg.graph")).to_be_visible()
    assert_no_serious_violations(page, f"phone run view, {scheme}")
    page.get_by_role("button", name="Chats").click()
    expect(page.locator("#sidebar")).to_be_in_viewport()
    assert_no_serious_violations(page, f"phone chat list, {scheme}")


def test_dark_theme_follows_the_system_unless_picked(open_page: Callable[..., Page]) -> None:
    page = open_page(color_scheme="dark")
    panel = chat(page)
    expect(panel).to_have_css("background-color", DARK_BACKGROUND)
    theme = page.get_by_label("Theme")
    theme.select_option("light")
    expect(panel).to_have_css("background-color", LIGHT_BACKGROUND)
    page.reload()  # the choice is kept
    expect(chat(page)).to_have_css("background-color", LIGHT_BACKGROUND)
    page.get_by_label("Theme").select_option("system")
    expect(chat(page)).to_have_css("background-color", DARK_BACKGROUND)

    light = open_page(color_scheme="light")
    expect(chat(light)).to_have_css("background-color", LIGHT_BACKGROUND)
    light.get_by_label("Theme").select_option("dark")
    expect(chat(light)).to_have_css("background-color", DARK_BACKGROUND)


def test_keyboard_focus_escape_and_forms_in_view(open_page: Callable[..., Page]) -> None:
    page = open_page(viewport={**DESKTOP, "height": 560})
    a = chat(page)
    for text in ("hello there", "what can you do", "tell me more"):
        send(a, text)
        expect(reply(a, text)).to_be_visible()
        idle(a)

    # Message controls are fully visible, and show where the keyboard focus is.
    edit = a.locator(".msg.human").last.get_by_role("button", name="Edit")
    assert float(edit.evaluate("el => getComputedStyle(el).opacity")) == 1
    edit.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    expect(edit).to_be_focused()
    assert edit.evaluate("el => getComputedStyle(el).outlineStyle") == "solid"

    # Escape cancels an edit and gives the focus back.
    page.keyboard.press("Enter")
    box = a.get_by_label("Edited message")
    expect(box).to_be_focused()
    box.press("Escape")
    expect(a.locator(".editor")).to_have_count(0)
    expect(a.locator(".msg.human").last.get_by_role("button", name="Edit")).to_be_focused()

    # The approval card's edit form opens in sight, its first field focused.
    send(a, "remind me to water the plants tonight")
    card = a.locator(".interrupt-card")
    expect(card).to_be_visible()
    card.get_by_role("button", name="Edit").click()
    form = card.locator(".edit-form")
    expect(form.get_by_role("button", name="Save and approve")).to_be_in_viewport()
    expect(form.get_by_label("text")).to_be_focused()


def test_axe_on_a_laptop_screen_finds_nothing_serious(open_page: Callable[..., Page]) -> None:
    """At 1280x800 the run view's graph is cut to its column: it scrolls, so it must take
    the keyboard focus."""
    page = open_page(viewport={"width": 1280, "height": 800})
    a = chat(page)
    send(a, "weather in Paris tomorrow")
    expect(reply(a, "The forecast for Paris")).to_be_visible()
    idle(a)
    expect(page.locator(".rv-graph")).to_have_attribute("tabindex", "0")
    assert_no_serious_violations(page, "1280x800")


def test_a_phone_has_a_heading_and_the_chat_list_does_not_pop_the_keyboard(
    open_page: Callable[..., Page],
) -> None:
    page = open_page(viewport=PHONE, is_mobile=True, has_touch=True)
    results = Axe().run(page)
    ids = [v["id"] for v in results.response["violations"]]
    assert "page-has-heading-one" not in ids, results.generate_report()
    expect(page.get_by_role("heading", level=1)).to_have_count(1)

    page.get_by_role("button", name="Chats").click()
    expect(page.locator("#sidebar")).to_be_in_viewport()
    expect(page.get_by_role("button", name="+ New chat")).to_be_focused()
    expect(page.get_by_label("Search chats")).not_to_be_focused()


def test_a_skip_link_leads_to_the_message_box(page: Page) -> None:
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the message box")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(composer(chat(page))).to_be_focused()
    assert "#message" not in page.url


# What a screen reader reads out: text added inside a live region.
LIVE = "[aria-live]:not([aria-live='off']), [role=log], [role=status], [role=alert]"
RECORD_SAID = """live => {
    window.said = [];
    const inLive = (node) => (node.nodeType === 1 ? node : node.parentElement)?.closest(live);
    new MutationObserver((records) => {
        for (const record of records) {
            const nodes = record.type === "characterData" ? [record.target] : record.addedNodes;
            for (const node of nodes) {
                if (inLive(node) && node.textContent.trim()) window.said.push(node.textContent);
            }
        }
    }).observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def said(page: Page) -> list[str]:
    return page.evaluate("window.said.splice(0)")


# The scripted assistant (its `slow` reply streams in 40 pieces), in place of the default.
@pytest.mark.parametrize("graphs", [SCRIPTED_GRAPHS], ids=["scripted"])
def test_a_reply_is_said_once_whole_and_an_opened_chat_says_nothing(page: Page) -> None:
    a = chat(page)
    page.evaluate(RECORD_SAID, LIVE)
    send(a, "slow reply please")
    expect(reply(a, "word39")).to_be_visible()
    idle(a)
    text = a.locator(".msg.ai .bubble").last.inner_text()
    heard = said(page)
    # Once, whole, when the run is over: not each streamed piece, not its buttons.
    assert [t for t in heard if "word0" in t] == [f"Assistant: {text}"], heard
    assert not [t for t in heard if "Regenerate" in t or "Edit" in t], heard

    # Who speaks is said with each message.
    expect(a.locator(".msg.human").last).to_contain_text("You said: slow reply please")
    expect(a.locator(".msg.ai").last).to_contain_text("Assistant: word0")

    # Opening a chat does not read its history.
    page.get_by_role("button", name="+ New chat").click()
    send(a, "hello there")
    expect(reply(a, "Echo: hello there")).to_be_visible()
    idle(a)
    said(page)
    page.locator(".thread", has_text="slow reply please").click()
    expect(reply(a, "word39")).to_be_visible()
    expect(a.locator(".msg")).to_have_count(2)
    assert not [t for t in said(page) if "slow reply" in t or "word0" in t]


def test_a_question_and_notices_are_said_and_the_card_keeps_the_focus(page: Page) -> None:
    a = chat(page)
    page.evaluate(RECORD_SAID, LIVE)
    send(a, "remind me to call mom tomorrow at 9")
    card = a.locator(".interrupt-card")
    expect(card).to_be_visible()
    idle(a)
    assert [t for t in said(page) if "Set a reminder to call mom" in t], "the question is not said"

    # A message typed meanwhile: the notice is said (and the focus goes to the card).
    composer(a).fill("hello")
    composer(a).press("Enter")
    expect(a.locator(".notice")).to_have_text("Answer the question above first.")
    assert a.locator(".notice").evaluate("(el, live) => Boolean(el.closest(live))", LIVE)
    assert "Answer the question above first." in said(page)

    # Escape closes the Edit and Reject forms, back to the button that opened them.
    for name, field in (("Edit", "text"), ("Reject", "Reason")):
        card.get_by_role("button", name=name, exact=True).click()
        expect(card.get_by_label(field)).to_be_focused()
        page.keyboard.press("Escape")
        expect(card.get_by_label(field)).to_have_count(0)
        expect(card.get_by_role("button", name=name, exact=True)).to_be_focused()

    # Approve from the keyboard: the focus stays on a control, not on the page's body.
    approve = card.get_by_role("button", name="Approve")
    approve.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement !== document.body")
    expect(reply(a, "Done: I set a reminder to call mom")).to_be_visible()
    idle(a)
    expect(composer(a)).to_be_focused()


def test_names_made_of_a_message_cut_it_by_characters(page: Page) -> None:
    """A long message names its buttons by its start, on one line, never by half an
    emoji (a lone surrogate, which a screen reader reads as garbage)."""
    a = chat(page)
    text = "x" * 38 + "\U0001f600\U0001f600 and\nmore"
    send(a, text)
    idle(a)
    label = a.locator(".msg.human button").first.get_attribute("aria-label") or ""
    assert label == "Edit your message “" + "x" * 38 + "\U0001f600…”"


def test_a_version_opens_with_space_too(page: Page) -> None:
    a = chat(page)
    send(a, "hello there")
    idle(a)
    version = page.locator(".versions .version").first
    version.focus()
    page.keyboard.press("Space")
    expect(version).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator(".inspector [data-field='checkpoint']")).to_be_visible()


def test_landmarks_headings_and_names(open_page: Callable[..., Page]) -> None:
    page = open_page(viewport={"width": 1000, "height": 800})  # the tabs layout
    a = chat(page)
    expect(a.get_by_role("heading", level=2)).to_have_text("New chat")
    send(a, "hello there")
    idle(a)
    expect(a.get_by_role("heading", level=2)).to_have_text("hello there")
    expect(a.get_by_role("button", name="Edit your message “hello there”")).to_be_visible()
    expect(page.get_by_role("main")).to_have_count(1)
    page.get_by_role("button", name="Run view").click()
    expect(page.locator("svg.graph")).to_be_visible()
    expect(page.get_by_role("main")).to_have_count(1)
    expect(page.get_by_role("main")).to_contain_text("Checkpointer")
    page.get_by_role("button", name="Chat", exact=True).click()

    page.get_by_role("button", name="Chat B beside").click()
    for slot in ("A", "B"):
        panel = page.get_by_role("region", name=f"Chat {slot}", exact=True)
        expect(panel.get_by_role("textbox", name=f"Message to chat {slot}")).to_be_visible()
    results = Axe().run(page)
    ids = [v["id"] for v in results.response["violations"]]
    assert "skip-link" not in ids and "region" not in ids, results.generate_report()
