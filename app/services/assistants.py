"""Assistants: a graph with its configuration. System assistants exist for every graph."""

from __future__ import annotations

import uuid

from app.db.database import Database
from app.db.models import Assistant
from app.errors import NotFound
from app.graphs import GraphRegistry, system_assistant_id
from app.services.common import now


async def ensure_system_assistants(db: Database, graphs: GraphRegistry) -> None:
    """One assistant per graph, with the id clients derive from the graph id."""
    async with db.write() as session:
        for graph_id, assistant_id in graphs.system_assistants().items():
            if await session.get(Assistant, assistant_id) is None:
                stamp = now()
                session.add(
                    Assistant(
                        assistant_id=assistant_id,
                        graph_id=graph_id,
                        name=graph_id,
                        description=None,
                        config={},
                        context={},
                        metadata_={"created_by": "system"},
                        version=1,
                        owner=None,
                        created_at=stamp,
                        updated_at=stamp,
                    )
                )


async def resolve(db: Database, graphs: GraphRegistry, assistant_id: str) -> Assistant:
    """An assistant by id, or the system assistant of a graph given by its id."""
    try:
        key = str(uuid.UUID(assistant_id))
    except ValueError:
        if graphs.get(assistant_id) is None:
            raise NotFound(
                f"Assistant '{assistant_id}' not found: it is neither an assistant id nor "
                f"a graph id (graphs: {sorted(graphs.graphs)})."
            ) from None
        key = system_assistant_id(assistant_id)
    async with db.read() as session:
        found = await session.get(Assistant, key)
    if found is None:
        raise NotFound(f"Assistant '{assistant_id}' not found.")
    return found
