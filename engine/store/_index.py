"""A store's semantic index: the texts a put embeds, the calls of the user's embeddings
(a model or a function, sync or async), and ranking by cosine similarity. The in-memory
and SQL stores use it alike."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from engine.store.base import IndexConfig, PutOp, get_text_at_path, tokenize_path

T = TypeVar("T")
Vector = tuple[list[float], float]  # the numbers and their norm, computed once per put


class Index:
    """A store's semantic index: which fields to embed and how to call the model.
    `store` names the store in errors; `also` are keys of the config the store reads
    itself."""

    def __init__(self, config: IndexConfig, store: str, also: frozenset[str] = frozenset()):
        unknown = set(config) - {"dims", "embed", "fields"} - also
        if unknown:
            raise ValueError(
                f"{store} index does not support {sorted(unknown)}: it takes dims, "
                "embed and fields (and always ranks by cosine similarity)."
            )
        if "embed" not in config:
            raise ValueError("An index needs `embed`: an embeddings model or function.")
        embed = config["embed"]
        if isinstance(embed, str):
            embed = named_embeddings(embed)
        if not hasattr(embed, "embed_documents") and not callable(embed):
            raise TypeError(
                "index embed must be an embeddings model (with embed_documents and "
                f"embed_query) or a function of a list of texts, got {type(embed).__name__}."
            )
        fields = config.get("fields") or ["$"]
        if not isinstance(fields, list | tuple) or not all(isinstance(f, str) for f in fields):
            raise TypeError(f"index fields must be a list of paths, got {fields!r}.")
        for path in fields:
            tokenize_path(path)  # a malformed path fails here, not at the first put
        self.fields = list(fields)
        self.dims = config.get("dims")
        # An object with embed_documents is a model; anything else callable is a function.
        self._model: Any = embed if hasattr(embed, "embed_documents") else None
        self._func: Any = None if self._model is not None else embed
        self._is_async = self._func is not None and (
            inspect.iscoroutinefunction(embed)
            or inspect.iscoroutinefunction(getattr(embed, "__call__", None))  # noqa: B004
        )

    def texts(self, op: PutOp) -> list[str]:
        """What a put embeds: the text at each path of its own index or the store's."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else op.index
        return [text for path in paths for text in get_text_at_path(op.value, path)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._model is not None:
            return self._checked(self._model.embed_documents(texts), len(texts))
        if self._is_async:
            raise TypeError(
                "The index embed function is async: use the store's async methods "
                "(aput, asearch, abatch), or give a sync function."
            )
        return self._checked(self._func(texts), len(texts))

    def embed_query(self, text: str) -> list[float]:
        if self._model is not None:
            return self._checked([self._model.embed_query(text)], 1)[0]
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._model is not None:
            if hasattr(self._model, "aembed_documents"):
                vectors = await self._model.aembed_documents(texts)
            else:
                vectors = await asyncio.to_thread(self._model.embed_documents, texts)
        elif self._is_async:
            vectors = await self._func(texts)
        else:
            vectors = await asyncio.to_thread(self._func, texts)
        return self._checked(vectors, len(texts))

    async def aembed_query(self, text: str) -> list[float]:
        if self._model is None:
            return (await self.aembed_documents([text]))[0]
        if hasattr(self._model, "aembed_query"):
            vector = await self._model.aembed_query(text)
        else:
            vector = await asyncio.to_thread(self._model.embed_query, text)
        return self._checked([vector], 1)[0]

    def _checked(self, vectors: Sequence[Sequence[float]], count: int) -> list[list[float]]:
        """Plain float lists (a model may return arrays), one per text, of `dims` numbers."""
        if len(vectors) != count:
            raise ValueError(f"The embeddings returned {len(vectors)} vectors for {count} texts.")
        result = [[float(x) for x in vector] for vector in vectors]
        for vector in result:
            if self.dims is not None and len(vector) != self.dims:
                raise ValueError(
                    f"The embeddings returned a vector of {len(vector)} numbers; "
                    f"the index expects dims={self.dims}."
                )
        return result


def named_embeddings(name: str) -> Any:
    """Embeddings named as LangGraph's stores take them (`"openai:text-embedding-3-small"`):
    made by LangChain's `init_embeddings`, of the `langchain` package (the `models` extra),
    which names the provider's package when that is missing."""
    try:
        from langchain.embeddings import init_embeddings
    except ImportError:
        raise ValueError(
            f"Embeddings named by a string ({name!r}) are made by LangChain's "
            "init_embeddings: install `langchain` (the `models` extra) and the provider's "
            "package, or pass an embeddings model or function."
        ) from None
    return init_embeddings(name)


def with_norm(numbers: list[float]) -> Vector:
    """A vector with its norm, worked out once when it is stored."""
    return (numbers, math.sqrt(sum(x * x for x in numbers)))


def rank(
    query: list[float], candidates: list[T], vectors: Callable[[T], list[Vector]]
) -> list[tuple[T, float | None]]:
    """Items with vectors by their best cosine similarity, highest first (ties keep their
    order), then the items without vectors, unscored."""
    norm = math.sqrt(sum(x * x for x in query))
    scored: list[tuple[T, float | None]] = []
    unscored: list[tuple[T, float | None]] = []
    for candidate in candidates:
        found = vectors(candidate)
        if found:
            scored.append((candidate, max(_cosine(query, norm, vector) for vector in found)))
        else:
            unscored.append((candidate, None))
    scored.sort(key=lambda pair: -cast(float, pair[1]))
    return scored + unscored


def _cosine(query: list[float], norm: float, vector: Vector) -> float:
    numbers, vector_norm = vector
    if not norm or not vector_norm:
        return 0.0
    return sum(a * b for a, b in zip(query, numbers, strict=True)) / (norm * vector_norm)
