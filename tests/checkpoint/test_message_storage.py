"""LangChain messages in checkpoints: every class comes back as itself from every saver,
and a thread the previous engine wrote (before messages were LangChain's) reads and grows."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from sqlalchemy import insert

from engine import END, START, MessagesState, StateGraph
from engine.checkpoint.base import BaseCheckpointSaver
from engine.checkpoint.sql.models import save_table, thread_table
from engine.checkpoint.sql.saver import SQLSaver
from tests.checkpoint.history import History
from tests.message_samples import as_stored, assert_same_messages, sample_messages


async def test_every_message_class_comes_back_as_itself(saver: BaseCheckpointSaver) -> None:
    """In a list (the item log), in a big value (a blob), inline, and in pending writes."""
    messages = sample_messages()
    h = History(saver, "t1")
    first = await h.put({"messages": messages[:5], "last": {"m": messages[4]}, "tiny": messages[0]})
    second = await h.put({"messages": messages, "last": {"m": messages[-1]}})
    await saver.aput_writes(h.config(second), [("messages", messages[5:8])], "task-1")
    readers = [saver]
    if isinstance(saver, SQLSaver):  # one that reads the thread first, one that keeps nothing
        readers += [SQLSaver(saver.engine), SQLSaver(saver.engine, cache_text=0)]
    for reader in readers:
        for checkpoint_id in (first, second):
            loaded = await reader.aget_tuple(h.config(checkpoint_id))
            assert loaded is not None
            values = loaded.checkpoint["channel_values"]
            expected = h.values(checkpoint_id)
            assert_same_messages(values["messages"], as_stored(expected["messages"]))
            assert_same_messages([values["last"]["m"]], as_stored([expected["last"]["m"]]))
            assert_same_messages([values["tiny"]], as_stored([messages[0]]))
        loaded = await reader.aget_tuple(h.config(second))
        assert loaded is not None
        [(task, channel, written)] = loaded.pending_writes
        assert (task, channel) == ("task-1", "messages")
        assert_same_messages(written, as_stored(messages[5:8]))


# A thread as the engine of 60c134c wrote it on SQLite: one turn of a tools loop, on the
# graph of `tools_loop` (its records, byte for byte: the input checkpoint and the four
# step checkpoints with their pending writes; the messages in the "msg" form).
OLD_THREAD = "old-chat"
OLD_RECORDS = [
    base64.b64decode(
        "AbWVuW7DMAxA936G56gQJVGHl35JBp3okAMICqSL/71ijCCxnMTO0MmASZCi9J40jsTBCyk5sliCYAaSZp5n"
        "z2xMyLNJJWvRXQ9hNYJLpXXwIUfrQoP2hFe+xCsI4hVcD6IX9hOdAo2PeTVOAwqpLCWBq4gSc7eM7QbA1p91"
        "6c+rK6uXq0tpJ3LMYjck98eUd/OUl/60g0zVGStO/AGFNNe9HOvOvFOBI1oXmUDpa1rJrBhAZksSJsqEivu5"
        "RQ6Wj//9LrB5MCX5vB0+mt1aI2WNXN+X/EsgXz59d87+5zufvuiSHk25aMboxhlfx84fDjU6DE2jp/6tatU4"
        "fdeqWQbJNSeI9Bz+cVqq/wc="
    ),
    base64.b64decode(
        "Ad1XyW7bMBC95ysCnTUBZ7jnknO+oYeCm9AgjdPCNtoi8L+XlLxpiWXDSAr0JGBEzPI4b+axK4mhI86ZhND4"
        "AJo1AXxqLBBJEojKc+EGxwg0RgWOJQcmROWdT8FYX53defUwdNCgVWjAYOTASUj0iCSlGLR+zyvNejWgRU7X"
        "KaaBgpWs8Q2zPp3yyudYglRYgvYe6Z7MnWKCoZpmibYKJXFhpBWcmx5p9v8U41bRcau+vMb0/fSRMg8nvJyk"
        "3nE2iDYzcRvo7VTsLvUBRbvwPZ6S6BMis5IKK+t3gUOpOLsGOJRyDrjRkTFw7ZGPA67bXcv+4feur49y53IO"
        "ZT6DspLGXIWykpLNoDw88nko7xxfivJ4w/RRFcONct4ErAyPToSYwFnblBkUIWJgwJmIRgjWKK7Gq4dQj8fX"
        "9WGwnuDsYQueOfu1UMYHQ5CSjiCtavJY5XmsCieDZ4Eo+nFJyPEjwmA9QZDJkk7slIoHqbUhgsYKCSx5ATJG"
        "D8pT8tKT1sxNlISitMSkTKA6h9gmcbBTzhfJjuy82LHMx5uJhi0NuZno+tb+5dJd754AjxV0p1Y6rV9W3/P6"
        "R6udW4lf/czGX8mtvmUVs9l6aHU39jV566po2dFb4q0TqPnN8ZwW2aesq9f16thCJZtVflnsDHqTF+2sTlqu"
        "F4s/o5fBsJA24/KvX/XXfiWHp0IWbq6QHPO6OiuNx9Xt0/K2TeauuuxFNHk5NKP5cjK7itPvovvbz/6WHtpL"
        "GIjCLShusVeI7Z8MSR5+N/9pB/3z3vnsrvkL"
    ),
]
OLD_MESSAGES = [
    HumanMessage([{"type": "text", "text": "weather?"}], id="human-1", name="ann"),
    AIMessage(
        "",
        id="ai-1",
        tool_calls=[{"name": "lookup", "args": {"q": "weather"}, "id": "call_1"}],
        usage_metadata={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    ),
    ToolMessage(
        "sunny", tool_call_id="call_1", id="tool-1", name="lookup", artifact={"raw": [1, 2]}
    ),
    AIMessage("It is sunny.", id="ai-2", response_metadata={"finish_reason": "stop"}),
]


def tools_loop(saver: BaseCheckpointSaver) -> Any:
    """A graph like the one that wrote OLD_RECORDS: a model that calls a tool, then
    answers (new messages have ids by their position)."""

    def model(state: dict[str, Any]) -> dict[str, Any]:
        position = len(state["messages"])
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage("It is sunny.", id=f"ai-{position}")]}
        call = {"name": "lookup", "args": {"q": "weather"}, "id": f"call_{position}"}
        return {"messages": [AIMessage("", id=f"ai-{position}", tool_calls=[call])]}

    def tools(state: dict[str, Any]) -> dict[str, Any]:
        call_id = state["messages"][-1].tool_calls[0]["id"]
        result = ToolMessage("sunny", tool_call_id=call_id, id=f"tool-{len(state['messages'])}")
        return {"messages": [result]}

    def route(state: dict[str, Any]) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    return (
        StateGraph(MessagesState)
        .add_node("model", model)
        .add_node("tools", tools)
        .add_edge(START, "model")
        .add_edge("tools", "model")
        .add_conditional_edges("model", route, ["tools", END])
        .compile(checkpointer=saver)
    )


async def test_a_thread_the_previous_engine_wrote_reads_and_grows(sql_saver: SQLSaver) -> None:
    async with sql_saver.engine.begin() as conn:
        thread = await conn.scalar(
            insert(thread_table)
            .values(thread_id=OLD_THREAD, put_count=2, epoch=0, last_write_at=datetime.now(UTC))
            .returning(thread_table.c.id)
        )
        await conn.execute(
            insert(save_table),
            [
                {"thread": thread, "seq": seq, "data": data}
                for seq, data in enumerate(OLD_RECORDS, 1)
            ],
        )
    config = {"configurable": {"thread_id": OLD_THREAD}}
    graph = tools_loop(sql_saver)
    state = await graph.aget_state(config)
    assert_same_messages(state.values["messages"], OLD_MESSAGES)
    assert state.next == ()
    history = [s async for s in graph.aget_state_history(config)]
    assert [(s.metadata["step"], s.next) for s in history] == [
        (3, ()),
        (2, ("model",)),
        (1, ("tools",)),
        (0, ("model",)),
        (-1, ("__start__",)),
    ]
    assert_same_messages(history[1].values["messages"], OLD_MESSAGES[:3])

    await graph.ainvoke(
        {"messages": [{"role": "user", "content": "and tomorrow?", "id": "h2"}]}, config
    )
    for reader in (sql_saver, SQLSaver(sql_saver.engine)):
        state = await tools_loop(reader).aget_state(config)
        messages = state.values["messages"]
        assert_same_messages(messages[:4], OLD_MESSAGES)
        assert [(type(m).__name__, m.id) for m in messages[4:]] == [
            ("HumanMessage", "h2"),
            ("AIMessage", "ai-5"),
            ("ToolMessage", "tool-6"),
            ("AIMessage", "ai-7"),
        ]
