"""How savers turn values into bytes: `jsonplus` holds the serializer (in LangGraph's
module layout), `base` the protocol that a serializer of the user's own follows."""

from engine.checkpoint.serde.jsonplus import (
    TAG,
    JsonPlusSerializer,
    JsonSerializer,
    Prepared,
    SerializationError,
    allow_schemas,
    default_serializer,
    holds_repeats,
)

__all__ = [
    "TAG",
    "JsonPlusSerializer",
    "JsonSerializer",
    "Prepared",
    "SerializationError",
    "allow_schemas",
    "default_serializer",
    "holds_repeats",
]
