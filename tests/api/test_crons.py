"""Crons through the official client (raw HTTP for the answers it does not expose), on
SQLite and on PostgreSQL, and the schedules they are read from.

Rather than wait for an occurrence, a test moves the cron's next occurrence into the past
in the database, as time passing would; its crons are yearly (New Year's midnight, UTC),
so that no occurrence comes by itself while it runs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError
from sqlalchemy import select, update

from app.db.database import Database
from app.db.models import CronRow, RunRow
from app.graphs import system_assistant_id
from app.runs.crons import POLL_S
from app.schedules import check_schedule, check_timezone, next_run
from tests.helpers import eventually, new_thread, said

HOUR = timedelta(hours=1)
YEARLY = "0 0 1 1 *"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def make_due(database_url: str, cron_id: str, ago: timedelta = HOUR) -> None:
    """As if the cron's next occurrence had come `ago` (and no process had run it)."""
    db = Database(database_url)
    try:
        async with db.write() as session:
            await session.execute(
                update(CronRow)
                .where(CronRow.cron_id == cron_id)
                .values(next_run_at=datetime.now(UTC) - ago)
            )
    finally:
        await db.close()


async def cron_runs(database_url: str, cron_id: str) -> list[RunRow]:
    """Every run the cron started, oldest first (rows stay when their thread is deleted)."""
    db = Database(database_url)
    try:
        async with db.read() as session:
            runs = await session.scalars(select(RunRow).order_by(RunRow.run_id))
            return [run for run in runs if (run.metadata_ or {}).get("cron_id") == cron_id]
    finally:
        await db.close()


async def ended_runs(database_url: str, cron_id: str, count: int) -> list[RunRow]:
    """The cron's runs once `count` of them ended, after long enough for a second start of
    any occurrence to show."""

    async def ended() -> list[RunRow] | None:
        runs = await cron_runs(database_url, cron_id)
        return runs if sum(r.status == "success" for r in runs) >= count else None

    await eventually(ended, f"{count} runs of cron {cron_id}")
    await asyncio.sleep(3 * POLL_S)
    return await cron_runs(database_url, cron_id)


# Schedules.


def test_occurrences_are_read_in_the_cron_time_zone() -> None:
    new_year = datetime(2024, 1, 1, 1, 0, tzinfo=UTC)
    assert next_run("0 9 * * *", "Asia/Tokyo", None, new_year) == datetime(
        2024, 1, 2, 0, 0, tzinfo=UTC
    )
    assert next_run("0 9 * * *", None, None, new_year) == datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    assert next_run("@hourly", None, None, new_year) == datetime(2024, 1, 1, 2, 0, tzinfo=UTC)
    assert next_run("@daily", "UTC", None, new_year) == datetime(2024, 1, 2, 0, 0, tzinfo=UTC)
    # Strictly after: an occurrence at the very time given is the one just run.
    assert next_run("0 * * * *", None, None, new_year) == datetime(2024, 1, 1, 2, tzinfo=UTC)
    # Past its end a cron has no next occurrence.
    assert next_run("0 9 * * *", None, new_year + HOUR, new_year) is None


def test_daylight_saving_changes_keep_cron_rules() -> None:
    new_york = "America/New_York"
    # 02:30 does not exist on 10 March 2024 there: the run comes at 03:00 local time.
    spring = datetime(2024, 3, 10, 6, 0, tzinfo=UTC)
    assert next_run("30 2 * * *", new_york, None, spring) == datetime(2024, 3, 10, 7, 0, tzinfo=UTC)
    # 01:30 happens twice on 3 November 2024: the run comes once, the first time.
    autumn = datetime(2024, 11, 3, 5, 0, tzinfo=UTC)
    first = next_run("30 1 * * *", new_york, None, autumn)
    assert first == datetime(2024, 11, 3, 5, 30, tzinfo=UTC)
    assert next_run("30 1 * * *", new_york, None, first) == datetime(2024, 11, 4, 6, 30, tzinfo=UTC)
    # Every half hour follows the clock through the repeated hour.
    assert next_run("*/30 * * * *", new_york, None, first) == datetime(2024, 11, 3, 6, tzinfo=UTC)


@pytest.mark.parametrize(
    "schedule", ["", "* * * *", "* * * * * *", "61 * * * *", "*/0 * * * *", "0 0 30 2 *", "@often"]
)
def test_schedules_that_are_not_five_cron_fields_are_refused(schedule: str) -> None:
    with pytest.raises(ValueError, match="is not a cron schedule"):
        check_schedule(schedule)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "America", "utc "])
def test_time_zones_are_iana_names(zone: str) -> None:
    with pytest.raises(ValueError, match="is not an IANA time zone"):
        check_timezone(zone)


# The API.


async def test_create_search_count_update_delete(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    before = datetime.now(UTC)
    daily = await client.crons.create_for_thread(
        thread_id,
        "echo",
        schedule="0 9 * * *",
        timezone="Asia/Tokyo",
        input=said("good morning"),
        metadata={"team": "a"},
        multitask_strategy="reject",
    )
    assert daily["thread_id"] == thread_id
    assert daily["assistant_id"] == system_assistant_id("echo")
    assert (daily["schedule"], daily["timezone"], daily["enabled"]) == (
        "0 9 * * *",
        "Asia/Tokyo",
        True,
    )
    assert daily["payload"] == {
        "assistant_id": "echo",
        "input": said("good morning"),
        "multitask_strategy": "reject",
    }
    assert daily["metadata"] == {"team": "a"} and daily["user_id"] == "local"
    assert daily["on_run_completed"] is None and daily["end_time"] is None
    first = at(daily["next_run_date"])
    assert first == next_run("0 9 * * *", "Asia/Tokyo", None, before)
    assert (first.hour, first.minute) == (0, 0)  # 09:00 in Tokyo

    ends = datetime.now(UTC) + timedelta(days=2)
    often = await client.crons.create(
        "echo", schedule="*/5 * * * *", input=said("tick"), on_run_completed="keep", end_time=ends
    )
    assert often["thread_id"] is None and often["on_run_completed"] == "keep"
    assert at(often["end_time"]) == ends
    assert at(often["next_run_date"]).minute % 5 == 0
    defaulted = await client.crons.create("echo", schedule="@hourly")
    assert defaulted["on_run_completed"] == "delete" and defaulted["timezone"] is None

    def ids(found: list[Any]) -> list[str]:
        return [cron["cron_id"] for cron in found]

    made = [daily["cron_id"], often["cron_id"], defaulted["cron_id"]]
    assert ids(await client.crons.search()) == made[::-1]
    assert ids(await client.crons.search(sort_by="created_at", sort_order="asc")) == made
    assert ids(await client.crons.search(thread_id=thread_id)) == [daily["cron_id"]]
    assert ids(await client.crons.search(assistant_id="echo", limit=1, offset=2)) == made[:1]
    assert ids(await client.crons.search(assistant_id=system_assistant_id("asker"))) == []
    assert ids(await client.crons.search(metadata={"team": "a"})) == [daily["cron_id"]]
    assert await client.crons.search(enabled=False) == []
    soonest = await client.crons.search(sort_by="next_run_date", sort_order="asc")
    dates = [at(cron["next_run_date"]) for cron in soonest]
    assert dates == sorted(dates)
    picked = await client.crons.search(select=["cron_id", "schedule"], limit=1)
    assert picked == [{"cron_id": defaulted["cron_id"], "schedule": "@hourly"}]
    assert await client.crons.count() == 3
    assert await client.crons.count(thread_id=thread_id) == 1
    assert await client.crons.count(assistant_id="echo", metadata={"team": "b"}) == 0
    async with httpx.AsyncClient(base_url=server) as http:
        answer = await http.post("/runs/crons/search", json={"limit": 2})
    assert answer.headers["x-pagination-total"] == "3"
    assert answer.headers["x-pagination-next"] == "2"

    changed = await client.crons.update(
        daily["cron_id"], schedule="30 * * * *", metadata={"b": 1}, input=said("hi")
    )
    assert changed["schedule"] == "30 * * * *" and changed["timezone"] == "Asia/Tokyo"
    assert at(changed["next_run_date"]).minute == 30
    assert changed["metadata"] == {"team": "a", "b": 1}
    assert changed["payload"]["input"] == said("hi")
    assert changed["updated_at"] > daily["updated_at"]
    disabled = await client.crons.update(daily["cron_id"], enabled=False)
    assert disabled["enabled"] is False
    assert ids(await client.crons.search(enabled=False)) == [daily["cron_id"]]
    endless = await client.crons.update(often["cron_id"], end_time=None)
    assert endless["end_time"] is None and endless["on_run_completed"] == "keep"
    ended = await client.crons.update(often["cron_id"], end_time=datetime.now(UTC) - HOUR)
    assert ended["next_run_date"] is None

    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.get(f"/runs/crons/{daily['cron_id']}")).json() == disabled
        await client.crons.delete(often["cron_id"])
        gone = await http.get(f"/runs/crons/{often['cron_id']}")
        assert gone.status_code == 404 and often["cron_id"] in gone.json()["detail"]
        assert (await http.get("/runs/crons/nope")).status_code == 422
    assert await client.crons.count() == 2
    with pytest.raises(NotFoundError):
        await client.crons.delete(often["cron_id"])
    with pytest.raises(NotFoundError):
        await client.crons.update(often["cron_id"], enabled=True)

    # A thread's crons go with it.
    await client.threads.delete(thread_id)
    assert ids(await client.crons.search()) == [defaulted["cron_id"]]


async def test_a_due_cron_runs_once_on_its_thread(server: str, database_url: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    cron = await client.crons.create_for_thread(
        thread_id, "echo", schedule=YEARLY, input=said("ping"), metadata={"kind": "check"}
    )
    cron_id = cron["cron_id"]
    # Due three years ago: the occurrences missed since run once, not three times.
    await make_due(database_url, cron_id, timedelta(days=3 * 366))
    [run] = await ended_runs(database_url, cron_id, 1)
    assert run.thread_id == thread_id and run.owner == "local"
    assert run.metadata_ == {"kind": "check", "cron_id": cron_id}
    # As LangGraph's server gives it to the graph.
    assert run.kwargs["config"]["configurable"]["cron_id"] == cron_id
    listed = await client.runs.list(thread_id)
    assert [r["run_id"] for r in listed] == [run.run_id]
    state = await client.threads.get_state(thread_id)
    assert [m["content"] for m in state["values"]["messages"]] == ["ping", "You said: ping"]
    [found] = await client.crons.search(thread_id=thread_id)
    assert at(found["next_run_date"]) == next_run(YEARLY, None, None, datetime.now(UTC))

    await make_due(database_url, cron_id, timedelta(seconds=1))
    assert len(await ended_runs(database_url, cron_id, 2)) == 2

    # A disabled cron does not run, due or not; nor does a deleted one.
    await client.crons.update(cron_id, enabled=False)
    await make_due(database_url, cron_id)
    await asyncio.sleep(3 * POLL_S)
    assert len(await cron_runs(database_url, cron_id)) == 2
    await client.crons.delete(cron_id)
    await asyncio.sleep(2 * POLL_S)
    assert len(await client.runs.list(thread_id)) == 2


async def test_a_cron_without_a_thread_runs_each_time_on_a_new_one(
    server: str, database_url: str
) -> None:
    client = get_client(url=server)
    kept = await client.crons.create(
        "echo", schedule=YEARLY, input=said("hello"), on_run_completed="keep"
    )
    removed = await client.crons.create("echo", schedule=YEARLY, input=said("bye"))
    for cron in (kept, removed):
        await make_due(database_url, cron["cron_id"])
    [first] = await ended_runs(database_url, kept["cron_id"], 1)
    state = await client.threads.get_state(first.thread_id)
    assert [m["content"] for m in state["values"]["messages"]] == ["hello", "You said: hello"]
    await make_due(database_url, kept["cron_id"])
    _, second = await ended_runs(database_url, kept["cron_id"], 2)
    assert second.thread_id != first.thread_id

    [run] = await ended_runs(database_url, removed["cron_id"], 1)
    assert run.result is not None and run.result["messages"][-1]["content"] == "You said: bye"

    async def thread_gone() -> bool:
        try:
            await client.threads.get(run.thread_id)
        except NotFoundError:
            return True
        return False

    await eventually(thread_gone, "the run's thread to be deleted")


async def test_an_occurrence_that_cannot_run_is_skipped(server: str, database_url: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    busy = await client.runs.create(thread_id, "slow", input={"delay": 4})
    cron = await client.crons.create_for_thread(
        thread_id, "echo", schedule=YEARLY, input=said("now?"), multitask_strategy="reject"
    )
    await make_due(database_url, cron["cron_id"])

    async def moved_on() -> bool:
        [found] = await client.crons.search(thread_id=thread_id)
        return at(found["next_run_date"]) > datetime.now(UTC)

    await eventually(moved_on, "the skipped occurrence")
    assert await cron_runs(database_url, cron["cron_id"]) == []
    await client.runs.join(thread_id, busy["run_id"])


async def test_an_assistants_crons_go_with_it(server: str) -> None:
    """Deleting an assistant deletes its crons, on a thread or not (they could only fail
    from then on); other assistants' stay."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    mine = await client.assistants.create("echo", name="morning")
    await client.crons.create_for_thread(thread_id, mine["assistant_id"], schedule=YEARLY)
    await client.crons.create(mine["assistant_id"], schedule=YEARLY)
    other = await client.crons.create("echo", schedule=YEARLY)
    assert await client.crons.count(assistant_id=mine["assistant_id"]) == 2
    await client.assistants.delete(mine["assistant_id"])
    assert await client.crons.count(assistant_id=mine["assistant_id"]) == 0
    assert [c["cron_id"] for c in await client.crons.search(assistant_id="echo")] == [
        other["cron_id"]
    ]


async def test_a_cron_made_while_its_thread_is_deleted_goes_with_it(server: str) -> None:
    """Crons made on a thread while it is deleted either fail (404) or are deleted with
    it: one made between the check of its thread and the delete outlived the thread,
    and ran on a new thread made under the same id."""
    client = get_client(url=server)
    for _ in range(10):
        thread_id = await new_thread(client)
        made = [
            client.crons.create_for_thread(thread_id, "echo", schedule=YEARLY) for _ in range(12)
        ]
        await asyncio.gather(
            *made[:6], client.threads.delete(thread_id), *made[6:], return_exceptions=True
        )
        assert await client.crons.search(thread_id=thread_id) == []


async def test_metadata_merged_by_many_requests_at_once_keeps_every_key(server: str) -> None:
    """PATCHes of a thread's and of a cron's metadata at the same time each merge their
    key: on PostgreSQL both read the row before either wrote it, and one key was lost."""
    client = get_client(url=server)
    thread_id = await new_thread(client)
    cron = await client.crons.create("echo", schedule=YEARLY)
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        for path in (f"/threads/{thread_id}", f"/runs/crons/{cron['cron_id']}"):
            patched = await asyncio.gather(
                *(http.patch(path, json={"metadata": {f"k{i}": i}}) for i in range(16))
            )
            assert {answer.status_code for answer in patched} == {200}
            metadata = (await http.get(path)).json()["metadata"]
            assert {f"k{i}" for i in range(16)} <= set(metadata), path


async def test_what_is_wrong_is_refused_naming_the_field(server: str) -> None:
    client = get_client(url=server)
    thread_id = await new_thread(client)
    good = {"assistant_id": "echo", "schedule": "0 * * * *"}
    async with httpx.AsyncClient(base_url=server) as http:

        async def refused(path: str, body: dict[str, Any], method: str = "POST") -> Any:
            answer = await http.request(method, path, json=body)
            assert answer.status_code == 422, answer.text
            return answer.json()["detail"]

        for field, value in [
            ("schedule", "61 * * * *"),
            ("schedule", "0 0 * * * *"),
            ("schedule", "x" * 201),
            ("timezone", "Mars/Olympus"),
            ("end_time", "soon"),
        ]:
            for path in ("/runs/crons", f"/threads/{thread_id}/runs/crons"):
                [error] = await refused(path, {**good, field: value})
                assert error["loc"] == ["body", field], error
        # A cron whose end comes before its first occurrence would never run.
        past = {**good, "end_time": "1970-01-01T00:00:00Z"}
        assert (await refused("/runs/crons", past)).startswith("end_time: 1970-01-01")
        # A cron on a thread keeps it (langgraph-sdk's JavaScript client offers the field
        # there too); deleting it is for a cron whose runs get a new thread.
        [error] = await refused(
            f"/threads/{thread_id}/runs/crons", {**good, "on_run_completed": "delete"}
        )
        assert error["loc"] == ["body", "on_run_completed"]
        kept = await http.post(
            f"/threads/{thread_id}/runs/crons", json={**good, "on_run_completed": "keep"}
        )
        assert kept.status_code == 200, kept.text
        await client.crons.delete(kept.json()["cron_id"])

        cron = await client.crons.create_for_thread(thread_id, "echo", schedule="0 * * * *")
        path = f"/runs/crons/{cron['cron_id']}"
        [error] = await refused(path, {"timezone": "Nowhere"}, "PATCH")
        assert error["loc"] == ["body", "timezone"]
        detail = await refused(path, {"on_run_completed": "delete"}, "PATCH")
        assert detail.startswith("on_run_completed:")
        kept = await http.patch(path, json={"on_run_completed": "keep"})
        assert kept.status_code == 200, kept.text
        assert "must be a UUID" in await refused("/runs/crons/nope", {}, "PATCH")
        # Nodes its graph does not have: every occurrence's run would be refused.
        for field in ("interrupt_before", "interrupt_after"):
            nope = {field: ["nope"]}
            assert "nope" in await refused(f"/threads/{thread_id}/runs/crons", {**good, **nope})
            assert "nope" in await refused(path, nope, "PATCH")

        missing = await http.post("/runs/crons", json={**good, "assistant_id": "nothing"})
        assert missing.status_code == 404
        nowhere = await http.post(
            "/threads/00000000-0000-0000-0000-000000000000/runs/crons", json=good
        )
        assert nowhere.status_code == 404
        assert (await http.post("/runs/crons/count", json={"colour": 1})).status_code == 422
        assert await client.crons.count() == 1
