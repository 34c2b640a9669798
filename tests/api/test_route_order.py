"""The runs' routes are matched first (every chat turn is one of them), and that takes
no request from any other route: no path another router serves is one of theirs."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute
from starlette.routing import Match

from app.api import assistants, crons, metrics, reminders, runs, state, store, system, threads
from app.config import Settings
from app.main import create_app

OTHERS = [system, metrics, assistants, threads, state, store, crons, reminders]
DOCS = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")  # FastAPI's, first


def api_routes(module: object) -> list[APIRoute]:
    return [r for r in module.router.routes if isinstance(r, APIRoute)]  # type: ignore[attr-defined]


def test_no_other_route_is_taken_by_a_run_route() -> None:
    for module in OTHERS:
        for route in api_routes(module):
            path = re.sub(r"\{[^}]+\}", "some-id", route.path)  # a path it serves
            for method in route.methods:
                taken = [
                    run.path
                    for run in api_routes(runs)
                    if run.path_regex.fullmatch(path) and method in run.methods
                ]
                assert not taken, (method, route.path, taken)


def test_a_turn_is_matched_by_the_first_router() -> None:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///./unused.db"))
    assert [getattr(r, "path", None) for r in app.router.routes[: len(DOCS)]] == list(DOCS)
    for path in ["/threads/some-id/runs/wait", "/threads/some-id/runs/stream", "/runs/wait"]:
        scope = {"type": "http", "method": "POST", "path": path, "root_path": "", "app": app}
        found = [route.matches({**scope, "headers": []})[0] for route in app.router.routes]
        assert found.index(Match.FULL) == len(DOCS), path
