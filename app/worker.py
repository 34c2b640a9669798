"""`threadline worker`: a process that executes runs and serves no HTTP.

Many of them (and API processes started with `serve --no-worker`) share one PostgreSQL:
they find runs in the runs table, so nothing but the database connects them.
"""

from __future__ import annotations

import asyncio
import logging
import signal

from app.config import Settings
from app.container import Services
from app.main import create_app

log = logging.getLogger(__name__)


async def run_worker(settings: Settings) -> None:
    """Execute runs until SIGTERM or SIGINT, then stop gracefully."""
    # Its own app (below) takes webhook calls only: none waits here for a run's end (one
    # that did would find it by its poll).
    services = await Services.open(settings, clients=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # Webhooks given as a path call an app of this server over this context (not served).
    own_app = create_app(settings)
    own_app.state.services = services
    services.start(own_app)
    log.info("worker %s started", services.runs.pool.worker_id)
    try:
        await stop.wait()
    finally:
        await services.close()
