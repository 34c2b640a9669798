"""Everything a request handler or a worker reaches: built once per process."""

from __future__ import annotations

import functools
import gc
from dataclasses import dataclass

from starlette.types import ASGIApp

from app.agents.reminder_store import set_store
from app.api.sse import StreamSlots
from app.auth import Authenticator, authenticator
from app.config import Settings
from app.db.database import Database
from app.graphs import GraphRegistry, graph_source
from app.runs.broker import StreamBroker
from app.runs.notify import Notifier, PostgresNotifier
from app.runs.service import RunService
from app.services.assistants import ensure_system_assistants
from app.services.graph_store import ServerStore
from app.services.reminder_scheduler import ReminderScheduler
from app.services.reminders import SQLReminderStore
from engine.checkpoint.sql.saver import SQLSaver


@dataclass
class AppContext:
    settings: Settings
    db: Database
    saver: SQLSaver
    graphs: GraphRegistry
    broker: StreamBroker
    runs: RunService
    reminders: SQLReminderStore
    auth: Authenticator
    streams: StreamSlots
    scheduler: ReminderScheduler

    @classmethod
    async def open(cls, settings: Settings) -> AppContext:
        """Connect, check (or create) the schema, load the graphs."""
        db = Database(
            settings.database_url,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
        )
        try:
            auth = authenticator(settings, db)
            await db.prepare()
            saver = SQLSaver(db.engine)
            spec, base = graph_source(settings)
            graphs = await GraphRegistry.load(spec, saver, base)
            await ensure_system_assistants(db, graphs)
        except BaseException:
            await db.close()
            raise
        notifier = PostgresNotifier(db.libpq_url()) if db.dialect == "postgresql" else Notifier()
        await notifier.start()
        holder: list[RunService] = []
        broker = StreamBroker(db, notifier, lambda run_id: holder[0].is_final(run_id))
        runs = RunService(db, graphs, saver, broker, settings)
        saver.fence = runs.pool.fence
        holder.append(runs)
        reminders = SQLReminderStore(db)
        # The agent's tools write through the store installed here.
        set_store(reminders)
        streams = StreamSlots(settings.max_streams_per_user)
        scheduler = ReminderScheduler(db, runs)
        ctx = cls(settings, db, saver, graphs, broker, runs, reminders, auth, streams, scheduler)
        # The graphs' store is the server's (`/store`): each run's, its user's items.
        runs.store_of = functools.partial(ServerStore, ctx)
        freeze_startup_objects()
        return ctx

    def start(self, own_app: ASGIApp) -> None:
        """Execute runs here, with what runs bring about: their webhooks' calls (a path
        calls `own_app`: this server's app, with this context) and due reminders."""
        self.runs.start()
        self.runs.webhooks.start(own_app)
        self.scheduler.start()

    async def close(self) -> None:
        """Stop workers (re-queueing what they could not finish), then disconnect."""
        try:
            await self.scheduler.stop()
            await self.runs.stop()
            await self.runs.webhooks.stop()
            await self.broker.flush()
            await self.broker.notifier.close()
        finally:
            await self.db.close()


@functools.cache
def freeze_startup_objects() -> None:
    """Keep what the process loaded to start (modules, the app, the graphs: some 150,000
    objects) out of the garbage collector's full passes, once. Reading a long thread
    makes thousands of objects, which trigger those passes; each walked the whole heap,
    ~20 ms that every request on the event loop waited for."""
    gc.freeze()
