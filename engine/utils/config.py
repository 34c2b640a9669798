"""`from langgraph.utils.config import get_config, get_store`: an older path to
`engine.config`'s functions."""

from engine.config import get_config, get_store

__all__ = ["get_config", "get_store"]
