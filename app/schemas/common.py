"""Wire pieces several resources share: sort order, interrupts, pages of search results
and the `select` of fields a client wants back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.errors import Invalid

SortOrder = Literal["asc", "desc"]
OnConflict = Literal["raise", "do_nothing"]


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
    total: int,
    offset: int,
    select: Sequence[str] | None = None,
) -> JSONResponse:
    """A page of search results with LangGraph's pagination headers: the total count and,
    when more follow, the offset of the next page. Optional fields left unset (such as
    `extracted` when nothing was extracted) stay out of the JSON."""
    rows = [item.model_dump(mode="json", exclude_unset=True) for item in items]
    if select:
        rows = [pick(row, select) for row in rows]
    headers = {"X-Pagination-Total": str(total)}
    if offset + len(rows) < total:
        headers["X-Pagination-Next"] = str(offset + len(rows))
    return JSONResponse(rows, headers=headers)
