"""Request dependencies: the app context, query helpers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.context import AppContext


def get_ctx(request: Request) -> AppContext:
    return request.app.state.ctx  # type: ignore[no-any-return]


Ctx = Annotated[AppContext, Depends(get_ctx)]
