"""Alembic environment: one history for every table (checkpoint tables now, app tables later).

From code (`engine.checkpoint.sql.migrations`) a connection arrives in
`config.attributes["connection"]`; from the command line the URL is
THREADLINE_DATABASE_URL, else the embedded default.
"""

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from app.db.models import app_metadata
from engine.checkpoint.sql.models import checkpoint_metadata
from engine.checkpoint.sql.url import create_engine, normalize_url

config = context.config
target_metadata = [checkpoint_metadata, app_metadata]
DEFAULT_URL = "sqlite:///./data/threadline.db"


def url() -> str:
    return os.environ.get("THREADLINE_DATABASE_URL", DEFAULT_URL)


def run_migrations(connection: Connection) -> None:
    # SQLite alters a table by copying it: batch mode makes autogenerate write that.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_online() -> None:
    engine = create_engine(url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(url=normalize_url(url()), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
elif config.attributes.get("connection") is not None:
    run_migrations(config.attributes["connection"])
else:
    if config.config_file_name is not None:
        fileConfig(config.config_file_name)
    asyncio.run(run_online())
