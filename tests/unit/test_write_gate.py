"""SQLite's one writer in a process (engine/checkpoint/sql/connect.py): writers take turns in
the order they came, an urgent one before the others waiting, and a writer cancelled
while it waits, or just as its turn came, does not stop the ones after it."""

from __future__ import annotations

import asyncio

from engine.checkpoint.sql.connect import WriteGate


async def _writer(gate: WriteGate, name: str, order: list[str], *, urgent: bool = False) -> None:
    async with gate.hold(urgent=urgent):
        order.append(name)
        await asyncio.sleep(0.01)


async def test_writers_take_turns_in_order_and_an_urgent_one_goes_first() -> None:
    gate, order = WriteGate(), []
    first = asyncio.create_task(_writer(gate, "first", order))
    await asyncio.sleep(0)  # it holds the gate
    waiting = [asyncio.create_task(_writer(gate, f"save{i}", order)) for i in range(3)]
    await asyncio.sleep(0)
    urgent = asyncio.create_task(_writer(gate, "create", order, urgent=True))
    await asyncio.gather(first, *waiting, urgent)
    assert order == ["first", "create", "save0", "save1", "save2"]


async def test_a_cancelled_waiter_does_not_stop_the_others() -> None:
    gate, order = WriteGate(), []
    first = asyncio.create_task(_writer(gate, "first", order))
    await asyncio.sleep(0)
    gone = asyncio.create_task(_writer(gate, "gone", order))
    after = asyncio.create_task(_writer(gate, "after", order))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.gather(first, after)
    assert order == ["first", "after"]


async def test_a_waiter_cancelled_as_its_turn_came_passes_the_gate_on() -> None:
    gate, order = WriteGate(), []
    tasks: dict[str, asyncio.Task[None]] = {}

    async def holder() -> None:
        async with gate.hold():
            order.append("first")
            await asyncio.sleep(0.01)
        tasks["late"].cancel()  # its turn has come, and it has not run yet

    tasks["first"] = asyncio.create_task(holder())
    await asyncio.sleep(0)
    tasks["late"] = asyncio.create_task(_writer(gate, "late", order))
    tasks["after"] = asyncio.create_task(_writer(gate, "after", order))
    await asyncio.wait_for(asyncio.gather(tasks["first"], tasks["after"]), 1)
    assert tasks["late"].cancelled()
    assert order == ["first", "after"]
    async with asyncio.timeout(1), gate.hold():  # and it is free again
        pass
