"""LangChain messages of every class and shape, for tests that store or merge them; a
user message dict with Anthropic blocks; messages as the previous engine stored them; and
the check that one came back as itself."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)

USAGE: dict[str, Any] = {
    "input_tokens": 30,
    "output_tokens": 4,
    "total_tokens": 34,
    "input_token_details": {"cache_read": 10},
}
TOOL_CALL: dict[str, Any] = {
    "name": "search",
    "args": {"q": "weather", "days": [1, 2]},
    "id": "call_1",
    "type": "tool_call",
}
BLOCKS: list[Any] = [
    {"type": "text", "text": "look at this"},
    {"type": "image", "source_type": "url", "url": "https://example.com/cat.png"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
]


def user_dict_with_blocks(message_id: str) -> dict[str, Any]:
    """A user message as an OpenAI-style dict whose blocks are in Anthropic's form (a
    cache_control mark, a base64 image source): what `add_messages(format=
    "langchain-openai")` converts. A new dict on every call."""
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": "look:", "cache_control": {"type": "ephemeral"}},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
            },
        ],
        "id": message_id,
    }


def sample_messages() -> list[BaseMessage]:
    """One or more messages of every class, with content blocks, tool calls, invalid tool
    calls, usage, artifacts, names, metadata and extra fields; new objects on every call."""
    return [
        HumanMessage("hi", id="h1"),
        HumanMessage(
            BLOCKS,
            id="h2",
            name="ann",
            additional_kwargs={"client": {"v": 1}},
            response_metadata={"seen": [1, 2]},
        ),
        HumanMessage("with extra fields", id="h3", mood="curious", tags_seen=["a"]),
        SystemMessage("be brief", id="s1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[TOOL_CALL],
            usage_metadata=USAGE,
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
        ),
        AIMessage(
            "half a call",
            id="a2",
            invalid_tool_calls=[
                {
                    "name": "search",
                    "args": '{"q": "wea',
                    "id": "call_2",
                    "error": "bad JSON",
                    "type": "invalid_tool_call",
                }
            ],
        ),
        AIMessage([{"type": "text", "text": "sunny"}, {"type": "text", "text": "!"}], id="a3"),
        ToolMessage(
            "sunny",
            tool_call_id="call_1",
            id="t1",
            name="search",
            artifact={"raw": (1, 2), "at": dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC)},
            status="error",
        ),
        ToolMessage([{"type": "text", "text": "block result"}], tool_call_id="call_3", id="t2"),
        ChatMessage("a role of its own", role="critic", id="c1"),
        FunctionMessage("an old function result", name="lookup", id="f1"),
        RemoveMessage(id="h1"),
        AIMessageChunk(
            "part",
            id="k1",
            tool_call_chunks=[
                {
                    "name": "search",
                    "args": '{"q": "w',
                    "id": "call_4",
                    "index": 0,
                    "type": "tool_call_chunk",
                }
            ],
            usage_metadata=USAGE,
            chunk_position="last",
        ),
        HumanMessageChunk("human part", id="k2"),
        SystemMessageChunk("system part", id="k3"),
        ToolMessageChunk("tool part", tool_call_id="call_5", id="k4"),
        ChatMessageChunk("chat part", role="critic", id="k5"),
        FunctionMessageChunk("function part", name="lookup", id="k6"),
    ]


# What the previous engine wrote, byte for byte, with what each must read back as. The
# "msg" form is the one written before messages were LangChain's (as of 60c134c), and
# this serializer still writes those messages so; the class-name form is how messages
# were stored before 99b7ecf when a graph's schema named their classes.
OLD_MSG_FORM: list[tuple[bytes, BaseMessage]] = [
    (
        b'{"$t":"msg","v":{"content":"hi","type":"human","id":"h1"}}',
        HumanMessage("hi", id="h1"),
    ),
    (
        b'{"$t":"msg","v":{"content":"","response_metadata":{"model_name":"m"},"type":"ai",'
        b'"id":"a1","tool_calls":[{"name":"f","args":{"x":1},"id":"c1","type":"tool_call"}],'
        b'"usage_metadata":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}}',
        AIMessage(
            "",
            id="a1",
            response_metadata={"model_name": "m"},
            tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
    ),
    (
        b'{"$t":"msg","v":{"content":"42","type":"tool","name":"f","id":"t1",'
        b'"tool_call_id":"c1","artifact":{"raw":[1]},"status":"error"}}',
        ToolMessage(
            "42", tool_call_id="c1", id="t1", name="f", artifact={"raw": [1]}, status="error"
        ),
    ),
    (
        b'{"$t":"msg","v":{"content":"be brief","type":"system","id":"s1"}}',
        SystemMessage("be brief", id="s1"),
    ),
    (
        b'{"$t":"msg","v":{"content":"tok","type":"AIMessageChunk","id":"k1",'
        b'"chunk_position":"last"}}',
        AIMessageChunk("tok", id="k1", chunk_position="last"),
    ),
    (b'{"$t":"msg","v":{"content":"","type":"remove","id":"h1"}}', RemoveMessage(id="h1")),
    (
        b'{"$t":"msg","v":{"content":"x","type":"ai","id":"a2","invalid_tool_calls":'
        b'[{"type":"invalid_tool_call","id":"c2","name":"g","args":"{bad","error":"nope"}]}}',
        AIMessage(
            "x",
            id="a2",
            invalid_tool_calls=[
                {
                    "type": "invalid_tool_call",
                    "id": "c2",
                    "name": "g",
                    "args": "{bad",
                    "error": "nope",
                }
            ],
        ),
    ),
]
OLD_CLASS_FORM: list[tuple[bytes, BaseMessage]] = [
    (
        b'{"$t":"engine.graph.messages:HumanMessage","v":{"content":"hi","additional_kwargs":{},'
        b'"response_metadata":{},"name":null,"id":"h1"}}',
        HumanMessage("hi", id="h1"),
    ),
    (
        b'{"$t":"engine.graph.messages:AIMessage","v":{"content":"","additional_kwargs":{},'
        b'"response_metadata":{},"name":null,"id":"a1","tool_calls":[{"name":"f","args":'
        b'{"x":1},"id":"c1","type":"tool_call"}],"invalid_tool_calls":[],"usage_metadata":'
        b'{"input_tokens":1,"output_tokens":2,"total_tokens":3}}}',
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
    ),
    (
        b'{"$t":"engine.graph.messages:ToolMessage","v":{"content":"42","additional_kwargs":{},'
        b'"response_metadata":{},"name":"f","id":"t1","tool_call_id":"c1","artifact":null,'
        b'"status":"success"}}',
        ToolMessage("42", tool_call_id="c1", id="t1", name="f"),
    ),
    (
        b'{"$t":"engine.graph.messages:AIMessageChunk","v":{"content":"tok",'
        b'"additional_kwargs":{},"response_metadata":{},"name":null,"id":"k1","tool_calls":[],'
        b'"invalid_tool_calls":[],"usage_metadata":null,"tool_call_chunks":[],'
        b'"chunk_position":null}}',
        AIMessageChunk("tok", id="k1"),
    ),
]


def assert_same_messages(got: Sequence[Any], expected: Sequence[BaseMessage]) -> None:
    """The same messages: each of the same class, equal, with equal fields and extras
    (pydantic's `==` on its own would take a dict for a tuple inside an artifact)."""
    assert len(got) == len(expected)
    for message, wanted in zip(got, expected, strict=True):
        assert type(message) is type(wanted), (message, wanted)
        assert message == wanted
        assert repr(message.__dict__) == repr(wanted.__dict__)
        assert message.__pydantic_extra__ == wanted.__pydantic_extra__


def _lists(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def as_stored(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages as a saver gives them back: tuples in their fields as lists, as
    LangGraph's savers give them."""
    return [m.model_copy(update={k: _lists(v) for k, v in m.__dict__.items()}) for m in messages]
