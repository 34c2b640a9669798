"""How savers turn values into bytes, in LangGraph's module layout: `jsonplus` holds the
serializer, `base` the protocol that a serializer of the user's own follows."""
