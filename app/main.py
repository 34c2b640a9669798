"""Application factory: wiring only, no behaviour lives here."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app import __version__, errors
from app.api import runs, system
from app.config import Settings, get_settings
from app.context import AppContext
from app.db.database import Database
from app.graphs import GraphRegistry, parse_spec
from app.middleware import EmptyQueryValuesAreUnset
from app.runs.broker import StreamBroker
from app.runs.service import RunService
from app.services.assistants import ensure_system_assistants
from engine.checkpoint.sql.saver import SQLSaver

# Browser clients (chat frontends, the SDK in a page) must be able to read these.
EXPOSED_HEADERS = ["Location", "Content-Location", "X-Pagination-Total", "X-Pagination-Next"]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    db = Database(settings.database_url)
    try:
        await db.prepare()
        saver = SQLSaver(db.engine)
        graphs = GraphRegistry.load(parse_spec(settings.graphs), saver)
        await ensure_system_assistants(db, graphs)
        holder: list[RunService] = []
        broker = StreamBroker(db, lambda run_id: holder[0].is_final(run_id))
        run_service = RunService(db, graphs, saver, broker, settings)
        holder.append(run_service)
        app.state.ctx = AppContext(settings, db, saver, graphs, broker, run_service)
        if settings.run_workers:
            run_service.start()
        yield
        await run_service.stop()
        await broker.flush()
    finally:
        await db.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app; `settings` defaults to the environment (uvicorn factory mode)."""
    settings = settings or get_settings()
    app = FastAPI(title="Threadline", version=__version__, lifespan=lifespan)
    app.state.settings = settings
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(settings.cors_origins),
        allow_methods=["*"],
        allow_headers=["*"],
        expose_headers=EXPOSED_HEADERS,
    )
    app.add_middleware(EmptyQueryValuesAreUnset)
    errors.install(app)
    app.include_router(system.router)
    app.include_router(runs.router)
    return app
