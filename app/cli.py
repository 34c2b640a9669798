"""The `threadline` command line: `serve`, `worker`, `migrate`, `users` and `config`.

Every option's default comes from a THREADLINE_* variable (app/config.py), so flags only
override the environment; each subcommand's help lists the variables it reads. A variable
with a value that does not fit stops every subcommand with one line naming it (exit 2).
"""

import argparse
import asyncio
import logging
import sys
import textwrap
import traceback
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from app import __version__, auth, graphs, logs, project
from app.config import (
    Settings,
    SettingsError,
    describe,
    description,
    get_settings,
    markdown_table,
    plain,
    read_by,
    shown_default,
    unknown,
    variable,
)
from app.db.database import Database, SchemaOutdatedError
from app.db.migrations import migrate
from app.main import create_app
from app.worker import run_worker

log = logging.getLogger(__name__)
WIDTH = 80  # of the help's paragraphs

DESCRIPTION = (
    "Threadline: an HTTP chat server speaking the LangGraph Agent Server API, with its own "
    "graph engine. Settings are THREADLINE_* environment variables (`threadline config` "
    "prints them); a langgraph.json here (or THREADLINE_CONFIG) is served as a LangGraph "
    "project."
)
# name: (one line for the command list, the description of the command's own help)
COMMANDS = {
    "serve": (
        "run the HTTP API server (and execute runs)",
        "Serve the HTTP API. This process also executes runs unless --no-worker is given "
        "(or THREADLINE_RUN_WORKERS=false); `threadline worker` processes then execute them.",
    ),
    "worker": (
        "execute runs only (no HTTP); scale out with many",
        "Execute the runs the API queues, with no HTTP server. Start as many as the load "
        "needs, on one shared PostgreSQL database. SIGTERM gives the runs in flight "
        "THREADLINE_SHUTDOWN_GRACE_S to finish, then re-queues those still running.",
    ),
    "migrate": (
        "upgrade the database schema to the latest version",
        "Upgrade the database of THREADLINE_DATABASE_URL to the latest schema (creating it "
        "if needed); `serve` refuses a database that is behind. Run it once per "
        "deployment, before the servers start.",
    ),
    "users": (
        "users and API keys of THREADLINE_AUTH=api_key",
        "Manage the users and their API keys in the database (THREADLINE_AUTH=api_key).",
    ),
    "config": (
        "print every setting: its value, default and meaning",
        "Print every THREADLINE_* variable with its current value (secrets and the "
        "database password masked), its default and its meaning.",
    ),
}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Options with their defaults; the environment epilog as it is laid out."""


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run a long-lived process on uvloop, as uvicorn runs the API server, where it is
    installed (`uvicorn[standard]` brings it on Linux and macOS)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def environment_help(command: str, width: int = WIDTH) -> str:
    """The variables a subcommand reads, with their defaults and meanings."""
    lines = ["environment (command-line options win over it):"]
    for name in read_by(command):
        lines.append(f"  {variable(name)}, default: {plain(shown_default(name))}")
        lines.extend(
            textwrap.wrap(
                plain(description(name)), width, initial_indent="      ", subsequent_indent="      "
            )
        )
    return "\n".join(lines)


def port(text: str) -> int:
    """A TCP port, as THREADLINE_PORT takes it (uvicorn would listen on another)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return value


def address(text: str) -> str:
    """An address to listen on, as THREADLINE_HOST takes it (`[::1]` is `::1`)."""
    try:
        return Settings._host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    """Subcommands with defaults from the environment, so flags only override it."""
    parser = argparse.ArgumentParser(
        prog="threadline",
        description=textwrap.fill(DESCRIPTION, WIDTH),
        epilog="`threadline <command> --help` describes a command and the variables it reads.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="<command>")

    def command(name: str) -> argparse.ArgumentParser:
        summary, text = COMMANDS[name]
        parsed = commands.add_parser(
            name,
            help=summary,
            description=textwrap.fill(text, WIDTH),
            epilog=environment_help(name) if name != "config" else None,
            formatter_class=HelpFormatter,
        )
        # Read before the parser runs (`given_project`); declared here for the help.
        parsed.add_argument(
            "--config",
            metavar="PATH",
            help="a LangGraph project's langgraph.json, as `langgraph dev --config` takes "
            "it (THREADLINE_CONFIG; default: ./langgraph.json if there is one)",
        )
        return parsed

    serve = command("serve")
    serve.add_argument(
        "--host", type=address, default=settings.host, help="the address to listen on"
    )
    serve.add_argument("--port", type=port, default=settings.port, help="the port to listen on")
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="serve the API only; runs are executed by `threadline worker` processes",
    )
    command("worker")
    command("migrate")
    users = command("users")
    actions = users.add_subparsers(dest="action", required=True, metavar="<action>")

    def action(name: str, text: str) -> argparse.ArgumentParser:
        return actions.add_parser(
            name,
            help=text,
            description=text[:1].upper() + text[1:] + ".",
            formatter_class=HelpFormatter,
        )

    action("add", "add a user").add_argument("name", help="the user's name")
    action("key", "make an API key for a user (printed once)").add_argument(
        "name", help="the user's name"
    )
    action("revoke", "revoke an API key").add_argument(
        "key", help="the key, its prefix (tl_<prefix>_...) or its id"
    )
    command("config").add_argument(
        "--markdown",
        action="store_true",
        help="print the table of docs/operations.md instead: every variable's default and meaning",
    )
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


async def ready(url: str) -> None:
    """The database at `url` reached, its schema made if it is new, else checked."""
    db = Database(url)
    try:
        await db.prepare()
    finally:
        await db.close()


# A database URL SQLAlchemy cannot read or has no driver for, a database it cannot reach
# or open (refused, a wrong password, no such database, a read-only folder), or one whose
# schema is behind.
DATABASE_PROBLEMS = (ArgumentError, NoSuchModuleError, DBAPIError, OSError, SchemaOutdatedError)


def database_problem(exc: BaseException) -> str:
    """The first line of what went wrong: the driver's words rather than SQLAlchemy's
    wrapping of them."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    text = str(cause).strip() or type(cause).__name__
    return text.splitlines()[0]


def given_project(argv: Sequence[str] | None) -> str | None:
    """The `--config` of a command line, which names the project the settings are read
    with, so it is read before the command is."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    known, _ = pre.parse_known_args(argv)
    return known.config  # type: ignore[no-any-return]


def load_settings(path: str | None = None) -> tuple[Settings, project.Project | None]:
    """The settings, and the LangGraph project at `path`, else here (`langgraph.json`, or
    THREADLINE_CONFIG): its `env` variables go into the environment (under those set)
    before the settings are read again, and its path into the settings' config_file.
    Raises SettingsError or ProjectError."""
    settings = get_settings()
    found = project.find(path or settings.config_file, Path.cwd())
    if found is None:
        return settings, None
    opened = project.Project.read(found)
    opened.apply_env()
    return get_settings().model_copy(update={"config_file": str(opened.path)}), opened


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    problem: SettingsError | project.ProjectError | None = None
    try:
        settings, opened = load_settings(given_project(argv))
    except (SettingsError, project.ProjectError) as exc:
        # The help and --version still work; any command stops below.
        problem, settings, opened = exc, Settings(), None
    parser = build_parser(settings)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if isinstance(problem, SettingsError):
        for line in problem.problems:
            print(f"threadline: {line}", file=sys.stderr)
        return 2
    if problem is not None:
        print(f"threadline: {problem}", file=sys.stderr)
        return 1
    ignored = ", ".join(unknown())
    if args.command == "config":
        print(markdown_table() if args.markdown else describe(settings), end="")
        if ignored and not args.markdown:
            print(f"threadline: not settings, ignored: {ignored}", file=sys.stderr)
        return 0
    logs.configure(settings)
    if ignored:
        log.warning("not settings, ignored: %s", ignored)
    if opened is not None:
        served = "THREADLINE_GRAPHS" if settings.graphs else ", ".join(opened.graphs)
        log.info("project %s: serving %s", opened.path, served)
    try:
        # What the command needs of the database, done (or checked) before it starts: a
        # database that cannot be used is one line naming the setting, not a traceback.
        if args.command == "migrate":
            asyncio.run(migrate(settings.database_url))
        elif args.command == "users":
            print(asyncio.run(manage_users(settings, args)))
        else:
            asyncio.run(ready(settings.database_url))
    except auth.UserError as exc:
        print(f"threadline users {args.action}: {exc}", file=sys.stderr)
        return 1
    except DATABASE_PROBLEMS as exc:
        where = f"THREADLINE_DATABASE_URL ({settings.shown('database_url')})"
        print(f"threadline: {where}: {database_problem(exc)}", file=sys.stderr)
        return 2
    if args.command == "migrate":
        print(f"database at {settings.shown('database_url')} is up to date")
        return 0
    if args.command == "users":
        return 0
    if args.command == "serve":
        # The flags' address is the server's own, which its demo weather service is at.
        chosen = {"host": args.host, "port": args.port}
        settings = settings.model_copy(
            update=chosen | ({"run_workers": False} if args.no_worker else {})
        )
    try:
        app = create_app(settings) if args.command == "serve" else None
        if app is not None:
            auth.check(settings)
        graphs.check_imports(settings)
    except auth.AuthConfigError as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    except project.ProjectError as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 1
    except graphs.GraphConfigError as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        if not isinstance(exc.__cause__, ImportError | OSError | AttributeError | None):
            # The project's own code failed as it was imported: where it did is the news.
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        return 1
    if app is None:
        run_loop(run_worker(settings))
    else:
        # log_config=None: uvicorn's loggers go through the handler `logs` installed.
        uvicorn.run(app, host=args.host, port=args.port, log_config=None)
    return 0
