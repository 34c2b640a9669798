"""The `threadline` command line."""

import argparse
import asyncio
import logging
import os
from collections.abc import Sequence

import uvicorn

from app.config import Settings, get_settings
from app.worker import run_worker
from engine.checkpoint.sql.migrations import migrate


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    settings = get_settings()
    args = build_parser(settings).parse_args(argv)
    if args.command == "migrate":
        asyncio.run(migrate(settings.database_url))
        print(f"database at {settings.database_url} is up to date")
    elif args.command == "worker":
        logging.basicConfig(level=logging.INFO)
        asyncio.run(run_worker(settings))
    elif args.command == "serve":
        if args.no_worker:
            # The app factory reads settings from the environment in the server process.
            os.environ["THREADLINE_RUN_WORKERS"] = "0"
        uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port)
    return 0
