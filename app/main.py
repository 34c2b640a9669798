"""Application factory: wiring only, no behaviour lives here."""

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app import __version__
from app.api import system
from app.config import Settings, get_settings

# Browser clients (chat frontends, the SDK in a page) must be able to read these.
EXPOSED_HEADERS = ["Location", "Content-Location", "X-Pagination-Total", "X-Pagination-Next"]


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app; `settings` defaults to the environment (uvicorn factory mode)."""
    settings = settings or get_settings()
    app = FastAPI(title="Threadline", version=__version__)
    app.state.settings = settings
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(settings.cors_origins),
        allow_methods=["*"],
        allow_headers=["*"],
        expose_headers=EXPOSED_HEADERS,
    )
    app.include_router(system.router)
    return app
