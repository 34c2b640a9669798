"""Serializer micro-benchmark: ours against LangGraph's JsonPlusSerializer, same values.

    .venv/bin/python bench/serde.py [--repeat 15] [--number 20]

Three values, each encoded and decoded by both: a chat state (a 100-message thread with
tool calls, tool results and usage, as a chat agent's state holds it), a wide nested dict
(50 x 50 lists of plain values, the shape of LangGraph's own wide-state benchmark) and a
pydantic state (a model with lists of such dicts, allowed by both serializers). LangGraph
runs `dumps_typed` / `loads_typed`, which is what its savers call; ours runs both of its
formats: `dumps_binary` (msgpack, what the in-memory saver stores) and `dumps` (JSON text,
what the SQL saver stores), each read back by `loads`.

Method: each timing is `--number` calls; the sides take turns, `--repeat` timings each;
the table shows the best timing of one call in microseconds (as `timeit` advises: on a
shared machine the others are slowed by other processes, not by the code) and the ratio
ours / LangGraph. Goal: at most 1.0 (ours at most LangGraph's time).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, the repo root is not on sys.path
    sys.path.insert(0, str(ROOT))

from engine.checkpoint.serde.jsonplus import JsonSerializer  # noqa: E402

GOAL = 1.0


class PydanticState(BaseModel):
    """A state like the one of LangGraph's pydantic_state benchmark."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    trigger_events: list[dict[str, Any]] = Field(default_factory=list)
    primary_issue_medium: str = "email"
    issue: dict[str, Any] | None = None
    responses: list[dict[str, Any]] = Field(default_factory=list)
    user_info: dict[str, Any] | None = None


def chat_state() -> dict[str, Any]:
    messages: list[Any] = []
    for turn in range(25):
        call = {"name": "search", "args": {"query": f"weather {turn}"}, "id": f"c{turn}"}
        messages += [
            HumanMessage(f"question {turn}: " + "what is the weather like? " * 4, id=f"h{turn}"),
            AIMessage(
                "",
                id=f"a{turn}",
                tool_calls=[{**call, "type": "tool_call"}],
                usage_metadata={"input_tokens": 120, "output_tokens": 12, "total_tokens": 132},
                response_metadata={"model_name": "model", "finish_reason": "tool_calls"},
            ),
            ToolMessage("sunny, 21 degrees " * 5, tool_call_id=f"c{turn}", id=f"t{turn}"),
            AIMessage("It is sunny. " * 10, id=f"r{turn}", response_metadata={"stop": True}),
        ]
    return {"messages": messages, "thread": str(uuid.uuid4()), "turns": 25}


def wide_dict() -> dict[str, Any]:
    return {
        str(i) * 10: {
            str(j) * 10: ["hi?" * 10, True, 1, 6327816386138, None] * 5 for j in range(50)
        }
        for i in range(50)
    }


def pydantic_state() -> PydanticState:
    item = {
        str(i) * 10: {str(j) * 10: ["hi?" * 10, True, 1, 6327816386138, None] * 5 for j in range(5)}
        for i in range(5)
    }
    return PydanticState(
        messages=[dict(item) for _ in range(20)],
        trigger_events=[dict(item) for _ in range(10)],
        issue=dict(item),
        responses=[dict(item) for _ in range(10)],
        user_info={"name": "Ada", "tags": ["a", "b"]},
    )


def timed(function: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        function()
    return (time.perf_counter() - start) / number * 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timings per side")
    parser.add_argument("--number", type=int, default=20, help="calls per timing")
    args = parser.parse_args(argv)
    module = PydanticState.__module__
    theirs = JsonPlusSerializer(allowed_msgpack_modules=[(module, "PydanticState")])
    ours = JsonSerializer()
    ours.allow(PydanticState)
    sides: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
        "langgraph": (theirs.dumps_typed, theirs.loads_typed),
        "ours binary": (ours.dumps_binary, ours.loads),
        "ours JSON": (ours.dumps, ours.loads),
    }
    print(f"best of {args.repeat} timings of {args.number} calls, microseconds per call")
    print("| value | op | LangGraph | ours binary | ratio | ours JSON | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    misses = 0
    for name, make in (
        ("chat state", chat_state),
        ("wide nested dict", wide_dict),
        ("pydantic state", pydantic_state),
    ):
        value = make()
        stored = {side: dumps(value) for side, (dumps, _) in sides.items()}
        for side, (_, loads) in sides.items():  # each reads back what it was given
            if repr(loads(stored[side])) != repr(value):
                raise AssertionError(f"{side} does not read {name} back as it was")
        for op in ("encode", "decode"):
            calls = {
                side: (lambda d=dumps, v=value: d(v))
                if op == "encode"
                else (lambda lo=loads, s=stored[side]: lo(s))
                for side, (dumps, loads) in sides.items()
            }
            times: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(args.repeat):
                for side, call in calls.items():
                    times[side].append(timed(call, args.number))
            best = {side: min(t) for side, t in times.items()}
            base = best["langgraph"]
            ratios = [best[s] / base for s in ("ours binary", "ours JSON")]
            misses += ratios[0] > GOAL
            print(
                f"| {name} | {op} | {base:,.0f} | {best['ours binary']:,.0f} | "
                f"{ratios[0]:.2f} | {best['ours JSON']:,.0f} | {ratios[1]:.2f} |"
            )
    print(f"binary format at most {GOAL}x LangGraph's time: {6 - misses} of 6")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
