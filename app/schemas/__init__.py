"""Pydantic request and response models: the wire contract published in openapi.json."""
