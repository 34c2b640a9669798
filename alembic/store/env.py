"""Alembic environment of the SQL store's table (`engine.store.sql`): a history of its own,
recorded in `store_alembic_version`, that never loads the server (`app`).

From code (`SQLStore.setup()`) a connection arrives in the config; from the command line
(`alembic -n store upgrade head`) the database is THREADLINE_DATABASE_URL, else the
embedded default.
"""

import os

from engine.checkpoint.sql.migrations import run_environment
from engine.store.sql.models import STORE, store_metadata

run_environment(
    STORE,
    store_metadata,
    os.environ.get("THREADLINE_DATABASE_URL", "sqlite:///./data/threadline.db"),
)
