"""Wire models of the store: JSON documents under a namespace path and a key, shared by
every thread (cross-thread memory)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, StrictFloat

from app.db.models import StoreItemRow
from app.limits import (
    MAX_KEY_LENGTH,
    MAX_NAMESPACE_LABELS,
    MAX_TTL_MINUTES,
    Filter,
    Offset,
    PageSize,
)
from app.schemas.common import RequestModel


class ItemKey(RequestModel):
    namespace: list[str] = Field(
        max_length=MAX_NAMESPACE_LABELS,
        description='Path of labels, such as ["users", "u1"]; '
        f"{MAX_KEY_LENGTH} characters at most, counting one between labels.",
    )
    key: str = Field(min_length=1, max_length=MAX_KEY_LENGTH)


class ItemPut(ItemKey):
    value: dict[str, Any]
    index: Literal[False] | list[str] | None = Field(
        default=None, description="Fields to index for semantic search: accepted, unused."
    )
    ttl: StrictFloat | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_MINUTES,
        allow_inf_nan=False,
        description="Minutes the item lives after it is put or last read (a read that "
        "refreshes moves it on); null: it stays.",
    )


class ItemSearch(RequestModel):
    namespace_prefix: list[str] = Field(default_factory=list, max_length=MAX_NAMESPACE_LABELS)
    filter: Filter | None = Field(
        default=None,
        description="Items whose value contains this object; a field given as operators "
        '(`{"score": {"$gte": 3}}`: `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`) is compared '
        "instead, and must be there.",
    )
    limit: PageSize = 10
    offset: Offset = 0
    query: str | None = Field(
        default=None,
        description="Natural-language query: this store has no semantic index, so it does "
        "not change the results (as in LangGraph stores without an index).",
    )
    refresh_ttl: bool | None = Field(
        default=None,
        description="Whether the items found with a `ttl` live that long again from now "
        "(the default, as in LangGraph).",
    )


class NamespaceSearch(RequestModel):
    prefix: list[str] | None = Field(
        default=None, max_length=MAX_NAMESPACE_LABELS, description='Labels; "*" matches any.'
    )
    suffix: list[str] | None = Field(
        default=None, max_length=MAX_NAMESPACE_LABELS, description='Labels; "*" matches any.'
    )
    max_depth: int | None = Field(
        default=None, ge=1, le=MAX_NAMESPACE_LABELS, description="Cut longer paths to this."
    )
    limit: PageSize = 100
    offset: Offset = 0


class Item(BaseModel):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: StoreItemRow, namespace: list[str]) -> Item:
        return cls(
            namespace=namespace,
            key=row.key,
            value=row.value,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


class SearchItem(Item):
    score: float | None = Field(default=None, description="Always null: no semantic index.")


class SearchItems(BaseModel):
    items: list[SearchItem]


class Namespaces(BaseModel):
    namespaces: list[list[str]]
