"""Errors a service raises for the client, and how they become JSON responses."""

from __future__ import annotations

import logging
import re
import sqlite3

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from engine.checkpoint.sql.saver import TRANSIENT_SQLSTATES

log = logging.getLogger(__name__)
# How long a client should wait before retrying while the database is unreachable.
UNAVAILABLE_RETRY_AFTER_S = 2
# What SQLite says of a statement past one of its size limits (an expression tree, a LIKE
# pattern, bound variables, the parser's stack): its code, SQLITE_ERROR, is no finer.
_SQLITE_LIMIT = re.compile(r"too (large|big|complex|many)|stack overflow")


def validation_problems(exc: ValidationError | RequestValidationError, whole: str = "") -> str:
    """Each error of `exc` as `field.path: message`, joined by "; " (`whole` names an
    error of the value as a whole, which has no path)."""
    return "; ".join(
        f"{'.'.join(map(str, error['loc'])) or whole}: {error['msg']}" for error in exc.errors()
    )


class APIError(Exception):
    """Something the client asked for that cannot be done: a 4xx with a reason."""

    status_code = 400

    def __init__(self, detail: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers


class Unauthorized(APIError):
    """A missing or bad credential: the same answer for both, so nothing is learnt."""

    status_code = 401

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": "Bearer"})


class NotFound(APIError):
    status_code = 404


class Conflict(APIError):
    status_code = 409


class TooLarge(APIError):
    status_code = 413


class Invalid(APIError):
    status_code = 422


class TooManyRequests(APIError):
    """A per-user limit is reached; `Retry-After` says when to try again."""

    status_code = 429

    def __init__(self, detail: str, *, retry_after_s: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after_s)})


def refused_by_database(exc: DBAPIError) -> int | None:
    """413 when the database refused a statement of the request as too large, 422 when it
    refused one of its values (too long, out of range); None for any other error. The
    input limits keep requests clear of both: this is the net under them."""
    sqlstate = getattr(exc.orig, "sqlstate", None) or ""  # PostgreSQL (asyncpg, psycopg)
    if sqlstate.startswith("54"):  # program_limit_exceeded
        return 413
    if sqlstate.startswith("22"):  # data_exception
        return 422
    if isinstance(exc.orig, sqlite3.Error) and (
        getattr(exc.orig, "sqlite_errorcode", None) in (sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE)
        or _SQLITE_LIMIT.search(str(exc.orig))
    ):
        return 413
    return None


def _unavailable(exc: DBAPIError) -> bool:
    """Whether the database failed the request for a while, not for good: unreached or
    lost, out of connections, shutting down or starting up (asyncpg's "the database
    system is starting up" comes as a plain DBAPIError, with its SQLSTATE)."""
    sqlstate = str(getattr(exc.orig, "sqlstate", None) or "")
    return (
        exc.connection_invalidated
        or isinstance(exc, OperationalError | InterfaceError)
        or sqlstate.startswith(TRANSIENT_SQLSTATES)
    )


def database_unavailable(exc: BaseException) -> bool:
    """Whether `exc` is the database's failing for a while (what answers 503), so that the
    same work may succeed if tried again shortly."""
    if isinstance(exc, DBAPIError):
        return refused_by_database(exc) is None and _unavailable(exc)
    return isinstance(exc, PoolTimeout | OSError)


def install(app: FastAPI) -> None:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, APIError)
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        """The database is down, restarting or out of connections: the request may
        succeed later, so 503 and not 500. A request the database refused is the
        client's to change (413, 422); any other database error is a bug: a 500."""
        where = f"{request.method} {request.url.path}"
        if isinstance(exc, DBAPIError) and (refused := refused_by_database(exc)) is not None:
            log.warning("%s: the database refused the request: %r", where, exc.orig)
            detail = (
                "The request is too large for the database: see the input limits."
                if refused == 413
                else "The database refused a value of the request as invalid or out of range."
            )
            return JSONResponse({"detail": detail}, status_code=refused)
        if isinstance(exc, DBAPIError) and not _unavailable(exc):
            raise exc
        log.warning("%s: the database is unavailable: %r", where, exc)
        return JSONResponse(
            {"detail": "The database is unavailable at the moment; retry shortly."},
            status_code=503,
            headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)},
        )

    async def malformed(_request: Request, exc: Exception) -> JSONResponse:
        """FastAPI's answer (`detail`: the errors), and with it the same as one line in
        `message`: langgraph-sdk's exceptions show a string `message` or `detail`, and
        without one said only "422 Unprocessable Entity"."""
        assert isinstance(exc, RequestValidationError)
        return JSONResponse(
            {"detail": jsonable_encoder(exc.errors()), "message": validation_problems(exc)},
            status_code=422,
        )

    app.add_exception_handler(APIError, handle)
    app.add_exception_handler(RequestValidationError, malformed)
    for database_down in (DBAPIError, PoolTimeout, OSError):
        app.add_exception_handler(database_down, unavailable)
