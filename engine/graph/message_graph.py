"""`MessageGraph`: LangGraph's deprecated graph whose whole state is a list of messages."""

from __future__ import annotations

import warnings
from typing import Annotated

from langchain_core.messages import AnyMessage

from engine.graph.message import add_messages
from engine.graph.state import StateGraph
from engine.warnings import LangGraphDeprecatedSinceV10

__all__ = ["MessageGraph"]


class MessageGraph(StateGraph):
    """A `StateGraph` whose state is one list of messages merged with `add_messages`:
    nodes and routers get the list, a node returns a message or a list of them.
    Deprecated since LangGraph 1.0: use a state with a `messages` key
    (`MessagesState`)."""

    def __init__(self) -> None:
        warnings.warn(
            "MessageGraph is deprecated in LangGraph v1.0.0, to be removed in v2.0.0. Please "
            "use StateGraph with a `messages` key instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        super().__init__(Annotated[list[AnyMessage], add_messages])
