"""Embeddings for a store's index, as LangGraph's `langgraph.store.base.embed` offers them:
`ensure_embeddings` turns what a program gives (an embeddings model, a function, sync or
async, or a model's name) into LangChain's `Embeddings`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

from engine.store._index import named_embeddings
from engine.store.base import get_text_at_path, tokenize_path

__all__ = [
    "AEmbeddingsFunc",
    "EmbeddingsFunc",
    "EmbeddingsLambda",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]

EmbeddingsFunc = Callable[[Sequence[str]], list[list[float]]]
AEmbeddingsFunc = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


def ensure_embeddings(
    embed: Embeddings | EmbeddingsFunc | AEmbeddingsFunc | str | None,
) -> Embeddings:
    """`embed` as LangChain's `Embeddings`: a model as it is, a function wrapped, a name
    (`"openai:text-embedding-3-small"`) made by LangChain's `init_embeddings`."""
    if embed is None:
        raise ValueError("embed must be provided: an embeddings model, a function or a name")
    if isinstance(embed, str):
        return named_embeddings(embed)  # type: ignore[no-any-return]
    if isinstance(embed, Embeddings):
        return embed
    return EmbeddingsLambda(embed)


class EmbeddingsLambda(Embeddings):
    """A function of texts as LangChain's `Embeddings`. A sync function serves both the
    sync and the async methods (the latter in a worker thread, as LangChain's default);
    an async one the async methods only."""

    def __init__(self, func: EmbeddingsFunc | AEmbeddingsFunc) -> None:
        if func is None:
            raise ValueError("func must be provided")
        self.func: Any = None if _is_async(func) else func
        self.afunc: Any = func if self.func is None else None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.func is None:
            raise ValueError(
                "EmbeddingsLambda was made with an async function: call aembed_documents "
                "(or give a sync function)."
            )
        return self.func(texts)  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.afunc is None:
            return await super().aembed_documents(texts)
        return await self.afunc(texts)  # type: ignore[no-any-return]

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


def _is_async(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 (a callable object's own method)
    )
