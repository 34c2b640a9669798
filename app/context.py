"""Everything a request handler reaches: built once at startup, closed at shutdown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.config import Settings
from app.db.database import Database
from app.graphs import GraphRegistry
from engine.checkpoint.sql.saver import SQLSaver

if TYPE_CHECKING:
    from app.runs.broker import StreamBroker
    from app.runs.service import RunService


@dataclass
class AppContext:
    settings: Settings
    db: Database
    saver: SQLSaver
    graphs: GraphRegistry
    broker: StreamBroker
    runs: RunService
