"""A chat graph that answers like a model: each reply is 330 to 530 characters of its own
(`reply_to` of tests/checkpoint/chat.py), as long as the storage benchmark's replies.

The echo graph's reply repeats the user's text, which costs a record almost nothing; a
model's reply is new text, as in the chats that the storage goals are about."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from engine import START, MessagesState, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.checkpoint.chat import reply_to  # noqa: E402


def reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(reply_to(state["messages"][-1].text))]}


graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")
