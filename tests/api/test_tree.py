"""The conversation tree of a thread (GET /threads/{id}/tree), after forks, on SQLite and
on PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from langgraph_sdk import get_client

from tests.helpers import new_thread, said


def content(message: dict[str, Any] | None) -> Any:
    return None if message is None else message["content"]


async def test_regenerate_and_edit_make_sibling_turns(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "echo", input=said("one"))
    await client.runs.wait(thread_id, "echo", input=said("two"))
    before = await client.threads.get_history(thread_id, limit=100)
    due = next(s for s in before if s["next"] == ["talk"])  # turn two, before the reply
    end_of_one = next(s for s in before if s["metadata"]["step"] == 1 and s != before[0])
    await client.runs.wait(
        thread_id, "echo", input=None, checkpoint_id=due["checkpoint"]["checkpoint_id"]
    )
    await client.runs.wait(
        thread_id,
        "echo",
        input={"messages": [{"role": "user", "content": [{"type": "text", "text": "edited"}]}]},
        checkpoint_id=end_of_one["checkpoint"]["checkpoint_id"],
    )
    history = await client.threads.get_history(thread_id, limit=100)
    from_due = [s for s in history if s["parent_checkpoint"] == due["checkpoint"]]
    assert len(from_due) == 2  # the first reply and the regenerated one
    head = (await client.threads.get_state(thread_id))["checkpoint"]["checkpoint_id"]

    async with httpx.AsyncClient(base_url=server) as http:
        tree = (await http.get(f"/threads/{thread_id}/tree")).json()
    turns = {t["turn_id"]: t for t in tree["turns"]}
    assert len(turns) == 4
    first, second, regenerated, edited = tree["turns"]
    assert (content(first["user_message"]), content(first["reply"])) == ("one", "You said: one")
    assert first["parent_turn_id"] is None and first["parent_checkpoint_id"] is None
    assert first["children"] == [second["turn_id"], regenerated["turn_id"], edited["turn_id"]]
    assert (first["sibling_index"], first["sibling_count"]) == (0, 1)
    for index, turn in enumerate((second, regenerated, edited)):
        assert turn["parent_turn_id"] == first["turn_id"]
        assert (turn["sibling_index"], turn["sibling_count"]) == (index, 3)
        assert turn["status"] == "done" and len(turn["run_ids"]) == 1
    assert second["parent_checkpoint_id"] == end_of_one["checkpoint"]["checkpoint_id"]
    assert second["first_checkpoint_id"] == second["turn_id"]
    assert content(second["user_message"]) == content(regenerated["user_message"]) == "two"
    assert regenerated["input"] == second["input"] == said("two")
    assert regenerated["parent_checkpoint_id"] == due["checkpoint"]["checkpoint_id"]
    assert content(regenerated["reply"]) == "You said: two"
    assert content(edited["user_message"]) == [{"type": "text", "text": "edited"}]
    assert edited["user_message"]["type"] == "human"
    assert content(edited["reply"]) == "You said: edited"
    assert tree["head_checkpoint_id"] == head == edited["last_checkpoint_id"]
    assert tree["head_turn_id"] == edited["turn_id"]
    assert tree["head_path"] == [first["turn_id"], edited["turn_id"]]
    covered = {t["first_checkpoint_id"] for t in tree["turns"]} | {
        t["last_checkpoint_id"] for t in tree["turns"]
    }
    assert covered <= {s["checkpoint"]["checkpoint_id"] for s in history}


async def test_turn_status_and_bad_ids(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    async with httpx.AsyncClient(base_url=server) as http:
        empty = (await http.get(f"/threads/{thread_id}/tree")).json()
        assert empty == {
            "thread_id": thread_id,
            "head_checkpoint_id": None,
            "head_turn_id": None,
            "head_path": [],
            "turns": [],
        }
        await client.runs.wait(thread_id, "asker", input={"question": "name?"})
        [asking] = (await http.get(f"/threads/{thread_id}/tree")).json()["turns"]
        assert asking["status"] == "interrupted" and asking["input"] == {"question": "name?"}
        assert asking["user_message"] is None and asking["reply"] is None
        await client.runs.wait(thread_id, "asker", command={"resume": "Ann"})
        [answered] = (await http.get(f"/threads/{thread_id}/tree")).json()["turns"]
        assert answered["status"] == "done" and len(answered["run_ids"]) == 2
        assert answered["turn_id"] == asking["turn_id"]
        assert (await http.get("/threads/not-a-uuid/tree")).status_code == 422
        assert (await http.get(f"/threads/{uuid.uuid4()}/tree")).status_code == 404
