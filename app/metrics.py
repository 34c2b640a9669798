"""Prometheus metrics of one app, and the database probe `/ok` and `/metrics` share.

Two kinds of series:

- Read from the database at scrape time: runs by status, queue depth, the latency of the
  runs that finished since the last scrape, whether the database answered. The runs
  table is the system of record, so any API replica reports the whole deployment's runs,
  including the ones worker processes (which serve no HTTP) executed.
- Counted in this process: open SSE streams, checkpoint save latency.

Each app has its own registry: tests run several apps in one process.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, or_, select, text
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.db.database import Database
from app.db.models import PENDING, RunRow
from app.services.common import now
from app.services.runs.statements import FINAL
from engine.checkpoint.base import BaseCheckpointSaver

log = logging.getLogger(__name__)
STATUSES = ("pending", "running", *sorted(FINAL))
QUERY_TIMEOUT_S = 5.0
# A run is stamped final before its transaction commits: runs stamped within this lag of
# a scrape are left for the next one, so none is missed or counted twice.
COMMIT_LAG = timedelta(seconds=5)
RUN_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
SAVE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


async def database_reachable(db: Database, timeout: float = QUERY_TIMEOUT_S) -> bool:
    """Whether the database answers a query within `timeout` (a full pool counts as no)."""
    try:
        async with asyncio.timeout(timeout), db.read() as session:
            await session.execute(text("SELECT 1"))
    except Exception as exc:  # whatever the driver raises, the answer is "not reachable"
        log.warning("the database is not reachable: %s", exc)
        return False
    return True


class RunCounts(Collector):
    """The runs table as of the last scrape; nothing but `database_up 0` when the last
    scrape could not read it (no stale numbers)."""

    def __init__(self) -> None:
        self.by_status: dict[str, int] | None = None
        self.queue_depth = 0

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "threadline_database_up",
            "1 if the database answered the last scrape's queries, else 0.",
            value=int(self.by_status is not None),
        )
        if self.by_status is None:
            return
        runs = GaugeMetricFamily(
            "threadline_runs", "Runs in the database, by status (every process).", labels=["status"]
        )
        for status in STATUSES:
            runs.add_metric([status], self.by_status.get(status, 0))
        yield runs
        yield GaugeMetricFamily(
            "threadline_queue_depth",
            "Pending runs that may start now: waiting for a worker or for their thread.",
            value=self.queue_depth,
        )


class Metrics:
    """The app's registry and the series it exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.run_counts = RunCounts()
        self.registry.register(self.run_counts)
        self.run_seconds = Histogram(
            "threadline_run_duration_seconds",
            "From creation to final status, of runs that finished (every process).",
            ["status"],
            buckets=RUN_BUCKETS,
            registry=self.registry,
        )
        self.active_streams = Gauge(
            "threadline_active_streams",
            "SSE responses this process is sending.",
            registry=self.registry,
        )
        self.checkpoint_save_seconds = Histogram(
            "threadline_checkpoint_save_seconds",
            "Checkpoint saves made by this process (one transaction each).",
            buckets=SAVE_BUCKETS,
            registry=self.registry,
        )
        self._finished_after = now()
        self._scraping = asyncio.Lock()

    async def scrape(self, db: Database) -> bytes:
        """The exposition text, after reading the runs table. Scrapes take turns, so a
        finished run is observed once."""
        async with self._scraping:
            try:
                async with asyncio.timeout(QUERY_TIMEOUT_S):
                    await self._read_runs(db)
            except Exception as exc:  # the scrape still answers, with database_up 0
                log.warning("reading runs for metrics failed: %s", exc)
                self.run_counts.by_status = None
            return generate_latest(self.registry)

    async def _read_runs(self, db: Database) -> None:
        stamp = now()
        until = stamp - COMMIT_LAG
        async with db.read() as session:
            counts = await session.execute(
                select(RunRow.status, func.count()).group_by(RunRow.status)
            )
            due = await session.scalar(
                select(func.count()).where(
                    RunRow.status == PENDING,
                    or_(RunRow.not_before.is_(None), RunRow.not_before <= stamp),
                )
            )
            finished = await session.execute(
                select(RunRow.status, RunRow.created_at, RunRow.updated_at).where(
                    RunRow.status.in_(FINAL),
                    RunRow.updated_at > self._finished_after,
                    RunRow.updated_at <= until,
                )
            )
        self.run_counts.by_status = {status: count for status, count in counts.all()}
        self.run_counts.queue_depth = due or 0
        for status, created, updated in finished.all():
            self.run_seconds.labels(status).observe(_seconds(created, updated))
        self._finished_after = max(self._finished_after, until)

    def time_checkpoint_saves(self, saver: BaseCheckpointSaver) -> None:
        """Time `abatch`, the saver's one write path (graphs compiled on this saver find
        the wrapper, as it is set on the instance)."""
        saver.abatch = _timed(saver.abatch, self.checkpoint_save_seconds)  # type: ignore[method-assign]


def _seconds(start: datetime, end: datetime) -> float:
    return max((end - start).total_seconds(), 0.0)


def _timed(
    method: Callable[..., Awaitable[Any]], histogram: Histogram
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        with histogram.time():
            return await method(*args, **kwargs)

    return timed


class StreamCounter:
    """Count responses sent as `text/event-stream` for as long as they last: SSE clients
    are what holds a replica's connections (and what a rolling restart cuts)."""

    def __init__(self, app: ASGIApp, gauge: Gauge) -> None:
        self.app = app
        self.gauge = gauge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        streaming = False

        async def watch(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start" and _is_event_stream(message):
                streaming = True
                self.gauge.inc()
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if streaming:
                self.gauge.dec()


def _is_event_stream(start: Message) -> bool:
    return any(
        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in start.get("headers", ())
    )


def install(app: FastAPI) -> None:
    """Give the app its registry (`app.state.metrics`) and count its SSE streams."""
    app.state.metrics = Metrics()
    app.add_middleware(StreamCounter, gauge=app.state.metrics.active_streams)
