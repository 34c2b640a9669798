"""For tests that run the same thing on the engine and on LangGraph (the oracle) and
compare what came out: each side's own classes become plain values, and an error is an
outcome like any other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Normalize = Callable[[Any], Any]


def in_containers(value: Any, normalize: Normalize) -> Any:
    """`value` with `normalize` applied to what its dicts, lists and tuples hold (tuples
    become lists, so both sides' sequences compare equal); any other value as it is."""
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    return value


def outcome(run: Callable[[], Any], normalize: Normalize) -> Any:
    """What `run()` returns, normalized, or ("raised", its exception's class name): the
    error a caller sees is part of the behaviour."""
    try:
        return normalize(run())
    except Exception as e:
        return ("raised", type(e).__name__)
