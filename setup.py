"""The one part of the build pyproject.toml cannot declare: the top-level `alembic/`
folder ships in the wheel as the package `threadline_migrations` (a package named
`alembic` would shadow the Alembic library), and pyproject's package discovery cannot
give a folder another name."""

from setuptools import find_namespace_packages, setup

MIGRATIONS = "threadline_migrations"

setup(
    packages=[
        *find_namespace_packages(include=["engine*", "app*"]),
        MIGRATIONS,
        f"{MIGRATIONS}.versions",
        f"{MIGRATIONS}.checkpoint",
        f"{MIGRATIONS}.checkpoint.versions",
        f"{MIGRATIONS}.store",
        f"{MIGRATIONS}.store.versions",
    ],
    package_dir={MIGRATIONS: "alembic"},
)
