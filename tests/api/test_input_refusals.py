"""What a request gets wrong is refused, naming it, rather than read as something else:
checkpoint ids that are not UUIDs, fields a copy does not take, a deleting completion on
a thread's run, and the words of a validator's refusal in its 422 (never an exception
object JSON cannot show)."""

from __future__ import annotations

from typing import Any

import httpx
from langgraph_sdk import get_client

from tests.helpers import new_thread, said


def _field_error(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 422, answer.text
    [error] = answer.json()["detail"]
    return dict(error)


async def test_checkpoint_ids_that_are_not_uuids(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "echo", input=said("one"))
    history = await client.threads.get_history(thread_id)
    newest = history[0]["checkpoint"]["checkpoint_id"]
    async with httpx.AsyncClient(base_url=server) as http:
        for before in ("zzz", {"configurable": {"checkpoint_id": "zzz"}}, {"checkpoint_id": 5}):
            answer = await http.post(f"/threads/{thread_id}/history", json={"before": before})
            error = _field_error(answer)
            assert error["loc"] == ["body", "before"] and isinstance(error["ctx"]["error"], str)
        error = _field_error(await http.get(f"/threads/{thread_id}/history?before=zzz"))
        assert error["loc"] == ["query", "before"] and "'zzz'" in error["msg"]
        bad = {"checkpoint": {"checkpoint_id": "z"}}
        for method, path, body in (
            ("POST", "history", bad),
            ("GET", "state/zzz", None),
            ("POST", "state/checkpoint", bad),
        ):
            answer = await http.request(method, f"/threads/{thread_id}/{path}", json=body)
            assert answer.status_code == 422, path
        # A UUID in any spelling names the version it is.
        shouting = await http.get(f"/threads/{thread_id}/history?before={newest.upper()}")
        assert shouting.json() == history[1:]
    as_config = {"configurable": {"checkpoint_id": newest}}
    assert await client.threads.get_history(thread_id, before=as_config) == history[1:]


async def test_a_copy_takes_no_fields(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client, metadata={"a": 1})
    async with httpx.AsyncClient(base_url=server) as http:
        error = _field_error(await http.post(f"/threads/{thread_id}/copy", json={"x": 1}))
        assert (error["loc"], error["type"]) == (["body", "x"], "extra_forbidden")
        assert (await http.post(f"/threads/{thread_id}/copy", json={})).status_code == 200
    assert (await client.threads.copy(thread_id))["metadata"] == {"a": 1}


async def test_refusals_say_why_in_their_context(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        for body, words in (
            ({"timezone": "Mars/Olympus"}, "is not an IANA time zone"),
            ({"schedule": "* * *"}, "is not a cron schedule"),
        ):
            cron = {"assistant_id": "echo", "schedule": "0 * * * *", **body}
            error = _field_error(await http.post("/runs/crons", json=cron))
            assert words in error["ctx"]["error"] and words in error["msg"]
        search = {"extract": {"last": "nowhere.x"}}
        error = _field_error(await http.post("/threads/search", json=search))
        assert "does not start with" in error["ctx"]["error"]


async def test_a_threads_run_is_not_deleted_on_completion(server: str) -> None:
    """`on_completion: delete` is a stateless run's: on a thread's run it would take the
    thread and its history with it when the run ends."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "echo", input=said("one"))
    async with httpx.AsyncClient(base_url=server) as http:
        body = {"assistant_id": "echo", "input": said("two"), "on_completion": "delete"}
        for route in ("runs", "runs/wait", "runs/stream"):
            answer = await http.post(f"/threads/{thread_id}/{route}", json=body)
            assert answer.status_code == 422 and "on_completion" in answer.text, route
        kept = {**body, "on_completion": "keep"}
        assert (await http.post(f"/threads/{thread_id}/runs/wait", json=kept)).status_code == 200
    thread = await client.threads.get(thread_id)
    assert [m["content"] for m in thread["values"]["messages"]][-1] == "You said: two"


async def test_ids_in_other_digits_name_nothing(server: str) -> None:
    """`uuid.UUID` reads any Unicode digit: an id in fullwidth or Arabic-Indic digits
    named the thread, assistant or version of the ASCII id. It is malformed (422), or
    for an assistant, which may be given by graph id, none (404)."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "echo", input=said("one"))
    checkpoint_id = (await client.threads.get_state(thread_id))["checkpoint"]["checkpoint_id"]
    assistant_id = (await client.assistants.search(graph_id="echo"))[0]["assistant_id"]
    async with httpx.AsyncClient(base_url=server) as http:
        for digits in ("０１２３４５６７８９", "٠١٢٣٤٥٦٧٨٩"):
            other = str.maketrans("0123456789", digits)
            thread, checkpoint = thread_id.translate(other), checkpoint_id.translate(other)
            for answer in (
                await http.get(f"/threads/{thread}"),
                await http.post("/threads", json={"thread_id": thread}),
                await http.get(f"/threads/{thread_id}/state/{checkpoint}"),
                await http.post(f"/threads/{thread_id}/history", json={"before": checkpoint}),
                await http.post(
                    f"/threads/{thread_id}/runs/wait",
                    json={"assistant_id": "echo", "checkpoint_id": checkpoint},
                ),
            ):
                assert answer.status_code == 422, (answer.request.url, answer.text)
            answer = await http.get(f"/assistants/{assistant_id.translate(other)}")
            assert answer.status_code == 404, answer.text


async def test_a_stateless_run_resumes_nothing(server: str) -> None:
    """A stateless run starts a thread of its own, which waits for no answer: a resume
    is refused as such (422), not as a 409 naming a thread the client never saw."""
    async with httpx.AsyncClient(base_url=server) as http:
        for path in ("/runs/wait", "/runs", "/runs/stream"):
            answer = await http.post(
                path, json={"assistant_id": "asker", "command": {"resume": "yes"}}
            )
            assert answer.status_code == 422, answer.text
            assert "a stateless run starts a new one" in answer.json()["detail"]


async def test_a_command_takes_the_empty_input_chat_clients_send_beside_it(server: str) -> None:
    """agent-chat-ui answers an interrupt with `submit({}, {command: {resume}})`, which
    sends `input: {}` beside the command: taken as no input. An input with something in
    it is refused rather than dropped."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "asker", input={"question": "colour?"})
    async with httpx.AsyncClient(base_url=server) as http:
        path = f"/threads/{thread_id}/runs/wait"
        both = {"assistant_id": "asker", "input": {"question": "x"}, "command": {"resume": "red"}}
        answer = await http.post(path, json=both)
        assert answer.status_code == 422, answer.text
        assert "give `input` or `command`, not both" in answer.text
        answer = await http.post(path, json={**both, "input": {}})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"question": "colour?", "answers": ["red", "done"]}
    assert (await client.threads.get(thread_id))["status"] == "idle"
