"""LangGraph's own objects handed to the engine by a half-ported program.

The engine never imports `langgraph`, so its Command, Send, savers and stores would be
taken for plain values and fail far from the cause; they are refused where they enter.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_engine_object"]

_HOMES = {
    "Command": "engine.types",
    "Send": "engine.types",
    "Interrupt": "engine.types",
    "InMemorySaver": "engine.checkpoint.memory",
    "MemorySaver": "engine.checkpoint.memory",
    "InMemoryStore": "engine.store.memory",
    "InMemoryCache": "engine.cache.memory",
    "StateGraph": "engine.graph",
    "CompiledStateGraph": "engine.graph",
}


def check_engine_object(value: Any, where: str) -> None:
    """Raise a TypeError naming the engine's twin when `value` comes from langgraph."""
    values = value if isinstance(value, list) else [value]
    for item in values:
        module = type(item).__module__
        if module == "langgraph" or module.startswith("langgraph."):
            name = type(item).__name__
            home = _HOMES.get(name, "engine")
            raise TypeError(
                f"{where} is LangGraph's {name} ({module}); this engine does not run "
                f"LangGraph's objects: import {name} from {home} instead of langgraph."
            )
