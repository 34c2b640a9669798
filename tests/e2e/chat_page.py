"""What the end-to-end tests do on the page, as a person would: find a chat, type in it,
wait for the reply."""

import re

from playwright.sync_api import Locator, Page, expect


def chat(page: Page, slot: str = "A") -> Locator:
    return page.locator(f".panel[data-slot='{slot}']")


def composer(panel: Locator) -> Locator:
    """The message box: "Message to chat A" (not "Edited message", nor "Edit your message
    …", a button)."""
    return panel.get_by_role("textbox", name=re.compile(r"^Message"))


def send(panel: Locator, text: str) -> None:
    box = composer(panel)
    box.fill(text)
    box.press("Enter")


def reply(panel: Locator, text: str) -> Locator:
    return panel.locator(".msg.ai .bubble", has_text=text)


def idle(panel: Locator) -> None:
    """The run is over (Send is back) and the final state is drawn."""
    expect(panel.get_by_role("button", name="Send", exact=True)).to_be_visible()


def from_bottom(panel: Locator) -> int:
    """How far (px) the conversation is scrolled up from its end."""
    return panel.locator(".scroll").evaluate(
        "el => Math.round(el.scrollHeight - el.clientHeight - el.scrollTop)"
    )


def wait_until_grown(panel: Locator, by: int) -> None:
    """Wait for the conversation to grow by `by` px (a reply streaming on)."""
    scroller = panel.locator(".scroll").element_handle()
    target = scroller.evaluate("el => el.scrollHeight") + by
    panel.page.wait_for_function(
        "([el, target]) => el.scrollHeight >= target", arg=[scroller, target], timeout=20_000
    )
