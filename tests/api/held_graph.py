"""A graph whose one node waits for the test to let it go: a run that is still going when
its test deletes its thread. (Served in the test's process, so the gate is shared.)"""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

from engine import START, StateGraph

# Set by the test: the node returns.
GATE = threading.Event()
# Set by the node: it is waiting at the gate.
WAITING = threading.Event()


class HeldState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


async def hold(state: HeldState) -> dict[str, Any]:
    WAITING.set()
    await asyncio.to_thread(GATE.wait, 60)
    return {"log": ["held"]}


held = StateGraph(HeldState).add_node("hold", hold).add_edge(START, "hold")
