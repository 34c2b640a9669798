"""The `threadline` command line."""

import argparse
from collections.abc import Sequence

import uvicorn

from app.config import get_settings


def build_parser() -> argparse.ArgumentParser:
    """Subcommands with defaults from the environment, so flags only override it."""
    settings = get_settings()
    parser = argparse.ArgumentParser(prog="threadline")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API server")
    serve.add_argument("--host", default=settings.host)
    serve.add_argument("--port", type=int, default=settings.port)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port)
    return 0
