"""Graphs the multi-process tests serve (THREADLINE_GRAPHS points here).

Nodes are slow on purpose (asyncio.sleep), so runs overlap and are caught mid-flight.
`echo` appends each execution's interval to the file named by TRACE_VARIABLE: the test
reads it to prove that no thread ever had two runs executing at once, across processes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import os
import time
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage

from engine import END, START, MessagesState, StateGraph, get_config, get_stream_writer

TRACE_VARIABLE = "MULTIPROCESS_TRACE"
ECHO_DELAY_S = 0.05
log = logging.getLogger(__name__)


async def reply(state: MessagesState) -> dict[str, Any]:
    started = time.time()
    await asyncio.sleep(ECHO_DELAY_S)
    configurable = get_config()["configurable"]
    entry = {
        "thread_id": configurable["thread_id"],
        "run_id": configurable["run_id"],
        "start": started,
        "end": time.time(),
    }
    # One short O_APPEND write per line: lines from several processes never interleave.
    with open(os.environ[TRACE_VARIABLE], "a", encoding="utf-8") as trace:
        trace.write(json.dumps(entry) + "\n")
    return {"messages": [AIMessage(f"You said: {state['messages'][-1].text}")]}


echo = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")


class TickState(TypedDict, total=False):
    n: int
    delay: float
    ticks: Annotated[list[int], operator.add]


async def tick(state: TickState) -> dict[str, Any]:
    """One step per tick: a custom stream event, a log line and a checkpoint each."""
    number = len(state.get("ticks", []))
    await asyncio.sleep(state.get("delay", 0.1))
    get_stream_writer()({"tick": number})
    log.info("tick %d", number)
    return {"ticks": [number]}


def more(state: TickState) -> str:
    return "tick" if len(state.get("ticks", [])) < state.get("n", 1) else END


ticker = (
    StateGraph(TickState)
    .add_node("tick", tick)
    .add_edge(START, "tick")
    .add_conditional_edges("tick", more, ["tick", END])
)

GRAPHS = {
    "agent": "app.agents.reminders:graph",
    "echo": "tests.multiprocess.graphs:echo",
    "ticker": "tests.multiprocess.graphs:ticker",
    "asker": "tests.api.graphs:asker",
}
