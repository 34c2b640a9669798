"""A call's config: what the caller passed, merged with the Runnable it runs inside,
and the context its nodes see."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import CONFIG_KEYS, var_child_runnable_config
from langchain_core.runnables.config import merge_configs as _langchain_merge

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "coerce_context",
    "ensure_configurable",
    "layered",
    "loose_keys",
    "max_concurrency",
    "merge_configs",
    "recursion_limit",
]

# LangGraph's default: effectively unbounded, so callers set their own limit (the server
# does). Read once, at import, from the variable LangGraph reads it from.
DEFAULT_RECURSION_LIMIT = int(os.environ.get("LANGGRAPH_DEFAULT_RECURSION_LIMIT", "10007"))


def merge_configs(config: RunnableConfig | dict[str, Any] | None) -> dict[str, Any]:
    """The caller's config over the one of the Runnable this call runs inside (a graph
    invoked by a tool or a chain inherits its callbacks, tags, metadata and recursion
    limit)."""
    outer = var_child_runnable_config.get() or {}
    # No default `recursion_limit` here: a node's config shows one only if the caller
    # set it, as in LangGraph (the loop falls back to the default itself).
    merged: dict[str, Any] = {}
    for key in ("callbacks", "tags", "metadata", "recursion_limit"):
        if outer.get(key):
            merged[key] = outer[key]
    for key, value in (config or {}).items():
        if key == "callbacks" and value and merged.get("callbacks"):
            # The caller's handlers join the outer run's: the graph's run stays nested
            # under it, and its handlers see it too (LangChain's merge).
            merged["callbacks"] = _langchain_merge(
                {"callbacks": merged["callbacks"]}, {"callbacks": value}
            )["callbacks"]
        elif key == "tags" and merged.get("tags"):
            merged["tags"] = list(dict.fromkeys([*merged["tags"], *(value or ())]))
        elif key == "metadata" and merged.get("metadata"):
            merged["metadata"] = {**merged["metadata"], **(value or {})}
        elif value is not None or key not in merged:
            merged[key] = value
    return merged


def loose_keys(config: RunnableConfig | dict[str, Any] | None) -> dict[str, Any]:
    """The top-level keys of `config` that no RunnableConfig has, but those without a
    value (None, an empty list, tuple or dict): LangGraph's run path takes them as
    `configurable` values, as LangChain's `ensure_config` does."""
    return {
        key: value
        for key, value in (config or {}).items()
        if key not in CONFIG_KEYS and _has_value(value)
    }


def _has_value(value: Any) -> bool:
    # Tested by type, not by equality: an array's `==` gives no bool.
    return bool(value) if isinstance(value, list | tuple | dict) else value is not None


def ensure_configurable(config: RunnableConfig | dict[str, Any] | None) -> dict[str, Any]:
    """`config` with its loose keys moved into its `configurable`, over any of the same
    name there (and the empty ones dropped), as LangGraph takes a call's config."""
    config = config or {}
    moved = loose_keys(config)
    out = {key: value for key, value in config.items() if key in CONFIG_KEYS}
    if moved:
        out["configurable"] = {**(config.get("configurable") or {}), **moved}
    return out


def layered(*configs: RunnableConfig | dict[str, Any] | None) -> RunnableConfig:
    """Configs merged, later ones over earlier ones (a graph's `with_config` and the
    call's), as LangChain merges them, but for the tags: those of each config in turn,
    in their order (LangChain sorts them), as LangGraph lists them to a graph's nodes.
    No tags at all leaves the key out."""
    merged = _langchain_merge(*configs)  # type: ignore[arg-type]
    tags = [tag for config in configs if config for tag in config.get("tags") or ()]
    if tags:
        merged["tags"] = tags
    else:
        merged.pop("tags", None)
    return merged


def recursion_limit(config: dict[str, Any]) -> int:
    """The config's `recursion_limit`: how many steps a call may take (LangGraph's
    default when unset). Anything but a positive int is refused before the run, as
    LangGraph refuses it."""
    value = config.get("recursion_limit")
    if type(value) is int and value < 1:
        # LangGraph's text for the one case it checks; other bad values get ours below.
        raise ValueError("recursion_limit must be at least 1")
    limit = _positive_int(config, "recursion_limit")
    return DEFAULT_RECURSION_LIMIT if limit is None else limit


def max_concurrency(config: dict[str, Any]) -> int | None:
    """The config's `max_concurrency`: how many of a step's tasks may run at once (None
    for no limit). Anything but a positive int is refused, not ignored."""
    return _positive_int(config, "max_concurrency")


def _positive_int(config: dict[str, Any], key: str) -> int | None:
    value = config.get(key)
    if value is not None and (type(value) is not int or value < 1):
        raise ValueError(f"{key} must be a positive int or None, not {value!r}")
    return value


def coerce_context(schema: Any, context: Any) -> Any:
    """A dict given for a dataclass or pydantic `context_schema` becomes an instance
    (its validation errors reach the caller); anything else is passed as it is."""
    if context is None or schema is None:
        return context
    is_class = isinstance(schema, type) and (
        dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields")
    )
    if isinstance(context, dict) and is_class:
        return schema(**context)
    return context
