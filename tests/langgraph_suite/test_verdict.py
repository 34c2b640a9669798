"""The verdict's rules on made-up outcomes: what counts as listed, stale or malformed."""

from __future__ import annotations

from pathlib import Path

from .harness import ARCHIVES, SECTION, Run, fold, judge, read_listed

FILE = "langgraph-prebuilt/tests/test_x.py"


def make_run(**outcomes: str) -> Run:
    run = Run(ARCHIVES["langgraph-prebuilt"], ["tests/test_x.py"], Path("x.log"))
    run.outcomes = {f"{FILE}::{name}": outcome for name, outcome in outcomes.items()}
    return run


def test_read_listed_takes_bullets_of_its_section_only() -> None:
    text = "\n".join(
        [
            "- `elsewhere.py::test_a`: not this section",
            SECTION,
            "Prose is ignored.",
            f"- `{FILE}::test_a[p]`: a reason",
            f"- `{FILE}::*`: the whole file",
            "- test_b without backticks",
            f"- `{FILE}::test_a[p]`: again",
            "## Next section",
            f"- `{FILE}::test_c`: not this section either",
        ]
    )
    entries, errors = read_listed(text)
    assert entries == {f"{FILE}::test_a[p]": "a reason", f"{FILE}::*": "the whole file"}
    assert errors == [
        "not a `test id`: reason bullet: - test_b without backticks",
        f"listed twice: {FILE}::test_a[p]",
    ]


def test_unlisted_failures_and_stale_entries_fail_the_verdict() -> None:
    run = make_run(test_a="failed", test_b="failed", test_c="passed", test_d="skipped")
    listed = {
        f"{FILE}::test_a": "listed failure",
        f"{FILE}::test_c": "passes now",
        f"{FILE}::test_gone": "renamed upstream",
        "langgraph/tests/test_other.py::test_e": "file not in the run",
    }
    assert judge([run], listed, whole_suite=True) == [
        f"fails and is not listed: {FILE}::test_b",
        f"stale entry, the test passed: {FILE}::test_c",
        f"stale entry, no such test: {FILE}::test_gone",
        "stale entry, its file is not in SUITE: langgraph/tests/test_other.py::test_e",
    ]
    assert judge([run], {}, whole_suite=False)[0].startswith("fails and is not listed")


def test_a_file_wildcard_covers_its_import_error_until_nothing_fails() -> None:
    broken = make_run()
    broken.outcomes[FILE] = "failed"
    listed = {f"{FILE}::*": "needs syrupy", f"{FILE}::test_a": "known"}
    assert judge([broken], listed, whole_suite=True) == []
    assert judge([make_run(test_a="passed")], {f"{FILE}::*": "fixed"}, whole_suite=True) == [
        f"stale entry, nothing in its file fails: {FILE}::*"
    ]


def test_fold_keeps_the_worst_phase() -> None:
    run = make_run()
    lines = [
        '{"nodeid": "tests/test_x.py::a", "when": "call", "outcome": "passed", "message": ""}',
        '{"nodeid": "tests/test_x.py::a", "when": "teardown", "outcome": "failed", "message": "E"}',
        '{"nodeid": "tests/test_x.py::b", "when": "setup", "outcome": "skipped", "message": "why"}',
        '{"nodeid": "tests/test_x.py::c", "when": "setup", "outcome": "passed", "message": ""}',
        '{"nodeid": "tests/test_x.py::c", "when": "call", "outcome": "passed", "message": ""}',
    ]
    fold(run, lines)
    assert run.outcomes == {f"{FILE}::a": "failed", f"{FILE}::b": "skipped", f"{FILE}::c": "passed"}
    assert run.messages == {f"{FILE}::a": "E", f"{FILE}::b": "why"}


def test_a_file_with_no_outcome_fails_the_verdict() -> None:
    """Tests that ran under other node ids (a moved root) must not read as a clean run."""
    assert judge([make_run()], {}, whole_suite=False) == [f"no outcome was recorded for {FILE}"]
