"""`GET /metrics`: the Prometheus scrape endpoint."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.api.deps import Db

router = APIRouter(tags=["System"])
# What prometheus_client's generate_latest writes; named here because the library's
# CONTENT_TYPE_LATEST moved to another version of the format.
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {TEXT_FORMAT: {}}, "description": "Prometheus metrics."}},
)
async def metrics(request: Request, db: Db) -> Response:
    """Runs by status, queue depth, run latency, open streams, checkpoint save latency,
    in the Prometheus text format."""
    body = await request.app.state.metrics.scrape(db)
    return Response(body, media_type=TEXT_FORMAT)
