"""A graph call refuses options it would not use (LangGraph ignores them), and says where
an option it was given belongs when it is a config key."""

from __future__ import annotations

from typing import Any

import pytest

from engine import START, MessagesState, StateGraph


def _graph() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [("ai", "hi")]})
    return builder.add_edge(START, "reply").compile()


def test_a_config_key_given_as_an_option_is_refused_naming_the_config() -> None:
    with pytest.raises(TypeError, match=r"'max_concurrency'.*config=\{'max_concurrency'"):
        _graph().batch([{"messages": []}], max_concurrency=2)


async def test_an_unknown_option_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match="Unknown option 'colour'.*LangGraph ignores"):
        await _graph().ainvoke({"messages": []}, colour="blue")
