"""A run's start costs what its input wakes, not what the graph holds: on a thread with
nothing saved, applying the input does not look for unfinished tasks (there can be
none), and the first step asks only the nodes the input's channels trigger."""

from typing import Any, TypedDict

import pytest

from engine import END, START, StateGraph
from engine.checkpoint.memory import InMemorySaver
from engine.pregel import loop as loop_module


class Count(TypedDict):
    n: int


def chain(length: int) -> Any:
    builder = StateGraph(Count)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        builder.add_node(name, lambda state: {"n": state["n"] + 1})
    for before, after in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(before, after)
    return builder


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each preparation of tasks was told had changed (None: everything)."""
    seen: list[Any] = []
    prepare = loop_module.prepare_tasks

    def noted(**kwargs: Any) -> Any:
        seen.append(kwargs["updated"])
        return prepare(**kwargs)

    monkeypatch.setattr(loop_module, "prepare_tasks", noted)
    return seen


def test_a_fresh_thread_never_asks_every_node(asked: list[Any]) -> None:
    graph = chain(50).compile()
    assert graph.invoke({"n": 0}) == {"n": 50}
    assert None not in asked


def test_a_thread_with_a_past_still_drops_its_unfinished_tasks() -> None:
    graph = chain(3).compile(checkpointer=InMemorySaver(), interrupt_before=["n1"])
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 0}, config)
    assert graph.get_state(config).next == ("n1",)
    # New input starts anew: the task left at the interrupt goes.
    assert graph.invoke({"n": 10}, config) == {"n": 11}
    assert graph.get_state(config).next == ("n1",)
