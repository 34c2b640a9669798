"""Wire models of the health and server-info endpoints."""

from pydantic import BaseModel


class Ok(BaseModel):
    """Liveness answer of `GET /ok`."""

    ok: bool = True


class InfoFlags(BaseModel):
    """Optional features, named as LangGraph servers name them, so clients can probe them."""

    assistants: bool = True
    crons: bool = False
    langsmith: bool = False


class Info(BaseModel):
    """Answer of `GET /info`."""

    version: str
    flags: InfoFlags
