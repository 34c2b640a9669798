"""Schemathesis against a running server's openapi.json (issue 8), with authentication off
and on: whatever a client sends, no 5xx, and documented answers match their schema.

Every operation gets data that fits its schema and data that does not, with random ids
and with the ids of a real thread, run and checkpoint (so that requests get past the
lookups). The example budget is small and derandomized so that CI stays within minutes
(`make fuzz` tries many more, new on every run); the thread stream is left out because it
follows a thread for as long as the client listens. (Schemathesis' own pytest plugin does
not run on this pytest: hypothesis drives its strategies directly here.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import given
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from tests.security.conftest import SecureServer, StartSecure, budget

# A client's timeout: a run waited on (or streamed) ends well within it.
TIMEOUT_S = 30
ENDLESS = {("GET", "/threads/{thread_id}/stream")}
BUDGET = budget(10)


@pytest.fixture
async def fuzzed(request: pytest.FixtureRequest, start_secure: StartSecure) -> SecureServer:
    """A server in the auth mode the test names."""
    return await start_secure(request.param)


async def real_ids(server: SecureServer) -> dict[str, str]:
    """A thread with a finished run, for path parameters that exist."""
    async with httpx.AsyncClient(
        base_url=server.url, headers=server.headers["alice"], timeout=TIMEOUT_S
    ) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        said = {"messages": [{"role": "user", "content": "hi"}]}
        run = await http.post(
            f"/threads/{thread_id}/runs", json={"assistant_id": "echo", "input": said}
        )
        run_id = run.json()["run_id"]
        await http.get(f"/threads/{thread_id}/runs/{run_id}/join")
        state = (await http.get(f"/threads/{thread_id}/state")).json()
    return {
        "thread_id": thread_id,
        "run_id": run_id,
        "checkpoint_id": state["checkpoint"]["checkpoint_id"],
        "assistant_id": "echo",
    }


def conforms_unless_selected(ctx: Any, response: Any, case: Any) -> bool | None:
    """The schema check, except for answers cut to the fields a client `select`ed: those
    are partial objects by design (as in LangGraph)."""
    body = case.body if isinstance(case.body, dict) else {}
    if body.get("select") or (case.query or {}).get("select"):
        return None
    return response_schema_conformance(ctx, response, case)  # type: ignore[no-any-return]


def fuzz(operation: Any, server: SecureServer, **fixed: Any) -> Callable[[], None]:
    """A hypothesis test of one operation: its cases are sent and their answers checked."""

    @BUDGET
    @given(case=operation.as_strategy(**fixed))
    def check(case: Any) -> None:
        case.call_and_validate(
            base_url=server.url,
            headers=server.headers["alice"],
            checks=[not_a_server_error, status_code_conformance, conforms_unless_selected],
            timeout=TIMEOUT_S,
        )

    return check  # type: ignore[no-any-return]


@pytest.mark.slow
# Each mode on one dialect: both modes and both dialects within CI's minutes.
@pytest.mark.parametrize(
    ("fuzzed", "database_url"), [("none", "sqlite"), ("api_key", "postgres")], indirect=True
)
async def test_no_server_errors_and_answers_match_the_schema(fuzzed: SecureServer) -> None:
    ids = await real_ids(fuzzed)
    schema = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    failures: list[str] = []
    tried = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in ENDLESS:
            continue
        named = {k: v for k, v in ids.items() if "{" + k + "}" in operation.path}
        variants: list[dict[str, Any]] = [
            {"generation_mode": GenerationMode.POSITIVE},
            {"generation_mode": GenerationMode.NEGATIVE},
        ]
        if named:
            variants.append({"generation_mode": GenerationMode.POSITIVE, "path_parameters": named})
        for fixed in variants:
            tried += 1
            try:
                fuzz(operation, fuzzed, **fixed)()
            except Unsatisfiable:  # nothing to get wrong: no parameters, no body
                continue
            except (Exception, BaseExceptionGroup) as exc:  # all are tried, all reported
                failures.append(f"{operation.label} {fixed}: {exc}")
    assert tried > 90
    assert not failures, "\n\n".join(failures)
