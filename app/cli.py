"""The `threadline` command line."""

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from sqlalchemy import make_url

from app import auth, logs, project
from app.config import Settings, get_settings
from app.db.database import Database
from app.db.migrations import migrate
from app.worker import run_worker

log = logging.getLogger(__name__)


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run a long-lived process on uvloop, as uvicorn runs the API server, where it is
    installed (`uvicorn[standard]` brings it on Linux and macOS)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    """Subcommands with defaults from the environment, so flags only override it."""
    parser = argparse.ArgumentParser(prog="threadline")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API server (and run workers)")
    serve.add_argument("--host", default=settings.host)
    serve.add_argument("--port", type=int, default=settings.port)
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="serve the API only; runs are executed by `threadline worker` processes",
    )
    commands.add_parser("worker", help="execute runs only (no HTTP); scale out with many")
    commands.add_parser("migrate", help="upgrade the database schema to the latest version")
    users = commands.add_parser("users", help="users and API keys of THREADLINE_AUTH=api_key")
    actions = users.add_subparsers(dest="action", required=True)
    actions.add_parser("add", help="add a user").add_argument("name")
    key = actions.add_parser("key", help="make an API key for a user (printed once)")
    key.add_argument("name")
    revoke = actions.add_parser("revoke", help="revoke an API key")
    revoke.add_argument("key", help="the key, its prefix (tl_<prefix>_...) or its id")
    return parser


async def manage_users(settings: Settings, args: argparse.Namespace) -> str:
    """Do one `users` action on the configured database; what to print."""
    db = Database(settings.database_url)
    try:
        await db.prepare()
        if args.action == "add":
            await auth.add_user(db, args.name)
            return f"added user {args.name}"
        if args.action == "key":
            return await auth.issue_key(db, args.name)
        return f"revoked an API key of user {await auth.revoke_key(db, args.key)}"
    finally:
        await db.close()


def open_project() -> project.Project | None:
    """The LangGraph project here (`langgraph.json`, or THREADLINE_CONFIG): its variables
    go into the environment (under those set) before the settings are read, and its path
    into THREADLINE_CONFIG, where the server (a uvicorn factory) finds it."""
    found = project.find(os.environ, Path.cwd())
    if found is None:
        return None
    opened = project.Project.read(found)
    opened.apply_env()
    os.environ["THREADLINE_CONFIG"] = str(opened.path)
    return opened


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    try:
        opened = open_project()
    except project.ProjectError as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 1
    settings = get_settings()
    args = build_parser(settings).parse_args(argv)
    logs.configure()
    if opened is not None:
        graphs = "THREADLINE_GRAPHS" if settings.graphs else ", ".join(opened.graphs)
        log.info("project %s: serving %s", opened.path, graphs)
    if args.command == "migrate":
        asyncio.run(migrate(settings.database_url))
        where = make_url(settings.database_url).render_as_string(hide_password=True)
        print(f"database at {where} is up to date")
    elif args.command == "users":
        try:
            print(asyncio.run(manage_users(settings, args)))
        except auth.UserError as exc:
            print(f"threadline users {args.action}: {exc}", file=sys.stderr)
            return 1
    elif args.command == "worker":
        run_loop(run_worker(settings))
    elif args.command == "serve":
        if args.no_worker:
            # The app factory reads settings from the environment in the server process.
            os.environ["THREADLINE_RUN_WORKERS"] = "0"
        # log_config=None: uvicorn's loggers go through the handler `logs` installed.
        uvicorn.run(
            "app.main:create_app", factory=True, host=args.host, port=args.port, log_config=None
        )
    return 0
