"""The SQL store's one table, on a MetaData of its own: its schema is an Alembic history
of its own (`STORE`, the repository's `alembic/store/`), recorded in
`store_alembic_version`, apart from the checkpoint tables' and the server's.

An item is a row keyed by its namespace, the labels joined with "." (a label holds no
"."), and its key: a prefix search is one indexed LIKE.
"""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Float, LargeBinary, MetaData, Table, Text

from engine.checkpoint.sql.migrations import MigrationHistory

store_metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

store_items = Table(
    "engine_store_items",
    store_metadata,
    Column("prefix", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    # The value's JSON as written (key order kept, as a put gave it).
    Column("value", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # An item put with a ttl (minutes) expires when `expires_at` passes: a sweep deletes
    # it (reads skip it before, with omit_expired); a read that refreshes moves it on.
    Column("ttl_minutes", Float),
    Column("expires_at", DateTime(timezone=True), index=True),
    # With a semantic index: the embeddings of the item's indexed texts, float32 each,
    # one after another (`dims` numbers a vector).
    Column("vectors", LargeBinary),
)

STORE = MigrationHistory(
    name="store tables",
    package="threadline_migrations.store",
    version_table="store_alembic_version",
    legacy=lambda _connection: None,
)
