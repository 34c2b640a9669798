"""The graphs the server hosts: loaded from `THREADLINE_GRAPHS`, compiled on the SQL saver.

Each graph gets a system assistant whose id is derived from the graph id, so clients
can address an assistant before anyone created one.
"""

from __future__ import annotations

import importlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine import CompiledGraph, StateGraph
from engine.checkpoint.base import BaseCheckpointSaver

if TYPE_CHECKING:
    from app.db.models import Assistant

SYSTEM_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
DEFAULT_GRAPHS = {"agent": "app.agents.reminders:graph"}


class GraphConfigError(RuntimeError):
    """THREADLINE_GRAPHS names something that is not a graph."""


def system_assistant_id(graph_id: str) -> str:
    return str(uuid.uuid5(SYSTEM_NAMESPACE, graph_id))


def parse_spec(raw: str | None) -> dict[str, str]:
    if not raw:
        return dict(DEFAULT_GRAPHS)
    try:
        spec = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise GraphConfigError(f"THREADLINE_GRAPHS is not JSON: {exc}") from None
    if not isinstance(spec, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in spec.items()
    ):
        raise GraphConfigError(
            'THREADLINE_GRAPHS must be a JSON object {"graph_id": "package.module:attribute"}.'
        )
    return spec


ResumeCheck = Callable[[Any, Any], None]


def load_graph(path: str, saver: BaseCheckpointSaver) -> tuple[CompiledGraph, ResumeCheck | None]:
    """The compiled graph, and the module's `check_resume(interrupt_value, resume)` if it
    has one: a graph can refuse a malformed answer before the server starts a run."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise GraphConfigError(f"{path!r} is not of the form 'package.module:attribute'.")
    try:
        module = importlib.import_module(module_name)
        target = getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise GraphConfigError(f"Cannot load graph {path!r}: {exc}") from None
    return _compiled(target, path, saver), getattr(module, "check_resume", None)


def _compiled(target: Any, path: str, saver: BaseCheckpointSaver) -> CompiledGraph:
    if isinstance(target, StateGraph):
        return target.compile(checkpointer=saver)
    if isinstance(target, CompiledGraph):
        if target.checkpointer not in (None, True):
            raise GraphConfigError(
                f"Graph {path!r} was compiled with its own checkpointer; the server attaches "
                "its own, so compile it without one (or export the builder)."
            )
        return target.copy(checkpointer=saver)
    raise GraphConfigError(f"{path!r} is a {type(target).__name__}, not a StateGraph.")


@dataclass
class GraphRegistry:
    graphs: dict[str, CompiledGraph]
    resume_checks: dict[str, ResumeCheck] = field(default_factory=dict)
    # The system assistants' rows by id, read once: nobody may change them (see
    # app/services/assistants.py), so every run need not read its assistant again.
    system_rows: dict[str, Assistant] = field(default_factory=dict)

    @classmethod
    def load(cls, spec: dict[str, str], saver: BaseCheckpointSaver) -> GraphRegistry:
        registry = cls({})
        for graph_id, path in spec.items():
            graph, check = load_graph(path, saver)
            registry.graphs[graph_id] = graph
            if check is not None:
                registry.resume_checks[graph_id] = check
        return registry

    def get(self, graph_id: str) -> CompiledGraph | None:
        return self.graphs.get(graph_id)

    def system_assistants(self) -> dict[str, str]:
        """graph id -> system assistant id."""
        return {graph_id: system_assistant_id(graph_id) for graph_id in self.graphs}
