"""A thread created with `supersteps` (langgraph-sdk's `threads.create(graph_id=...,
supersteps=...)`, how LangGraph copies a thread between deployments) starts at the state
they write, as the graph's `bulk_update_state` writes it; when they cannot be written
the thread is not made. On SQLite and PostgreSQL."""

import asyncio
import uuid

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

from tests.helpers import said

HI = {"messages": [{"role": "user", "content": "hi", "id": "h1"}]}
REPLY = {"messages": [{"role": "ai", "content": "hello", "id": "a1"}]}
COPIED = [
    {"updates": [{"values": HI, "as_node": "__input__"}]},
    {"updates": [{"values": HI, "as_node": "__start__"}]},
    {"updates": [{"values": REPLY, "as_node": "talk"}]},
]


async def test_a_thread_starts_at_the_state_its_supersteps_write(server: str) -> None:
    client = get_client(url=server)
    thread = await client.threads.create(graph_id="echo", supersteps=COPIED)
    assert [m["content"] for m in thread["values"]["messages"]] == ["hi", "hello"]
    assert thread["status"] == "idle" and thread["metadata"] == {"graph_id": "echo"}
    history = await client.threads.get_history(thread["thread_id"])
    assert [(h["metadata"]["source"], h["metadata"]["step"]) for h in history] == [
        ("update", 1),
        ("update", 0),
        ("input", -1),
    ]
    values = await client.runs.wait(thread["thread_id"], "echo", input=said("again"))
    assert [m["content"] for m in values["messages"]] == [
        "hi",
        "hello",
        "again",
        "You said: again",
    ]

    # An existing thread is returned as it is with do_nothing.
    same = await client.threads.create(
        thread_id=thread["thread_id"],
        if_exists="do_nothing",
        graph_id="echo",
        supersteps=[{"updates": [{"values": said("no"), "as_node": "talk"}]}],
    )
    assert same["values"] == values

    # A command's update and goto, as a node's: the thread waits for that node.
    going = await client.threads.create(
        graph_id="echo",
        supersteps=[
            {
                "updates": [
                    {"values": None, "command": {"update": HI, "goto": "talk"}, "as_node": "talk"}
                ]
            }
        ],
    )
    assert going["values"] == (await client.threads.get_state(going["thread_id"]))["values"]
    assert (await client.threads.get_state(going["thread_id"]))["next"] == ["talk"]


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        ({"supersteps": COPIED}, 422, "must name the graph"),
        ({"metadata": {"graph_id": "nothing"}, "supersteps": COPIED}, 404, "not served"),
        (
            {
                "metadata": {"graph_id": "echo"},
                "supersteps": [{"updates": [{"values": HI, "as_node": "nope"}]}],
            },
            422,
            "Node nope does not exist",
        ),
        (
            {
                "metadata": {"graph_id": "echo"},
                "supersteps": [
                    {"updates": [{"values": HI, "as_node": "__input__"}]},
                    {
                        "updates": [
                            {
                                "values": {"messages": [{"role": "tool", "content": "x"}]},
                                "as_node": "talk",
                            }
                        ]
                    },
                ],
            },
            422,
            "tool_call_id",
        ),
        (
            {
                "metadata": {"graph_id": "echo"},
                "supersteps": [{"updates": [{"command": {"goto": "nope"}, "as_node": "talk"}]}],
            },
            422,
            "supersteps: command.goto names unknown nodes ['nope']",
        ),
        (
            {
                "metadata": {"graph_id": "echo"},
                "supersteps": [{"updates": [{"values": {"mesages": []}, "as_node": "talk"}]}],
            },
            422,
            "supersteps: values: the state has no keys ['mesages']",
        ),
        (
            {
                "metadata": {"graph_id": "echo"},
                "supersteps": [
                    {"updates": [{"values": HI, "command": {"goto": "talk"}, "as_node": "talk"}]}
                ],
            },
            422,
            "gives `values` or a `command`, not both",
        ),
        ({"metadata": {"graph_id": "echo"}, "supersteps": [{"updates": []}]}, 422, "at least 1"),
        ({"metadata": {"graph_id": "echo"}, "supersteps": [{"writes": []}]}, 422, "updates"),
    ],
)
async def test_supersteps_that_cannot_be_written_make_no_thread(
    server: str, body: dict, status: int, problem: str
) -> None:
    thread_id = str(uuid.uuid4())
    async with httpx.AsyncClient(base_url=server) as http:
        refused = await http.post("/threads", json={"thread_id": thread_id, **body})
        assert refused.status_code == status and problem in refused.text, refused.text
        assert (await http.post("/threads/count", json={})).json() == 0
    with pytest.raises(NotFoundError):
        await get_client(url=server).threads.get(thread_id)


async def test_one_id_made_with_supersteps_by_many_requests_at_once(server: str) -> None:
    """With `if_exists: do_nothing`, requests at the same time making one thread with
    supersteps all answer the thread (one made it); the others got 409 when it was made
    between their check and their insert."""
    body = {
        "thread_id": str(uuid.uuid4()),
        "if_exists": "do_nothing",
        "metadata": {"graph_id": "echo"},
        "supersteps": COPIED,
    }
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        made = await asyncio.gather(*(http.post("/threads", json=body) for _ in range(8)))
        assert {answer.status_code for answer in made} == {200}, [a.text for a in made]
        thread = (await http.get(f"/threads/{body['thread_id']}")).json()
    assert [m["content"] for m in thread["values"]["messages"]] == ["hi", "hello"]
