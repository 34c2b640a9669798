"""A run's `kwargs`: the request that made it, stored without the fields left at their
defaults and shown with them.

A run row is written every turn, so it keeps what the client chose and not the defaults
too. The defaults are the wire model's: reading a row back gives the whole `kwargs`, and
rows written whole read the same. The conversation tree reads a missing `input` or
`checkpoint_id` as null, their default.
"""

from __future__ import annotations

import copy
from typing import Any

from app.schemas.runs import RunCreate

# Fields of the request that are the run's columns, not its kwargs.
NOT_KWARGS = frozenset({"assistant_id", "metadata", "multitask_strategy", "if_not_exists"})
DEFAULTS: dict[str, Any] = {
    name: field.get_default(call_default_factory=True)
    for name, field in RunCreate.model_fields.items()
    if name not in NOT_KWARGS
}
# A run keeps its stream modes as a list.
DEFAULTS["stream_mode"] = ["values"]


def stored_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What a run row keeps of its request: the fields that differ from their default."""
    return {
        key: value for key, value in kwargs.items() if key not in DEFAULTS or value != DEFAULTS[key]
    }


def shown_kwargs(stored: dict[str, Any] | None) -> dict[str, Any]:
    """A run's kwargs as the API shows them: every field, defaults included (a copy of
    the defaults: the caller may change what it gets)."""
    return {**copy.deepcopy(DEFAULTS), **(stored or {})}
