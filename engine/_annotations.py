"""Reading a state key's annotation through the qualifiers a TypedDict wraps it in."""

from __future__ import annotations

import typing
from typing import Any, get_args, get_origin

import typing_extensions

# `Required[...]` and `NotRequired[...]` say whether a TypedDict key must be there; the
# annotation they wrap carries the reducer or the channel. (LangGraph reads no reducer
# under `ReadOnly[...]`, so neither does the engine.)
_QUALIFIERS = frozenset(
    {typing.Required, typing.NotRequired, typing_extensions.Required, typing_extensions.NotRequired}
)


def unwrapped(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """The type inside any `Annotated`, `Required` and `NotRequired`, and
    the `Annotated` extras met on the way: `NotRequired[Annotated[list, add]]` is a list
    folded with `add`, as `Annotated[list, add]` is."""
    extras: tuple[Any, ...] = ()
    while True:
        origin = get_origin(annotation)
        if origin in _QUALIFIERS:
            annotation = get_args(annotation)[0]
        elif origin is typing.Annotated:
            extras += annotation.__metadata__
            annotation = annotation.__origin__
        else:
            return annotation, extras
