"""A chat turn through the official client, on both databases."""

from langgraph_sdk import get_client

from tests.helpers import collect, new_id, said


async def test_turn_streams_and_resume(server: str) -> None:
    client = get_client(url=server)
    thread_id = new_id()
    parts = await collect(
        client.runs.stream(
            thread_id,
            "echo",
            input=said("hello"),
            stream_mode=["values", "messages-tuple"],
            if_not_exists="create",
        )
    )
    events = [event for event, _ in parts]
    assert events[0] == "metadata"
    assert events.count("messages") == 3
    first = await client.runs.wait(thread_id, "asker", input={"question": "name?"})
    assert first["__interrupt__"][0]["value"] == {"question": "name?"}
    second = await client.runs.wait(thread_id, "asker", command={"resume": "bob"})
    assert second["answers"] == ["bob", "done"]
