"""JSON objects stored deflated, for columns whose values are small and repetitive.

Neither database compresses a small value: PostgreSQL compresses only rows over 2 kB,
SQLite never. A run's kwargs repeat the user's message, some 250 bytes a chat turn;
deflated against a dictionary of what kwargs hold, they take about 150. A stored value
is the byte `PACKED` and the deflate stream, or the JSON text itself (UTF-8) when that
is not longer: short objects, and the rows that revision 0019 kept as they were.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from sqlalchemy import Dialect, LargeBinary, TypeDecorator

# What a run's kwargs hold, most frequent last (deflate reaches the end most cheaply).
# Stored rows need it as it is: another dictionary needs another first byte than PACKED.
_KWARGS_DICTIONARY = (
    b'"config":{"configurable":{},"tags":[],"recursion_limit":25},"context":{},'
    b'"interrupt_before":[],"interrupt_after":[],"webhook":"https://","durability":"async",'
    b'"on_completion":"keep","stream_mode":["values","updates","messages-tuple","custom"],'
    b'"stream_subgraphs":true,"stream_resumable":true,"checkpoint":{"checkpoint_ns":"",'
    b'"command":{"resume":{"goto":null,"update":null},"checkpoint_id":"'
    b'{"input":{"messages":[{"type":"human","content":[{"type":"text","text":"'
    b'{"input":{"messages":[{"role":"user","content":"'
)
PACKED = b"\x01"  # first byte of a deflated object; a JSON object's text starts with "{"


def pack_json(value: dict[str, Any]) -> bytes:
    """`value` as `PackedJSON` stores it: deflated, or its text when that is shorter."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    plain = text.encode()  # the API refuses lone surrogates (`app.middleware`)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=_KWARGS_DICTIONARY)
    packed = PACKED + packer.compress(plain) + packer.flush()
    return packed if len(packed) < len(plain) else plain


def unpack_json(data: bytes) -> dict[str, Any]:
    """What `pack_json` stored, or the JSON text of a row written before revision 0019."""
    if data[:1] == PACKED:
        unpacker = zlib.decompressobj(-15, zdict=_KWARGS_DICTIONARY)
        data = unpacker.decompress(data[1:]) + unpacker.flush()
    return json.loads(data)  # type: ignore[no-any-return]


class PackedJSON(TypeDecorator[dict[str, Any]]):
    """A JSON object, stored as `pack_json` packs it. SQL cannot look into it: the
    server reads it whole."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: dict[str, Any] | None, dialect: Dialect) -> bytes | None:
        return None if value is None else pack_json(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> dict[str, Any] | None:
        return None if value is None else unpack_json(value)
