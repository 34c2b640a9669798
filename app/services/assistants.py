"""Assistants: a graph with its configuration. System assistants exist for every graph and
every user sees them; an assistant a user made is theirs alone (404 for anyone else)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.utils.pydantic import create_model_v2
from pydantic import PydanticUserError, TypeAdapter
from sqlalchemy import ColumnElement, Select, func, or_, select
from sqlalchemy import delete as sql_delete
from sqlalchemy.exc import IntegrityError

from app.db.database import Database
from app.db.models import AssistantRow, AssistantVersionRow, CronRow, ThreadRow
from app.errors import Conflict, NotFound
from app.graphs import GraphRegistry, system_assistant_id
from app.jsonable import jsonable
from app.limits import canonical_uuid
from app.schemas.assistants import (
    AssistantCreate,
    AssistantFilter,
    AssistantPatch,
    AssistantSearch,
    AssistantVersionSearch,
    GraphDrawing,
    GraphEdge,
    GraphNode,
    GraphSchemas,
    SubgraphSchemas,
)
from app.services.common import json_contains, new_id, now, ordered, parse_uuid, served_graph
from engine.graph.schema import field_types

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.services.threads import ThreadService
    from engine import CompiledGraph


async def ensure_system_assistants(
    db: Database, graphs: GraphRegistry, descriptions: dict[str, str]
) -> None:
    """One assistant per graph, with the id clients derive from the graph id, described
    as the project describes the graph (as it describes it now: nobody else changes a
    system assistant); their rows are kept in the registry."""
    async with db.write() as session:
        for graph_id, assistant_id in graphs.system_assistants().items():
            row = await session.get(AssistantRow, assistant_id)
            description = descriptions.get(graph_id)
            if row is not None and row.description != description:
                row.description = description
                version = await session.get(AssistantVersionRow, (assistant_id, row.version))
                if version is not None:
                    version.description = description
            elif row is None:
                stamp = now()
                row = AssistantRow(
                    assistant_id=assistant_id,
                    graph_id=graph_id,
                    name=graph_id,
                    description=description,
                    config={},
                    context={},
                    metadata_={"created_by": "system"},
                    version=1,
                    owner=None,
                    created_at=stamp,
                    updated_at=stamp,
                )
                session.add(row)
                session.add(_version_of(row))
            graphs.system_rows[assistant_id] = row


# What a version keeps of an assistant, and gives back to it.
VERSIONED = ("graph_id", "name", "description", "config", "context", "metadata_")


def _version_of(assistant: AssistantRow) -> AssistantVersionRow:
    """The assistant's fields as the version it is at, kept from its last change on."""
    return AssistantVersionRow(
        assistant_id=assistant.assistant_id,
        version=assistant.version,
        created_at=assistant.updated_at,
        **{name: getattr(assistant, name) for name in VERSIONED},
    )


def _visible(owner: str) -> ColumnElement[bool]:
    """The assistants `owner` sees: the system ones and their own."""
    return or_(AssistantRow.owner.is_(None), AssistantRow.owner == owner)


def _refuse_system(assistant: AssistantRow) -> None:
    """A graph's system assistant is shared by every user and addressed by the graph id,
    so nobody changes or deletes it (409); a user makes their own to configure."""
    if assistant.owner is None:
        raise Conflict(
            f"Assistant '{assistant.assistant_id}' is the system assistant of graph "
            f"'{assistant.graph_id}', shared by every user: create your own to change it."
        )


class AssistantService:
    """Assistants over the database and the graph registry; deleting one with its
    threads goes through the thread service."""

    def __init__(self, db: Database, graphs: GraphRegistry, threads: ThreadService) -> None:
        self.db = db
        self.graphs = graphs
        self.threads = threads

    async def resolve(self, assistant_id: str, *, owner: str) -> AssistantRow:
        """An assistant by id, or the system assistant of a graph given by its id."""
        try:
            key = canonical_uuid(assistant_id)
        except ValueError:
            if self.graphs.get(assistant_id) is None:
                raise NotFound(
                    f"Assistant '{assistant_id}' not found: it is neither an assistant id "
                    f"nor a graph id (graphs: {sorted(self.graphs.graphs)})."
                ) from None
            key = system_assistant_id(assistant_id)
        found = self.graphs.system_rows.get(key)
        if found is None:
            async with self.db.read() as session:
                found = await session.get(AssistantRow, key)
        if found is None or found.owner not in (None, owner):
            raise NotFound(f"Assistant '{assistant_id}' not found.")
        return found

    async def create(self, body: AssistantCreate, *, owner: str) -> AssistantRow:
        """A new assistant on a served graph (409, or the existing one, if the id is taken)."""
        served_graph(self.graphs, body.graph_id)
        stamp = now()
        assistant = AssistantRow(
            assistant_id=parse_uuid(body.assistant_id, "assistant_id")
            if body.assistant_id
            else new_id(),
            graph_id=body.graph_id,
            name=body.name,
            description=body.description,
            **_in_step(body.config.model_dump(exclude_unset=True), body.context or None, {}),
            metadata_=body.metadata,
            version=1,
            owner=owner,
            created_at=stamp,
            updated_at=stamp,
        )
        try:
            async with self.db.write() as session:
                existing = await session.get(AssistantRow, assistant.assistant_id)
                if existing is not None:
                    return _taken(existing, body, owner)
                session.add(assistant)
                session.add(_version_of(assistant))
        except IntegrityError:  # made by a request at the same time (PostgreSQL)
            async with self.db.read() as session:
                existing = await session.get(AssistantRow, assistant.assistant_id)
            if existing is None:
                raise
            return _taken(existing, body, owner)
        return assistant

    def _filtered(self, query: Select[Any], where: AssistantFilter, owner: str) -> Select[Any]:
        """`query` restricted to the assistants the owner sees that the filter matches,
        in SQL."""
        query = query.where(_visible(owner))
        if where.metadata:
            query = query.where(
                json_contains(self.db.dialect, AssistantRow.metadata_, where.metadata)
            )
        if where.graph_id:
            query = query.where(AssistantRow.graph_id == where.graph_id)
        if where.name:
            if self.db.dialect == "sqlite":  # see `Database`: casefold, not LIKE's ASCII
                name = func.casefold(AssistantRow.name)
                query = query.where(name.contains(where.name.casefold(), autoescape=True))
            else:
                query = query.where(AssistantRow.name.icontains(where.name, autoescape=True))
        return query

    async def search(self, body: AssistantSearch, *, owner: str) -> tuple[list[AssistantRow], int]:
        """One page of matching assistants, and how many match in all."""
        query = ordered(
            self._filtered(select(AssistantRow), body, owner),
            body.sort_order,
            getattr(AssistantRow, body.sort_by),
            AssistantRow.assistant_id,
        )
        async with self.db.read() as session:
            rows = list(await session.scalars(query.limit(body.limit).offset(body.offset)))
        return rows, await self.count(body, owner=owner)

    async def count(self, where: AssistantFilter, *, owner: str) -> int:
        """How many assistants match, counted in SQL."""
        async with self.db.read() as session:
            total = await session.scalar(
                self._filtered(select(func.count()).select_from(AssistantRow), where, owner)
            )
        return int(total or 0)

    async def update(self, assistant_id: str, patch: AssistantPatch, *, owner: str) -> AssistantRow:
        """Change an assistant; each change is a new version, one above the highest so
        far (an assistant gone back to an earlier version goes on from its latest)."""
        found = await self.resolve(assistant_id, owner=owner)
        _refuse_system(found)
        if patch.graph_id is not None and patch.graph_id != found.graph_id:
            served_graph(self.graphs, patch.graph_id)
        async with self.db.write() as session:
            assistant = await self._locked(session, found.assistant_id)
            if patch.graph_id is not None:
                assistant.graph_id = patch.graph_id
            if patch.config is not None or patch.context is not None:
                given = (
                    None if patch.config is None else patch.config.model_dump(exclude_unset=True)
                )
                fields = _in_step(given, patch.context, assistant.context, assistant.config)
                assistant.config, assistant.context = fields["config"], fields["context"]
            if patch.metadata is not None:
                assistant.metadata_ = {**(assistant.metadata_ or {}), **patch.metadata}
            if patch.name is not None:
                assistant.name = patch.name
            if patch.description is not None:
                assistant.description = patch.description
            latest = await session.scalar(
                select(func.max(AssistantVersionRow.version)).where(
                    AssistantVersionRow.assistant_id == assistant.assistant_id
                )
            )
            assistant.version = (latest or 0) + 1
            assistant.updated_at = now()
            session.add(_version_of(assistant))
        return assistant

    async def versions(
        self, assistant_id: str, body: AssistantVersionSearch, *, owner: str
    ) -> tuple[list[AssistantVersionRow], int]:
        """One page of the assistant's versions, highest first, and how many match."""
        found = await self.resolve(assistant_id, owner=owner)
        where = [AssistantVersionRow.assistant_id == found.assistant_id]
        if body.metadata:
            where.append(
                json_contains(self.db.dialect, AssistantVersionRow.metadata_, body.metadata)
            )
        async with self.db.read() as session:
            rows = await session.scalars(
                select(AssistantVersionRow)
                .where(*where)
                .order_by(AssistantVersionRow.version.desc())
                .limit(body.limit)
                .offset(body.offset)
            )
            total = await session.scalar(
                select(func.count()).select_from(AssistantVersionRow).where(*where)
            )
            return list(rows), int(total or 0)

    async def set_latest(self, assistant_id: str, version: int, *, owner: str) -> AssistantRow:
        """Put the assistant back (or on) to one of its versions: every field as it was
        then. No version is added; the next change is one above the highest."""
        found = await self.resolve(assistant_id, owner=owner)
        _refuse_system(found)
        async with self.db.write() as session:
            assistant = await self._locked(session, found.assistant_id)
            kept = await session.get(AssistantVersionRow, (assistant.assistant_id, version))
            if kept is None:
                raise NotFound(f"Assistant '{assistant_id}' has no version {version}.")
            served_graph(self.graphs, kept.graph_id)
            for name in VERSIONED:
                setattr(assistant, name, getattr(kept, name))
            assistant.version = version
            assistant.updated_at = now()
        return assistant

    @staticmethod
    async def _locked(session: AsyncSession, assistant_id: str) -> AssistantRow:
        """The assistant's row, locked until the transaction ends on PostgreSQL, so that
        two changes at once number their versions one after the other."""
        assistant = await session.get(AssistantRow, assistant_id, with_for_update=True)
        if assistant is None:
            raise NotFound(f"Assistant '{assistant_id}' not found.")
        return assistant

    async def delete(self, assistant_id: str, *, delete_threads: bool, owner: str) -> None:
        """Delete an assistant, its crons (as LangGraph's server does: they could only
        fail) and, if asked, the owner's threads it ran on. A graph's system assistant
        stays: clients address the graph through it."""
        found = await self.resolve(assistant_id, owner=owner)
        _refuse_system(found)
        if delete_threads:
            where = json_contains(
                self.db.dialect, ThreadRow.metadata_, {"assistant_id": found.assistant_id}
            )
            async with self.db.read() as session:
                thread_ids = list(
                    await session.scalars(
                        select(ThreadRow.thread_id).where(where, ThreadRow.owner == owner)
                    )
                )
            for thread_id in thread_ids:
                await self.threads.delete(thread_id, owner=owner)
        async with self.db.write() as session:
            await session.execute(
                sql_delete(CronRow).where(CronRow.assistant_id == found.assistant_id)
            )
            gone = await session.execute(
                sql_delete(AssistantRow).where(AssistantRow.assistant_id == found.assistant_id)
            )
            if not gone.rowcount:  # deleted by another request meanwhile
                raise NotFound(f"Assistant '{assistant_id}' not found.")

    def drawing(self, assistant: AssistantRow, xray: bool | int = False) -> GraphDrawing:
        """Nodes and edges of the assistant's graph as LangGraph's server answers them
        (LangChain's `to_json()` without the Python class path of each node's data), with
        subgraphs drawn inside their nodes down to `xray` levels (all with True); every
        edge says whether it is conditional (`to_json()` leaves out `false`)."""
        drawn = served_graph(self.graphs, assistant.graph_id).get_graph(xray=xray).to_json()
        nodes = []
        for node in drawn["nodes"]:
            data = node.get("data")
            if isinstance(data, dict):
                data = {key: value for key, value in data.items() if key != "id"}
            metadata = node.get("metadata")
            nodes.append(
                GraphNode(
                    id=node["id"],
                    type=node.get("type"),
                    data=jsonable(data) if isinstance(data, dict) else None,
                    metadata=jsonable(metadata) if metadata else None,
                )
            )
        edges = [
            GraphEdge(
                source=edge["source"],
                target=edge["target"],
                conditional=edge.get("conditional", False),
                data=jsonable(edge.get("data")),
            )
            for edge in drawn["edges"]
        ]
        return GraphDrawing(nodes=nodes, edges=edges)

    def schemas(self, assistant: AssistantRow) -> GraphSchemas:
        """JSON schemas of the graph's declared types."""
        graph = served_graph(self.graphs, assistant.graph_id)
        # An unnamed graph is served under its graph id, as LangGraph's server names it.
        name = assistant.graph_id if graph.name == "LangGraph" else graph.name
        schemas = graph_schemas(graph, name)
        return GraphSchemas(graph_id=assistant.graph_id, **schemas.model_dump())

    def subgraphs(
        self, assistant: AssistantRow, namespace: str | None, recurse: bool
    ) -> dict[str, SubgraphSchemas]:
        """The schemas of the graphs the assistant's graph runs as nodes, by namespace
        (node names joined by `|`): those right inside it, or with `recurse` at every
        depth; with `namespace`, only the one there (none when no subgraph is there)."""
        graph = served_graph(self.graphs, assistant.graph_id)
        return {
            name: graph_schemas(subgraph)
            for name, subgraph in graph.get_subgraphs(namespace=namespace, recurse=recurse)
        }


def _in_step(
    config: dict[str, Any] | None,
    context: dict[str, Any] | None,
    kept_context: dict[str, Any] | None,
    kept_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An assistant's new config and context (each None when not given), kept in step as
    LangGraph's server keeps them: a context given without a `configurable` is the
    config's `configurable` too; a `configurable` given without a context leaves no
    context of its own (it shows as one, and runs read the keys the graph's context
    schema names from it); given both, each is as given. What is not given stays as it
    was (`kept_*`)."""
    new_config = dict(kept_config or {}) if config is None else dict(config)
    configurable_given = config is not None and "configurable" in config
    if context is not None and not configurable_given:
        new_config["configurable"] = dict(context)
    elif context is None and configurable_given:
        context = {}
    return {
        "config": new_config,
        "context": dict(kept_context or {}) if context is None else context,
    }


def graph_schemas(graph: CompiledGraph, name: str | None = None) -> SubgraphSchemas:
    """The schemas of a graph, as LangGraph's server gives them: its input and output
    (for an `@entrypoint`, what its function's annotations say), its state (every key,
    each optional: a state may lack any), its context, and its config's `configurable`
    (the context's keys, as LangGraph's deprecated config schema gives them). A schema
    that cannot be written is null. `name` names the state's model (the graph's own by
    default)."""
    context = _written(graph.get_context_jsonschema)
    return SubgraphSchemas(
        input_schema=_written(graph.get_input_jsonschema),
        output_schema=_written(graph.get_output_jsonschema),
        state_schema=(
            None if graph.builder is None else _written(lambda: state_schema(graph, name))
        ),
        config_schema=configurable_schema(context) if graph.context_schema else {},
        context_schema=context,
    )


# Configurable keys the server sets itself, which an assistant's config form must not offer.
SERVER_CONFIGURABLE = ("thread_id", "checkpoint_id", "checkpoint_ns")


def configurable_schema(context: dict[str, Any] | None) -> dict[str, Any] | None:
    """A context schema as the schema of a config's `configurable` (what forms written
    for LangGraph's config schema read): without the keys the server sets itself."""
    if context is None:
        return None
    properties = context.get("properties")
    if not isinstance(properties, dict):
        return context
    kept = {key: value for key, value in properties.items() if key not in SERVER_CONFIGURABLE}
    schema = {**context, "properties": kept}
    if "required" in context:
        schema["required"] = [key for key in context["required"] if key in kept]
    return schema


def _taken(existing: AssistantRow, body: AssistantCreate, owner: str) -> AssistantRow:
    """What creating an assistant whose id is taken answers: the owner's own assistant
    with `if_exists: do_nothing`, else 409. A foreign (or system) assistant is never
    handed out: the id is just taken."""
    if body.if_exists == "do_nothing" and existing.owner == owner:
        return existing
    raise Conflict(f"Assistant '{existing.assistant_id}' already exists.")


def _written(write: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
    try:
        return write()
    except (PydanticUserError, TypeError, ValueError):
        return None


def state_schema(graph: CompiledGraph, name: str | None = None) -> dict[str, Any]:
    """A model of the graph's state keys, each None by default; a key whose type has no
    JSON schema takes any value."""
    types = field_types(graph.builder.state_schema)
    fields: dict[str, Any] = {}
    for key in graph.state_keys:
        found = types.get(key, Any)
        try:
            TypeAdapter(found).json_schema()
        except (PydanticUserError, TypeError):
            found = Any
        fields[key] = (found, None)
    title = graph.get_name("State", name=name)
    return create_model_v2(title, field_definitions=fields).model_json_schema()
