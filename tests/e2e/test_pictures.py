"""The README's pictures of the page: a desktop and a phone, light and dark, taken from a
real conversation (saved under tests/e2e/artifacts/readme-*.png; docs/screenshots/ holds
the copies the README shows)."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, idle, reply, send

pytestmark = pytest.mark.slow


def test_readme_pictures(page: Page, artifacts: Path) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    a = chat(page)
    send(a, "weather in Paris tomorrow")
    expect(reply(a, "The forecast for Paris tomorrow")).to_be_visible()
    idle(a)
    a.locator(".msg.ai").last.get_by_role("button", name="Regenerate").click()
    idle(a)
    expect(a.locator(".branch-nav .count")).to_have_text("2/2")
    send(a, "remind me to call mom tomorrow at 9")
    expect(a.locator(".interrupt-card")).to_contain_text("call mom")
    expect(page.locator(".call[data-reason='interrupt']")).to_have_count(1)
    page.locator(".versions .version.head").click()
    expect(page.locator(".inspector [data-field='interrupts']")).to_contain_text("call mom")

    theme = page.get_by_label("Theme")
    for scheme in ("light", "dark"):
        theme.select_option(scheme)
        page.screenshot(path=artifacts / f"readme-desktop-{scheme}.png")
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("body")).to_have_attribute("data-layout", "drawer")
    for scheme in ("light", "dark"):
        page.get_by_role("button", name="Chats").click()
        page.get_by_label("Theme").select_option(scheme)
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Chat", exact=True).click()
        page.screenshot(path=artifacts / f"readme-phone-{scheme}.png")
        page.get_by_role("button", name="Run view").click()
        page.screenshot(path=artifacts / f"readme-phone-run-{scheme}.png")
