"""A failed task's saved write: its repr, as LangGraph saves it, read back as an error of
the same class name and message; the dict that earlier versions saved still reads."""

from __future__ import annotations

from typing import Any

import pytest

from engine.pregel.loop import error_text, restore_error


@pytest.mark.parametrize(
    ("saved", "name", "message", "shown"),
    [
        ("ValueError('bad input')", "ValueError", "bad input", "ValueError('bad input')"),
        ('RuntimeError("it\'s\\nbroken")', "RuntimeError", "it's\nbroken", None),
        ("TimeoutError()", "TimeoutError", "", None),
        ("MyError(1, 2)", "MyError", "(1, 2)", None),
        ("not a repr", "TaskFailure", "not a repr", None),
        (
            {"error": "KeyError", "message": "'k'", "repr": "KeyError('k')"},
            "KeyError",
            "'k'",
            "KeyError('k')",
        ),
        ({"error": "OSError", "message": "disk"}, "OSError", "disk", "OSError('disk')"),
    ],
)
def test_a_saved_failure_reads_back(saved: Any, name: str, message: str, shown: str | None) -> None:
    error = restore_error(saved)
    assert (type(error).__name__, str(error)) == (name, message)
    assert error_text(saved) == (saved if shown is None else shown)
