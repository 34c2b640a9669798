"""Application factory: wiring only, no behaviour lives here."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app import __version__, errors, logs, metrics, retention
from app.api import (
    assistants,
    crons,
    demo,
    mcp,
    reminders,
    runs,
    state,
    store,
    system,
    threads,
    ui,
)
from app.api import metrics as metrics_api
from app.config import Settings, get_settings
from app.container import Services
from app.middleware import HeadAsGet, LimitBodySize, QueryStrings
from app.project import Project

# Browser clients (chat frontends, the SDK in a page) must be able to read these.
EXPOSED_HEADERS = ["Location", "Content-Location", "X-Pagination-Total", "X-Pagination-Next"]


def cors_options(settings: Settings) -> dict[str, Any]:
    """Every origin, method and header by default (as the reference server allows), a
    project's `http.cors` over that, THREADLINE_CORS_ORIGINS over both; the headers
    clients read are exposed whatever the project says."""
    project = Project.read(Path(settings.config_file)).cors if settings.config_file else {}
    options = {"allow_origins": ["*"], "allow_methods": ["*"], "allow_headers": ["*"], **project}
    if settings.cors_origins is not None:
        options["allow_origins"] = list(settings.cors_origins)
    options["expose_headers"] = [*EXPOSED_HEADERS, *project.get("expose_headers", ())]
    return options


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    services = await Services.open(app.state.settings)
    app.state.services = services
    app.state.metrics.time_checkpoint_saves(services.saver)
    if services.settings.run_workers:
        services.start(app)
    try:
        async with retention.cleaning(
            services.db, services.settings, services.threads, services.store
        ):
            yield
    finally:
        await services.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app; `settings` defaults to the environment (uvicorn factory mode)."""
    settings = settings or get_settings()
    if settings.config_file:
        Project.read(Path(settings.config_file)).check_auth(settings.auth)
    app = FastAPI(title="Threadline", version=__version__, lifespan=lifespan)
    app.state.settings = settings
    # Inside CORS, so that a browser can read the 413.
    app.add_middleware(HeadAsGet)
    app.add_middleware(LimitBodySize, max_bytes=settings.max_body_bytes)
    app.add_middleware(CORSMiddleware, **cors_options(settings))
    app.add_middleware(QueryStrings)
    app.add_middleware(logs.RequestIds)
    metrics.install(app)
    errors.install(app)
    # Routes are matched in order, one after another: the runs' first, as every chat turn
    # is one (behind the others, a turn's route took 60 µs to find). No other route's
    # path is one of theirs (tests/api/test_route_order.py).
    app.include_router(runs.router)
    app.include_router(system.router)
    app.include_router(metrics_api.router)
    app.include_router(assistants.router)
    app.include_router(threads.router)
    app.include_router(state.router)
    app.include_router(store.router)
    app.include_router(crons.router)
    app.include_router(reminders.router)
    app.include_router(mcp.router)
    app.include_router(demo.router)
    app.include_router(ui.router)
    return app
