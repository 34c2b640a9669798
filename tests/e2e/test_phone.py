"""The page on small screens: nothing cut off from 360 px up, and the whole chat on a phone
(send, approve, branches), with the chat list as a drawer and the run view as a tab."""

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, composer, idle, reply, send

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}


def assert_within(page: Page, width: int, height: int) -> None:
    """No sideways scrolling, and the composer fully on screen."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    a = chat(page)
    for control in (composer(a), a.get_by_role("button", name="Send")):
        box = control.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
        assert box["y"] >= 0 and box["y"] + box["height"] <= height, box


@pytest.mark.parametrize(
    ("width", "height", "layout"),
    [(360, 740, "drawer"), (768, 1024, "tabs"), (1024, 768, "tabs"), (1440, 900, "wide")],
)
def test_nothing_is_cut_off(
    open_page: Callable[..., Page], width: int, height: int, layout: str
) -> None:
    page = open_page(viewport={"width": width, "height": height})
    expect(page.locator("body")).to_have_attribute("data-layout", layout)
    a = chat(page)
    send(a, "hello there")
    expect(reply(a, 'You said: "hello there"')).to_be_visible()
    idle(a)
    assert_within(page, width, height)

    # The run view is on screen, or one click away.
    if layout != "wide":
        page.get_by_role("button", name="Run view").click()
    expect(page.locator("svg.graph [data-node='model']")).to_be_visible()
    expect(page.locator(".call[data-reason='END']")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    calls = page.locator(".calls").bounding_box()
    assert calls is not None and calls["x"] + calls["width"] <= width

    # So is the chat list (in a drawer on a phone).
    if layout == "drawer":
        page.get_by_role("button", name="Chats").click()
    expect(page.locator(".thread")).to_have_count(1)
    expect(page.locator(".thread").first).to_be_in_viewport()


def test_the_whole_chat_on_a_phone(open_page: Callable[..., Page], artifacts: Path) -> None:
    page = open_page(viewport=PHONE, is_mobile=True, has_touch=True)
    a = chat(page)

    # A reminder, approved on the card.
    send(a, "remind me to call mom tomorrow at 9")
    card = a.locator(".interrupt-card")
    expect(card).to_contain_text("Set a reminder to call mom, due tomorrow at 9.")
    assert_within(page, PHONE["width"], PHONE["height"])
    page.screenshot(path=artifacts / "phone-01-approval.png")
    card.get_by_role("button", name="Approve").click()
    expect(reply(a, "Done: I set a reminder to call mom (tomorrow at 9).")).to_be_visible()
    idle(a)

    # A second turn, regenerated: two branches, switched with the arrows. The controls
    # are there without hovering (a touch screen has no hover).
    send(a, "weather in Paris tomorrow")
    expect(reply(a, "The forecast for Paris tomorrow")).to_be_visible()
    idle(a)
    paris = a.locator(".msg.ai", has_text="The forecast for Paris tomorrow")
    regenerate = paris.get_by_role("button", name="Regenerate")
    expect(regenerate).to_be_visible()
    assert float(regenerate.evaluate("el => getComputedStyle(el).opacity")) == 1
    regenerate.tap()
    idle(a)
    nav = a.locator(".msg.ai .branch-nav")
    expect(nav.locator(".count")).to_have_text("2/2")
    nav.get_by_role("button", name="Previous branch").tap()
    expect(nav.locator(".count")).to_have_text("1/2")
    assert_within(page, PHONE["width"], PHONE["height"])
    page.screenshot(path=artifacts / "phone-02-branches.png")

    # The run view, one tap away: the calls of both turns and the regenerate.
    page.get_by_role("button", name="Run view").tap()
    expect(page.locator("svg.graph")).to_be_visible()
    expect(page.locator(".call .kind", has_text="regenerate")).to_be_visible()
    page.screenshot(path=artifacts / "phone-03-run-view.png")
    page.get_by_role("button", name="Chat", exact=True).tap()

    # The chat list slides in; a new chat, then back to the first one from the list.
    page.get_by_role("button", name="Chats").tap()
    drawer = page.locator("#sidebar")
    expect(drawer).to_be_in_viewport()
    page.screenshot(path=artifacts / "phone-04-drawer.png")
    drawer.get_by_role("button", name="New chat").tap()
    expect(drawer).not_to_be_in_viewport()
    expect(a.locator(".msg")).to_have_count(0)
    page.get_by_role("button", name="Chats").tap()
    page.keyboard.press("Escape")  # Escape closes the drawer too
    expect(drawer).not_to_be_in_viewport()
    page.get_by_role("button", name="Chats").tap()
    drawer.locator(".thread", has_text="remind me to call mom").tap()
    expect(reply(a, "Done: I set a reminder to call mom")).to_be_visible()
    expect(drawer).not_to_be_in_viewport()
