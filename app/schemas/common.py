"""Wire pieces several resources share: sort order, interrupts, pages of search results,
the `select` of fields a client wants back, and the error answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from app.errors import Invalid

SortOrder = Literal["asc", "desc"]
OnConflict = Literal["raise", "do_nothing"]


class RequestModel(BaseModel):
    """A body a client sends: a field this server does not know is refused (422 naming
    it) rather than silently dropped, so a typo or an unsupported option never passes."""

    model_config = ConfigDict(extra="forbid")


def refusal(message: str) -> PydanticCustomError:
    """A validator's error that says `message`: a ValueError would put the exception
    object itself in the 422's `ctx`, which JSON shows as `{}`; this puts the words."""
    return PydanticCustomError("value_error", "Value error, {error}", {"error": message})


class Error(BaseModel):
    """An error answer: what went wrong, in words."""

    detail: str


class FieldError(BaseModel):
    """One field a request got wrong (FastAPI's validation error)."""

    model_config = ConfigDict(extra="allow")

    loc: list[str | int] = Field(description="Where: `body`, `query`... then the field's path.")
    msg: str
    type: str


class FieldErrors(BaseModel):
    """A request whose fields do not fit the schema: each one named."""

    detail: list[FieldError]


# The error answers of every resource's endpoints, as documented in openapi.json.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": Error, "description": "No credential, or a bad one."},
    404: {"model": Error, "description": "Not found: missing, or another user's."},
    409: {"model": Error, "description": "In conflict with the resource as it stands."},
    413: {"model": Error, "description": "Too large: the body, or too many messages."},
    422: {"model": Error | FieldErrors, "description": "Invalid: why, or the fields wrong."},
    429: {"model": Error, "description": "A per-user limit is reached: see Retry-After."},
}


class Interrupt(BaseModel):
    """A question a node asked with `interrupt()`; answer it with `command.resume`."""

    value: Any
    id: str


def pick(data: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """Only the selected fields; `values.messages` selects one key of `values`."""
    out: dict[str, Any] = {}
    for name in fields:
        head, _, key = name.partition(".")
        if head not in data:
            raise Invalid(f"select: unknown field {name!r}; fields: {sorted(data)}.")
        if not key:
            out[head] = data[head]
        elif isinstance(data[head], dict) and key in data[head]:
            part = out.setdefault(head, {})
            if part is not data[head]:  # unless the whole field was selected too
                part[key] = data[head][key]
    return out


def page(
    items: Sequence[BaseModel],
    *,
    total: int | None,
    offset: int,
    select: Sequence[str] | None = None,
) -> JSONResponse:
    """A page of search results with LangGraph's pagination headers (unless `total` is
    None, for lists that do not count): the total count and, when more follow, the offset
    of the next page. Optional fields left unset (such as `extracted` when nothing was
    extracted) stay out of the JSON."""
    rows = [item.model_dump(mode="json", exclude_unset=True) for item in items]
    if select:
        rows = [pick(row, select) for row in rows]
    headers = {}
    if total is not None:
        headers["X-Pagination-Total"] = str(total)
        if offset + len(rows) < total:
            headers["X-Pagination-Next"] = str(offset + len(rows))
    return JSONResponse(rows, headers=headers)
