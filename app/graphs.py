"""The graphs the server hosts, compiled on the SQL saver: THREADLINE_GRAPHS, else those of
the project's `langgraph.json` (`app.project`), else the default assistant.

A graph is named as `package.module:attribute` or `path/to/file.py:attribute` (relative
to the working directory, or to the project's folder). The attribute is a graph (a
`StateGraph` or a compiled graph, which gets the server's checkpointer), or a factory
that makes one: a function (sync or async) of no argument or of the run's config, as
LangGraph's server takes them. A factory is called once at startup (its graph is drawn,
its schemas shown, its threads' state read) and again for every run, with the run's
config, so an assistant's `configurable` can pick a model or a prompt.

Each graph gets a system assistant whose id is derived from the graph id, so clients
can address an assistant before anyone created one.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import sys
import typing
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import PydanticUserError, TypeAdapter, ValidationError

from app.errors import Invalid, validation_problems
from app.project import Project
from engine import CompiledGraph, StateGraph
from engine.checkpoint.base import BaseCheckpointSaver
from engine.graph.schema import is_root

if TYPE_CHECKING:
    from app.config import Settings
    from app.db.models import AssistantRow

SYSTEM_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
DEFAULT_GRAPHS = {"agent": "app.agents.reminders:graph"}


class GraphConfigError(RuntimeError):
    """A graph spec names something that is not a graph, or that fails to load."""


def system_assistant_id(graph_id: str) -> str:
    return str(uuid.uuid5(SYSTEM_NAMESPACE, graph_id))


def graph_source(settings: Settings) -> tuple[dict[str, str], Path]:
    """The graphs to serve, and the folder their file paths start from."""
    if settings.graphs:
        return json.loads(settings.graphs), Path.cwd()
    if settings.config_file:
        project = Project.read(Path(settings.config_file))
        return project.graphs, project.folder
    return dict(DEFAULT_GRAPHS), Path.cwd()


def graph_descriptions(settings: Settings) -> dict[str, str]:
    """The served graphs' descriptions: a project's, unless THREADLINE_GRAPHS names the
    graphs."""
    if settings.graphs or not settings.config_file:
        return {}
    return Project.read(Path(settings.config_file)).descriptions


def check_imports(settings: Settings) -> None:
    """Import each graph's module and find its attribute, a graph or a factory, so that a
    graph that cannot be loaded stops `serve` or `worker` with one line before anything
    starts (what a factory makes is known only once it runs). Raises GraphConfigError."""
    spec, base = graph_source(settings)
    for path in spec.values():
        _, target = load_target(path, base)
        if not isinstance(target, StateGraph | CompiledGraph) and not callable(target):
            raise _no_graph(target, path)


ResumeCheck = Callable[[Any, Any], None]
GraphFactory = Callable[[dict[str, Any]], Awaitable[CompiledGraph]]


def load_target(path: str, base: Path) -> tuple[ModuleType, Any]:
    """The module `path` names and its attribute; whatever fails, a GraphConfigError that
    says which graph."""
    module_ref, _, attribute = path.rpartition(":")
    if not module_ref or not attribute:
        raise GraphConfigError(
            f"{path!r} is not of the form 'package.module:attribute' or 'file.py:attribute'."
        )
    try:
        module = _import(module_ref, base)
        return module, getattr(module, attribute)
    except Exception as exc:  # the graph's own code runs here: anything may fail
        raise GraphConfigError(f"Cannot load graph {path!r}: {type(exc).__name__}: {exc}") from exc


def _import(module_ref: str, base: Path) -> ModuleType:
    """A module by name, or a file by path from `base`, imported under the dotted name of
    its path from the folder it is in (put on `sys.path`), so that it is the same module
    in every process, and its imports of its neighbours work."""
    if not module_ref.endswith(".py"):
        return importlib.import_module(module_ref)
    file = (base / module_ref).resolve()
    if not file.is_file():
        raise FileNotFoundError(f"no file {file}")
    root = base.resolve() if file.is_relative_to(base.resolve()) else file.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(".".join(file.relative_to(root).with_suffix("").parts))


def _compiled(target: Any, path: str, saver: BaseCheckpointSaver) -> CompiledGraph:
    if isinstance(target, StateGraph):
        return _keyed(target.compile(checkpointer=saver), path)
    if isinstance(target, CompiledGraph):
        if target.checkpointer not in (None, True):
            raise GraphConfigError(
                f"Graph {path!r} was compiled with its own checkpointer; the server attaches "
                "its own, so compile it without one (or export the builder)."
            )
        return _keyed(target.copy({"checkpointer": saver}), path)
    raise _no_graph(target, path)


def _no_graph(target: Any, path: str) -> GraphConfigError:
    """The refusal of a target that is no graph of the engine's."""
    kind = type(target)
    if kind.__module__.split(".")[0] == "langgraph":
        return GraphConfigError(
            f"{path!r} is a graph of LangGraph's ({kind.__module__}.{kind.__name__}): the "
            "server runs graphs built with the engine, so change `langgraph` to `engine` in "
            "the project's import lines (docs/langgraph-projects.md, step 2)."
        )
    return GraphConfigError(f"{path!r} is a {kind.__name__}, not a StateGraph.")


def _keyed(graph: CompiledGraph, path: str) -> CompiledGraph:
    """`graph`, if its state has keys: a thread's values, search filters and results are
    objects, so a state kept as one value (`StateGraph(dict)`, `MessageGraph`) is
    refused when the server starts rather than failing its threads later."""
    if graph.builder is not None and is_root(graph.builder.state_schema):
        raise GraphConfigError(
            f"Graph {path!r} keeps its whole state as one value "
            f"({graph.builder.state_schema!r}); the server serves graphs whose state has "
            "keys: a TypedDict, dataclass or pydantic model (MessagesState for a chat)."
        )
    return graph


async def _made(
    factory: Callable[..., Any], path: str, saver: BaseCheckpointSaver, config: dict[str, Any]
) -> CompiledGraph:
    """The graph a factory makes for `config` (given only to a factory that takes it)."""
    made = factory(config) if inspect.signature(factory).parameters else factory()
    if inspect.isawaitable(made):
        made = await made
    return _compiled(made, path, saver)


@dataclass
class GraphRegistry:
    graphs: dict[str, CompiledGraph]
    resume_checks: dict[str, ResumeCheck] = field(default_factory=dict)
    # Graphs made by a factory, by graph id: each run gets its own, made for its config.
    factories: dict[str, GraphFactory] = field(default_factory=dict)
    # The system assistants' rows by id, read once: nobody may change them (see
    # app/services/assistants.py), so every run need not read its assistant again.
    system_rows: dict[str, AssistantRow] = field(default_factory=dict)

    @classmethod
    async def load(
        cls, spec: dict[str, str], saver: BaseCheckpointSaver, base: Path
    ) -> GraphRegistry:
        """Compile every graph of `spec` (file paths from `base`), calling each factory
        once; a module's `check_resume(interrupt_value, resume)`, if it has one, lets its
        graph refuse a malformed answer before the server starts a run."""
        registry = cls({})
        for graph_id, path in spec.items():
            module, target = load_target(path, base)
            if isinstance(target, StateGraph | CompiledGraph) or not callable(target):
                registry.graphs[graph_id] = _compiled(target, path, saver)
            else:
                make = functools.partial(_made, target, path, saver)
                config = {"configurable": {"graph_id": graph_id}}
                try:
                    registry.graphs[graph_id] = await make(config)
                except GraphConfigError:
                    raise
                except Exception as exc:
                    raise GraphConfigError(
                        f"Graph factory {path!r} failed: {type(exc).__name__}: {exc}"
                    ) from exc
                registry.factories[graph_id] = make
            if (check := getattr(module, "check_resume", None)) is not None:
                registry.resume_checks[graph_id] = check
        return registry

    def get(self, graph_id: str) -> CompiledGraph | None:
        return self.graphs.get(graph_id)

    async def for_run(self, graph_id: str, config: dict[str, Any]) -> CompiledGraph:
        """The graph a run executes: a factory's is made anew from the run's config; any
        other is the one loaded."""
        make = self.factories.get(graph_id)
        return await make(config) if make is not None else self.graphs[graph_id]

    def system_assistants(self) -> dict[str, str]:
        """graph id -> system assistant id."""
        return {graph_id: system_assistant_id(graph_id) for graph_id in self.graphs}


def _context_layer(
    graph: CompiledGraph, context: dict[str, Any] | None, configurable: dict[str, Any] | None
) -> dict[str, Any] | None:
    """What an assistant or a run gives its runs' context: its `context`; without one,
    the keys of its config's `configurable` that the graph's `context_schema` names, as
    LangGraph's server copies them (a client written before `context` sets them there,
    for a graph that reads `runtime.context`)."""
    if context or not configurable:
        return context
    names = _context_keys(graph.context_schema)
    return {key: value for key, value in configurable.items() if key in names} or None


def configurable_of(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored config's `configurable`."""
    return (config or {}).get("configurable")


@functools.cache
def _context_keys(schema: Any) -> frozenset[str]:
    """The fields a context schema names (none without one, or for a type without
    fields)."""
    if schema is None:
        return frozenset()
    fields = getattr(schema, "model_fields", None)  # pydantic
    if fields is None and dataclasses.is_dataclass(schema):
        fields = {field.name: field for field in dataclasses.fields(schema)}
    if fields is None:
        try:
            fields = typing.get_type_hints(schema)  # a TypedDict, a plain class
        except (TypeError, NameError):
            fields = {}
    return frozenset(fields)


Given = tuple[dict[str, Any] | None, dict[str, Any] | None]  # a context, a configurable


def run_context(graph: CompiledGraph, *layers: Given) -> Any:
    """A run's `Runtime.context`: what its assistant gives, then what it gives (each its
    `context`, else its configurable's context keys: `_context_layer`), key by key, read
    as the graph's `context_schema` reads it (a dataclass or pydantic schema gives an
    instance); 422 naming the fields that do not fit. Without a schema, the dict (None
    when empty, as a graph called without a context sees)."""
    merged = {
        key: value
        for context, configurable in layers
        for key, value in (_context_layer(graph, context, configurable) or {}).items()
    }
    adapter = _adapter(graph.context_schema)
    if adapter is None:
        return merged or None
    try:
        return adapter.validate_python(merged)
    except ValidationError as exc:
        problems = validation_problems(exc, "context")
        raise Invalid(f"context does not fit the graph's context_schema: {problems}.") from None


@functools.cache
def _adapter(schema: Any) -> TypeAdapter[Any] | None:
    """A validator of `schema`; None without one, or for a type pydantic cannot check."""
    if schema is None:
        return None
    try:
        return TypeAdapter(schema)
    except (PydanticUserError, TypeError):
        return None
