"""Health and server-info endpoints, as LangGraph servers expose them."""

from typing import Annotated

from fastapi import APIRouter, Query, Response

from app import __version__
from app.api.deps import Db
from app.metrics import database_reachable
from app.schemas.system import Info, InfoFlags, Ok

router = APIRouter(tags=["System"])


@router.get("/ok", response_model_exclude_none=True, responses={503: {"model": Ok}})
async def ok(
    db: Db,
    response: Response,
    check_db: Annotated[
        bool, Query(description="Also check that the database answers (503 if not).")
    ] = False,
) -> Ok:
    """Liveness probe: answers as long as the process serves HTTP. With `check_db=1`, a
    readiness probe: it reports whether the database is reachable."""
    if not check_db:
        return Ok()
    reachable = await database_reachable(db)
    if not reachable:
        response.status_code = 503
    return Ok(ok=reachable, services={"database": "healthy" if reachable else "unhealthy"})


@router.get("/info")
async def info() -> Info:
    """Server version and feature flags."""
    return Info(version=__version__, flags=InfoFlags())
