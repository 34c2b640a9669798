"""Markdown in the agent's replies: rendered, and safe against hostile model output."""

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.chat_page import chat, idle, reply, send

pytestmark = pytest.mark.slow

FRIENDLY = """\
Here is **bold**, *emphasis*, ~~struck~~, `inline code` and [a link](https://example.org/docs).

1. first
2. second
   - nested

```python
print("hello")
```

| city | high |
|:-----|-----:|
| Oslo |    9 |
"""

# Each payload, if it ran, would call alert() (or load something from another host).
HOSTILE = """\
<img src=x onerror="alert('img')">
<script>alert('script')</script>
<svg onload="alert('svg')"></svg><iframe src="javascript:alert('iframe')"></iframe>
<a href="javascript:alert('raw link')">raw link</a>
<style>body { display: none }</style>

[md link](javascript:alert('md-link')) [upper](JAVASCRIPT:alert('upper'))
[tab](java\tscript:alert('tab')) [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
[titled](https://example.org "x\\" onmouseover=\\"alert('title')") <javascript:alert('auto')>
![img md](javascript:alert('img-md')) ![pixel](https://tracker.invalid/pixel.gif)

```html
<img src=x onerror="alert('in code')">
```
"""

# What a reply may contain once drawn, and which attributes.
ALLOWED_TAGS = {
    "P", "H1", "H2", "H3", "H4", "H5", "H6", "HR", "BLOCKQUOTE", "UL", "OL", "LI", "DIV",
    "PRE", "CODE", "SPAN", "BUTTON", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "STRONG",
    "EM", "DEL", "A", "BR",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "class",
    "href",
    "title",
    "target",
    "rel",
    "type",
    "start",
    "style",
    "tabindex",
}


def thread_with_reply(base_url: str, text: str) -> str:
    """A thread whose last message is an AI reply with `text`, written as the model node."""
    thread = httpx.post(f"{base_url}/threads", json={"metadata": {"graph_id": "agent"}})
    thread_id = thread.json()["thread_id"]
    messages = [
        {"type": "human", "content": "show me", "id": "h1"},
        {"type": "ai", "content": text, "id": "a1"},
    ]
    update = {"values": {"messages": messages}, "as_node": "model"}
    httpx.post(f"{base_url}/threads/{thread_id}/state", json=update).raise_for_status()
    return thread_id


def trap(page: Page, base_url: str) -> tuple[list[str], list[str]]:
    """Record every alert() and every request to another host (none may happen)."""
    alerts: list[str] = []
    outside: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    page.expose_function("reportAlert", lambda message: alerts.append(message))
    page.add_init_script("window.alert = (m) => window.reportAlert(String(m));")

    def route(route):
        if route.request.url.startswith(base_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    return alerts, outside


def drawn(page: Page) -> dict:
    """Every element and attribute inside the replies' markdown."""
    return page.evaluate(
        """() => {
          const tags = new Set(), attributes = new Set(), hrefs = [];
          for (const el of document.querySelectorAll(".markdown *")) {
            tags.add(el.tagName);
            for (const a of el.attributes) attributes.add(a.name);
            if (el.hasAttribute("href")) hrefs.push(el.getAttribute("href"));
          }
          return {tags: [...tags], attributes: [...attributes], hrefs};
        }"""
    )


def test_markdown_is_rendered(open_page: Callable[..., Page], base_url: str) -> None:
    thread_id = thread_with_reply(base_url, FRIENDLY)
    page = open_page(f"/#/threads/{thread_id}")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    answer = chat(page).locator(".msg.ai .markdown")
    expect(answer.locator("strong")).to_have_text("bold")
    expect(answer.locator("em")).to_have_text("emphasis")
    expect(answer.locator("del")).to_have_text("struck")
    expect(answer.locator("p code")).to_have_text("inline code")
    expect(answer.locator("ol > li")).to_have_count(2)
    expect(answer.locator("ol li ul li")).to_have_text("nested")
    expect(answer.locator("th").last).to_have_css("text-align", "right")
    link = answer.get_by_role("link", name="a link")
    expect(link).to_have_attribute("href", "https://example.org/docs")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")

    code = answer.locator(".code-block")
    expect(code.locator("pre")).to_have_text('print("hello")')
    code.get_by_role("button", name="Copy").click()
    expect(code.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == 'print("hello")'


def test_hostile_markdown_stays_text(open_page: Callable[..., Page], base_url: str) -> None:
    thread_id = thread_with_reply(base_url, HOSTILE)
    page = open_page("/")
    alerts, outside = trap(page, base_url)
    page.goto(f"/#/threads/{thread_id}")
    page.reload()
    a = chat(page)
    answer = a.locator(".msg.ai .markdown")
    expect(answer).to_contain_text("<img src=x onerror=\"alert('img')\">")
    expect(answer).to_contain_text("<script>alert('script')</script>")

    found = drawn(page)
    assert set(found["tags"]) <= ALLOWED_TAGS, found["tags"]
    assert set(found["attributes"]) <= ALLOWED_ATTRIBUTES, found["attributes"]
    assert all(href.startswith("https://") for href in found["hrefs"]), found["hrefs"]
    # The unsafe links are plain text; clicking them does nothing.
    for label in ("md link", "upper", "data", "img md"):
        answer.locator(".unlinked", has_text=label).click()

    # The same through a streamed reply: the echo of hostile text is text.
    send(a, "<img src=x onerror=\"alert('streamed')\"> **bold** [x](javascript:alert('s'))")
    expect(reply(a, "alert('streamed')")).to_contain_text(
        "<img src=x onerror=\"alert('streamed')\">"
    )
    idle(a)
    expect(a.locator(".msg.ai").last.locator("strong")).to_have_text("bold")
    assert set(drawn(page)["tags"]) <= ALLOWED_TAGS

    page.wait_for_timeout(300)
    assert alerts == []
    assert outside == []
