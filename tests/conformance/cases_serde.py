"""A saver's serializer (`serde`), as LangGraph's programs hand it over: LangGraph's
`JsonPlusSerializer` with an allowlist, or a serializer of the user's own. These cases
run on InMemorySaver only: the SQL saver takes the engine's serializers only.
No ``from __future__ import annotations`` here (see cases_core).
"""

import dataclasses
import operator
from typing import Annotated, Any, TypedDict

from .harness import NS, case, history, invoke, thread


@dataclasses.dataclass
class Parcel:
    """A class that no state schema names: a saver restores it only when told to."""

    weight: int


class ParcelState(TypedDict):
    log: Annotated[list, operator.add]
    parcel: Any


@case(aio=True)
def case_savers_take_a_serializer(ns: NS, aio: bool) -> Any:
    """`InMemorySaver(serde=...)`: LangGraph's serializer with an allowlist naming a class
    (as a tuple), a serializer of the user's own (only `dumps_typed` and `loads_typed`)
    that the saver stores through, and a failing one, whose error is the run's."""

    class Counting:
        def __init__(self) -> None:
            self.inner = ns.JsonPlusSerializer()
            self.calls = {"dumps": 0, "loads": 0}

        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            self.calls["dumps"] += 1
            return self.inner.dumps_typed(obj)

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            self.calls["loads"] += 1
            return self.inner.loads_typed(data)

    class Faulty(ns.JsonPlusSerializer):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            raise ValueError("Faulty serializer")

    def graph(serde: Any, parcel: bool) -> Any:
        def pack(state: Any) -> dict[str, Any]:
            return {"log": ["packed"], "parcel": Parcel(len(state["log"])) if parcel else 7}

        def ask(state: Any) -> dict[str, Any]:
            return {"log": [ns.interrupt("sign?")]}

        return (
            ns.StateGraph(ParcelState)
            .add_node("pack", pack)
            .add_node("ask", ask)
            .add_edge(ns.START, "pack")
            .add_edge("pack", "ask")
            .compile(checkpointer=ns.InMemorySaver(serde=serde))
        )

    def run(serde: Any, parcel: bool) -> dict[str, Any]:
        g, config = graph(serde, parcel), thread()
        first = invoke(g, {"log": ["start"]}, config, aio=aio)
        return {
            "first": first,
            "resumed": invoke(g, ns.Command(resume="signed"), config, aio=aio),
            "state": g.get_state(config).values,
            "history": len(history(g, config)),
        }

    allowing = ns.JsonPlusSerializer(allowed_msgpack_modules=[(__name__, "Parcel")])
    counting = Counting()
    return {
        "allowlist": run(allowing, parcel=True),
        "own": run(counting, parcel=False),
        "own used": {name: count > 0 for name, count in counting.calls.items()},
        "faulty": invoke(graph(Faulty(), parcel=False), {"log": []}, thread(), aio=aio),
    }
