"""The protocols of LangGraph's `langgraph.checkpoint.serde.base`, for serializers and
ciphers of the user's own."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class SerializerProtocol(Protocol):
    """Turns a value into a (type name, bytes) pair and back. `InMemorySaver` takes any
    such serializer; the SQL saver takes `JsonSerializer`s only (its queries read the
    JSON it stores)."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


class CipherProtocol(Protocol):
    """Encrypts bytes for `EncryptedSerializer`, naming the cipher it used."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]: ...

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes: ...


@runtime_checkable
class UntypedSerializerProtocol(Protocol):
    """A serializer of LangGraph's older kind: bytes without a type name."""

    def dumps(self, obj: Any) -> bytes: ...

    def loads(self, data: bytes) -> Any: ...


class SerializerCompat:
    """An untyped serializer with LangGraph's typed methods: the type name written is
    the value's class name, and reading ignores it."""

    def __init__(self, serde: UntypedSerializerProtocol) -> None:
        self.serde = serde

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return type(obj).__name__, self.serde.dumps(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.serde.loads(data[1])


def maybe_add_typed_methods(
    serde: SerializerProtocol | UntypedSerializerProtocol,
) -> SerializerProtocol:
    """`serde` as it is when it has the typed methods, else wrapped in SerializerCompat,
    as LangGraph's savers take an untyped serializer."""
    if not isinstance(serde, SerializerProtocol) and isinstance(serde, UntypedSerializerProtocol):
        return SerializerCompat(serde)
    return serde  # type: ignore[return-value]
