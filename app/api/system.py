"""Health and server-info endpoints, as LangGraph servers expose them."""

from fastapi import APIRouter

from app import __version__
from app.schemas.system import Info, InfoFlags, Ok

router = APIRouter(tags=["System"])


@router.get("/ok")
async def ok() -> Ok:
    """Liveness probe: answers as long as the process serves HTTP."""
    return Ok()


@router.get("/info")
async def info() -> Info:
    """Server version and feature flags."""
    return Info(version=__version__, flags=InfoFlags())
