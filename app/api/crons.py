"""Crons: runs on a schedule, on a thread or each on a new thread; create, search,
count, change and delete them."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from app.api.deps import Crons, CurrentUser
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES, page
from app.schemas.crons import Cron, CronCreate, CronFilter, CronPatch, CronSearch, ThreadCronCreate

router = APIRouter(tags=["Crons"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)


@router.post("/runs/crons")
async def create_cron(body: CronCreate, crons: Crons, user: CurrentUser) -> Cron:
    """A cron whose every run starts on a new thread (deleted when the run ends, unless
    `on_run_completed` is `keep`)."""
    return Cron.of(await crons.create(None, body, owner=user.user_id))


@router.post("/threads/{thread_id}/runs/crons")
async def create_thread_cron(
    thread_id: str, body: ThreadCronCreate, crons: Crons, user: CurrentUser
) -> Cron:
    """A cron whose runs take turns on the thread (`multitask_strategy` says what happens
    when one is due while the thread is busy)."""
    return Cron.of(await crons.create(thread_id, body, owner=user.user_id))


@router.post("/runs/crons/search", response_model=list[Cron])
async def search_crons(body: CronSearch, crons: Crons, user: CurrentUser) -> JSONResponse:
    """A page of the caller's crons, newest first unless sorted otherwise;
    X-Pagination-Total gives how many match, X-Pagination-Next the offset of the next page."""
    rows, total = await crons.search(body, owner=user.user_id)
    return page([Cron.of(row) for row in rows], total=total, offset=body.offset, select=body.select)


@router.post("/runs/crons/count")
async def count_crons(body: CronFilter, crons: Crons, user: CurrentUser) -> int:
    """How many of the caller's crons match the filter."""
    return await crons.count(body, owner=user.user_id)


@router.get("/runs/crons/{cron_id}")
async def get_cron(cron_id: str, crons: Crons, user: CurrentUser) -> Cron:
    """One of the caller's crons."""
    return Cron.of(await crons.get(cron_id, owner=user.user_id))


@router.patch("/runs/crons/{cron_id}")
async def patch_cron(cron_id: str, body: CronPatch, crons: Crons, user: CurrentUser) -> Cron:
    """Change a cron: its schedule, its runs' fields, whether it is enabled."""
    return Cron.of(await crons.update(cron_id, body, owner=user.user_id))


@router.delete("/runs/crons/{cron_id}", status_code=204)
async def delete_cron(cron_id: str, crons: Crons, user: CurrentUser) -> Response:
    """Delete a cron: none of its runs starts afterwards (runs started already go on)."""
    await crons.delete(cron_id, owner=user.user_id)
    return Response(status_code=204)
