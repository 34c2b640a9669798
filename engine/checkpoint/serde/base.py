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
