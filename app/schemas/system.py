"""Wire models of the health and server-info endpoints."""

from typing import Literal

from pydantic import BaseModel


class Ok(BaseModel):
    """Answer of `GET /ok`; `services` (with `check_db=1`) says which dependency is down."""

    ok: bool = True
    services: dict[str, Literal["healthy", "unhealthy"]] | None = None


class InfoFlags(BaseModel):
    """Optional features, named as LangGraph servers name them, so clients can probe them."""

    assistants: bool = True
    crons: bool = True
    langsmith: bool = False


class Info(BaseModel):
    """Answer of `GET /info`."""

    version: str
    flags: InfoFlags
