"""The run view's versions of a subgraph: drawn below the version whose task ran it, each
one's state a click away."""

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.slow


def test_subgraph_versions_under_the_node_that_ran_them(
    open_page: Callable[..., Page], base_url: str, artifacts: Path
) -> None:
    thread_id = httpx.post(f"{base_url}/threads", json={}).json()["thread_id"]
    turn = {"assistant_id": "planner", "input": {"messages": [{"role": "user", "content": "go"}]}}
    httpx.post(f"{base_url}/threads/{thread_id}/runs/wait", json=turn).raise_for_status()

    page = open_page(f"/#/threads/{thread_id}")
    row = page.locator(".row-scroll svg.versions")
    ran_writer = row.locator(".version:not(.sub)", has=page.locator("text.due", has_text="writer"))
    expect(ran_writer).to_have_count(1)
    inner = row.locator(".version.sub")
    # The writer's own versions: its input, its start, after outline, after draft.
    expect(inner).to_have_count(4)
    expect(row.locator(".sub-label")).to_have_text("writer")
    namespace = inner.first.get_attribute("data-ns") or ""
    assert namespace.startswith("writer:")
    # Below the version that ran it, starting at its x.
    anchor = ran_writer.locator("circle").bounding_box()
    first = inner.first.locator("circle").bounding_box()
    assert anchor and first
    assert first["y"] > anchor["y"] and first["x"] > anchor["x"]

    inner.last.click()
    inspector = page.locator(".inspector")
    expect(inspector.locator("[data-field='subgraph']")).to_contain_text(namespace)
    expect(inspector.locator("[data-field='values']")).to_contain_text("draft")
    expect(inspector.locator("[data-field='next']")).to_contain_text("END")
    page.screenshot(path=artifacts / "subgraph-versions.png")
