"""Alembic environment of the server's tables (assistants, threads, runs, ...), recorded in
`alembic_version`. The checkpoint tables have their own history (`checkpoint/`), which
`threadline migrate` upgrades first.

From code (`app.db.migrations`) a connection arrives in the config; from the command line
(`alembic upgrade head`) the database is THREADLINE_DATABASE_URL, else the embedded default.
"""

import os

from app.db.migrations import SERVER
from app.db.models import app_metadata
from engine.checkpoint.sql.migrations import run_environment

run_environment(
    SERVER,
    app_metadata,
    os.environ.get("THREADLINE_DATABASE_URL", "sqlite:///./data/threadline.db"),
)
