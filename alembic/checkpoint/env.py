"""Alembic environment of the checkpoint tables (the engine's SQL saver): a history of
their own, recorded in `checkpoint_alembic_version`, that never loads the server (`app`).

From code (`engine.checkpoint.sql.migrations`, `SQLSaver.setup()`) a connection arrives in
the config; from the command line (`alembic -n checkpoint upgrade head`) the database is
THREADLINE_DATABASE_URL, else the embedded default.
"""

import os

from engine.checkpoint.sql.migrations import CHECKPOINT, run_environment
from engine.checkpoint.sql.models import checkpoint_metadata

run_environment(
    CHECKPOINT,
    checkpoint_metadata,
    os.environ.get("THREADLINE_DATABASE_URL", "sqlite:///./data/threadline.db"),
)
