"""Property: however a run is cut (interrupts answered later, a crash then a retry), a
thread ends in the same state as a run that went through in one call, and no node that
finished is run again."""

from __future__ import annotations

import operator
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import END, START, Command, InMemorySaver, StateGraph, interrupt


class State(TypedDict):
    log: Annotated[list[str], operator.add]


@dataclass
class Plan:
    """A layered graph: every node of a layer leads to some nodes of the next one."""

    layers: list[list[str]]
    edges: list[tuple[str, str]]
    asking: set[str] = field(default_factory=set)
    crashing: set[str] = field(default_factory=set)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    layers = [[f"n{i}_{j}" for j in range(size)] for i, size in enumerate(sizes)]
    edges = [(START, name) for name in layers[0]]
    for upper, lower in zip(layers, layers[1:], strict=False):
        for name in upper:
            targets = draw(st.lists(st.sampled_from(lower), min_size=1, unique=True))
            edges += [(name, target) for target in targets]
        for target in lower:
            if not any(end == target for _, end in edges):
                edges.append((upper[0], target))
    edges += [(name, END) for name in layers[-1]]
    nodes = [name for layer in layers for name in layer]
    asking = set(draw(st.lists(st.sampled_from(nodes), unique=True, max_size=3)))
    crashing = set(draw(st.lists(st.sampled_from(nodes), unique=True, max_size=2)))
    return Plan(layers, edges, asking, crashing)


def build(plan: Plan, *, ask: bool, crash: bool) -> tuple[Any, Counter[str]]:
    calls: Counter[str] = Counter()
    crashed: set[str] = set()

    def make(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            calls[name] += 1
            if crash and name in plan.crashing and name not in crashed:
                crashed.add(name)
                raise RuntimeError(f"{name} crashed")
            answer = interrupt(f"{name}?") if ask and name in plan.asking else "ok"
            return {"log": [f"{name}:{answer}"]}

        return node

    builder = StateGraph(State)
    for layer in plan.layers:
        for name in layer:
            builder.add_node(name, make(name))
    for start, end in plan.edges:
        builder.add_edge(start, end)
    return builder.compile(checkpointer=InMemorySaver(check_immutable=True)), calls


def finish(graph: Any, config: dict[str, Any], first: Any) -> dict[str, Any]:
    """Keep answering and retrying until the thread has nothing left to run."""
    pending: Any = first
    for _ in range(50):
        try:
            graph.invoke(pending, config)
        except RuntimeError:
            pending = None
            continue
        state = graph.get_state(config)
        if not state.next:
            return state.values
        answers = {i.id: "ok" for i in state.interrupts}
        pending = Command(resume=answers) if answers else None
    raise AssertionError("the run did not finish")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.sampled_from(["ask", "crash", "both"]))
def test_cut_runs_end_where_straight_runs_do(plan: Plan, cut: str) -> None:
    straight, straight_calls = build(plan, ask=False, crash=False)
    expected = straight.invoke({"log": []}, {"configurable": {"thread_id": "s"}})

    graph, calls = build(plan, ask=cut in ("ask", "both"), crash=cut in ("crash", "both"))
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    assert finish(graph, config, {"log": []}) == expected

    # Nodes that neither asked nor crashed ran once, however often the step was retried.
    for name, count in calls.items():
        if name not in plan.asking | plan.crashing:
            assert count == straight_calls[name], name
