"""A chat turn through the official client, on both databases."""

import uuid

from langgraph_sdk import get_client


async def test_turn_streams_and_resume(server: str) -> None:
    client = get_client(url=server)
    thread_id = str(uuid.uuid4())
    events = [
        part.event
        async for part in client.runs.stream(
            thread_id,
            "echo",
            input={"messages": [{"role": "user", "content": "hello"}]},
            stream_mode=["values", "messages-tuple"],
            if_not_exists="create",
        )
    ]
    assert events[0] == "metadata"
    assert events.count("messages") == 3
    first = await client.runs.wait(thread_id, "asker", input={"question": "name?"})
    assert first["__interrupt__"][0]["value"] == {"question": "name?"}
    second = await client.runs.wait(thread_id, "asker", command={"resume": "bob"})
    assert second["answers"] == ["bob", "done"]
