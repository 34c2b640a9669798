"""Deprecation warnings that say when a feature was deprecated and when it goes.

The versions are LangGraph's: a ported program that filters or tests for these classes
(`warnings.filterwarnings("error", category=LangGraphDeprecatedSinceV10)`) sees the same
classes, versions and text from the engine as from LangGraph.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")

__all__ = [
    "LangGraphDeprecatedSinceV05",
    "LangGraphDeprecatedSinceV10",
    "LangGraphDeprecatedSinceV11",
    "LangGraphDeprecationWarning",
]


class LangGraphDeprecationWarning(DeprecationWarning):
    """A deprecation with the version it started in (`since`) and the version that
    removes it (`expected_removal`, by default the next major one)."""

    message: str
    since: tuple[int, int]
    expected_removal: tuple[int, int]

    def __init__(
        self,
        message: str,
        *args: object,
        since: tuple[int, int],
        expected_removal: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message, *args)
        self.message = message.rstrip(".")
        self.since = since
        self.expected_removal = (
            expected_removal if expected_removal is not None else (since[0] + 1, 0)
        )

    def __str__(self) -> str:
        since, removal = self.since, self.expected_removal
        return (
            f"{self.message}. Deprecated in LangGraph V{since[0]}.{since[1]}"
            f" to be removed in V{removal[0]}.{removal[1]}."
        )


class LangGraphDeprecatedSinceV05(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 0.5, removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(0, 5), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV10(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.0, removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 0), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV11(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.1, removed in 3.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 1), expected_removal=(3, 0))


def warn_renamed(
    old: str, new: str, since: type[LangGraphDeprecationWarning], *, stacklevel: int = 3
) -> None:
    """Warn of a parameter still taken under the old name LangGraph deprecated."""
    import warnings

    warnings.warn(
        f"`{old}` is deprecated and will be removed. Please use `{new}` instead.",
        since,
        stacklevel=stacklevel,
    )


def renamed(
    old: str,
    given: T | None,
    new: str,
    value: T | None,
    since: type[LangGraphDeprecationWarning],
    *,
    stacklevel: int = 4,
) -> T | None:
    """The value of parameter `new`: its own, else one `given` under its deprecated old
    name (which warns, as LangGraph does)."""
    if given is None:
        return value
    warn_renamed(old, new, since, stacklevel=stacklevel)
    return given if value is None else value
