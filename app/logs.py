"""Structured logs: one JSON object per line, tagged with the run and thread it is about.

Processes of a deployment write to stdout and a log store collects them; searching that
store by run or thread needs the ids as fields, not words inside a message. The ids live
in a context variable: bound once where a run starts executing (or by the request
middleware below), they tag every line logged from that task and the tasks it starts
(graph nodes included), with no logger having to pass them along.
"""

from __future__ import annotations

import json
import logging
import re
from contextvars import ContextVar
from datetime import UTC, datetime

from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# (run_id, thread_id) the current task works for.
_ids: ContextVar[tuple[str | None, str | None]] = ContextVar("log_ids", default=(None, None))
_UUID = r"[0-9a-fA-F]{8}-?(?:[0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}"
_PATH_IDS = re.compile(rf"^/threads/(?P<thread_id>{_UUID})(?:/runs/(?P<run_id>{_UUID}))?")


def bind(*, run_id: str | None = None, thread_id: str | None = None) -> None:
    """Tag what this task (and every task it starts from now on) logs with these ids."""
    _ids.set((run_id, thread_id))


class JsonFormatter(logging.Formatter):
    """time, level, logger, message, then run_id and thread_id when known, then the
    exception; ids passed with `extra=` win over the bound ones."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        run_id, thread_id = _ids.get()
        for key, bound in (("run_id", run_id), ("thread_id", thread_id)):
            value = getattr(record, key, None) or bound
            if value:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure(settings: Settings) -> None:
    """Send every logger (uvicorn's too) to stderr in the format and from the level of
    THREADLINE_LOG_FORMAT and THREADLINE_LOG_LEVEL; the CLI calls this once per process,
    before anything logs."""
    handler = logging.StreamHandler()
    json_lines = settings.log_format == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=settings.log_level, handlers=[handler], force=True)
    handler.addFilter(_no_schema_context)


def _no_schema_context(record: logging.LogRecord) -> bool:
    """Alembic names the dialect and its DDL mode whenever it looks at the schema (every
    start, every command): no news. What it upgrades is."""
    return not (
        record.name == "alembic.runtime.migration"
        and record.msg in ("Context impl %s.", "Will assume %s DDL.")
    )


class RequestIds:
    """Bind the thread and run a request's path names, so the lines logged while serving
    it (the access line among them) carry the ids. Each request is its own task, so the
    binding ends with the request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (found := _PATH_IDS.match(scope["path"])):
            bind(run_id=found["run_id"], thread_id=found["thread_id"])
        await self.app(scope, receive, send)
