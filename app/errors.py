"""Errors a service raises for the client, and how they become JSON responses."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


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


def install(app: FastAPI) -> None:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, APIError)
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    app.add_exception_handler(APIError, handle)
