"""The services of a process, built once, in one place, each given what it uses when it
is built (the order below needs no back-reference): what a request handler (through
`app/api/deps.py`) or the worker process reaches."""

from __future__ import annotations

import functools
import gc
import logging
from dataclasses import dataclass

from starlette.types import ASGIApp

from app.agents.reminder_store import REMINDER_STORE
from app.auth import Authenticator, authenticator
from app.config import Settings
from app.db.database import Database
from app.graphs import GraphRegistry, graph_descriptions, graph_source
from app.retention import retention
from app.runs.broker import StreamBroker
from app.runs.crons import CronScheduler
from app.runs.notify import CHANNEL, RUNS_CHANNEL, Notifier, PostgresNotifier
from app.runs.pool import WorkerPool
from app.runs.slots import StreamSlots
from app.services.assistants import AssistantService, ensure_system_assistants
from app.services.crons import CronService
from app.services.graph_store import ServerStore
from app.services.mcp import McpService
from app.services.reminder_scheduler import ReminderScheduler
from app.services.reminders import SQLReminderStore
from app.services.runs.admission import RunAdmission
from app.services.runs.cancels import RunCancels
from app.services.runs.execution import RunExecutor
from app.services.runs.results import RunResults
from app.services.runs.service import RunService
from app.services.state import StateService
from app.services.store import StoreService
from app.services.threads import ThreadService
from app.webhooks import Webhooks
from engine.checkpoint.sql.saver import SQLSaver

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    db: Database
    saver: SQLSaver
    graphs: GraphRegistry
    broker: StreamBroker
    threads: ThreadService
    runs: RunService
    assistants: AssistantService
    mcp: McpService
    state: StateService
    store: StoreService
    crons: CronService
    reminders: SQLReminderStore
    webhooks: Webhooks
    auth: Authenticator
    streams: StreamSlots
    cron_scheduler: CronScheduler
    reminder_scheduler: ReminderScheduler

    @classmethod
    async def open(cls, settings: Settings, *, clients: bool = True) -> Services:
        """Connect, check (or create) the schema, load the graphs, build the services.
        `clients`: this process serves clients (not a `threadline worker`), who wait for
        runs and follow their streams: it listens for runs' notifications too."""
        db = Database(
            settings.database_url,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
        )
        # Runs held here: the saver fences their checkpoints with it, a notification of
        # a queued run wakes its claimer; what it executes is given when it starts.
        pool = WorkerPool(
            db,
            concurrency=settings.workers,
            user_share=settings.max_running_runs_per_user if settings.auth != "none" else 0,
            lease_s=settings.lease_s,
            heartbeat_s=settings.heartbeat_s,
        )
        try:
            auth = authenticator(settings, db)
            await db.prepare()
            # The server keeps no object of a run's state past the run (it answers with
            # JSON): a chat's next turn may start from the objects the last one stored.
            saver = SQLSaver(db.engine, fence=pool.fence, reuse_objects=True)
            spec, base = graph_source(settings)
            graphs = await GraphRegistry.load(spec, saver, base)
            await ensure_system_assistants(db, graphs, graph_descriptions(settings))
        except BaseException:
            await db.close()
            raise
        runs = (
            f"runs {settings.workers} at once"
            if settings.run_workers or not clients
            else "runs none (`threadline worker` processes do)"
        )
        log.info(
            "graphs %s on %s; auth %s; %s",
            ", ".join(sorted(graphs.graphs)),
            settings.shown("database_url"),
            settings.auth,
            runs,
        )
        results = RunResults(db, graphs)
        notifier = (
            PostgresNotifier(
                db.libpq_url(),
                on_queue=pool.wake,
                on_answer=results.deliver,
                channels=(CHANNEL, RUNS_CHANNEL) if clients else (CHANNEL,),
            )
            if db.dialect == "postgresql"
            else Notifier(on_queue=pool.wake)
        )
        await notifier.start()
        broker = StreamBroker(
            db,
            notifier,
            results.is_final,
            saved_values=results.saved_values,
            keep_for=retention(settings),
        )
        cancels = RunCancels(db, pool, broker, results)
        threads = ThreadService(db, graphs, saver, cancels)
        assistants = AssistantService(db, graphs, threads)
        state = StateService(db, saver, threads, settings)
        store = StoreService(db)
        reminders = SQLReminderStore(db)
        webhooks = Webhooks(db, settings)
        executor = RunExecutor(
            db,
            graphs,
            saver,
            broker,
            pool,
            threads,
            results,
            webhooks,
            settings,
            # The graphs' store is the server's (`/store`): each run's, its user's items.
            store_of=functools.partial(ServerStore, store),
            # The reminder agent's tools write through the store each run's config hands.
            resources={REMINDER_STORE: reminders},
        )
        admission = RunAdmission(
            db, graphs, assistants, broker, pool, results, cancels, executor, webhooks, settings
        )
        runs = RunService(db, broker, pool, results, cancels, executor, admission, webhooks)
        crons = CronService(db, assistants, threads, runs, webhooks)
        cron_scheduler = CronScheduler(db, runs)
        reminder_scheduler = ReminderScheduler(db, runs)
        streams = StreamSlots(settings.max_streams_per_user)
        services = cls(
            settings=settings,
            db=db,
            saver=saver,
            graphs=graphs,
            broker=broker,
            threads=threads,
            runs=runs,
            assistants=assistants,
            mcp=McpService(assistants, runs),
            state=state,
            store=store,
            crons=crons,
            reminders=reminders,
            webhooks=webhooks,
            auth=auth,
            streams=streams,
            cron_scheduler=cron_scheduler,
            reminder_scheduler=reminder_scheduler,
        )
        tune_garbage_collector()
        return services

    def start(self, own_app: ASGIApp) -> None:
        """Execute runs here, with what runs bring about: their webhooks' calls (a path
        calls `own_app`: this server's app, with these services), crons and due
        reminders."""
        self.runs.pool.start(self.runs.executor.execute, self.runs.executor.saver)
        self.cron_scheduler.start()
        self.webhooks.start(own_app)
        self.reminder_scheduler.start()

    async def close(self) -> None:
        """Stop workers (re-queueing what they could not finish), then disconnect."""
        try:
            await self.reminder_scheduler.stop()
            await self.cron_scheduler.stop()
            await self.runs.pool.stop(self.settings.shutdown_grace_s)
            await self.webhooks.stop()
            await self.broker.flush()
            await self.broker.notifier.close()
        finally:
            await self.db.close()


# New objects that start a collection of the youngest generation (Python's default: 700).
YOUNG_OBJECTS = 20_000


@functools.cache
def tune_garbage_collector() -> None:
    """Keep what the process loaded to start (modules, the app, the graphs: some 150,000
    objects) out of the garbage collector's full passes, once. Reading a long thread
    makes thousands of objects, which trigger those passes; each walked the whole heap,
    ~20 ms that every request on the event loop waited for.

    And collect the youngest objects after 20,000 new ones rather than 700: a turn on a
    long thread makes a copy of its messages that lives until the turn ends, and at 700
    every turn walked it some ten times and pushed it into the older generations, to be
    walked again (at 2,000 messages, most of a turn's garbage-collection time)."""
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
