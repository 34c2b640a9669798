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
    # A resume that answers no waiting interrupt is refused, whatever `strict_resume` says.
    strict_resume: bool = True


class Info(BaseModel):
    """Answer of `GET /info`."""

    version: str
    flags: InfoFlags
