"""A saver's serializer (`serde`), as LangGraph's programs hand it over: LangGraph's
`JsonPlusSerializer` with an allowlist, or a serializer of the user's own. These cases
run on InMemorySaver only (the SQL saver takes the engine's serializers only), but the
one of the values stored without a serializer of the graph's own, which runs on the SQL
saver too.
No ``from __future__ import annotations`` here (see cases_core).
"""

import dataclasses
import operator
from typing import Annotated, Any, TypedDict

from .cases_core import build, chain_edges
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


class Holder(TypedDict):
    log: Annotated[list, operator.add]
    held: Any


def _stdlib_values() -> dict[str, Any]:
    """Values of the standard library (and a numpy array, when numpy is installed) that
    LangGraph's serializer stores without being told about them."""
    import collections
    import datetime
    import ipaddress
    import pathlib
    import re
    import zoneinfo

    values: dict[str, Any] = {
        "odict": collections.OrderedDict([("b", 1), ("a", [2])]),
        "defaultdict": collections.defaultdict(list, {"k": [1, 2]}),
        "counter": collections.Counter("abracadabra"),
        "path": pathlib.Path("/srv/data/report.txt"),
        "pattern": re.compile(r"\d+-\w*", re.IGNORECASE),
        "ipv4": ipaddress.ip_address("192.0.2.1"),
        "ipv6 network": ipaddress.ip_network("2001:db8::/32"),
        "interface": ipaddress.ip_interface("10.1.2.3/16"),
        "offset": datetime.timezone(datetime.timedelta(hours=-5), "EST"),
        "utc": datetime.UTC,
        "zone": zoneinfo.ZoneInfo("Europe/Paris"),
    }
    try:
        import numpy
    except ImportError:
        return values
    values["array"] = numpy.arange(6, dtype=numpy.int16).reshape(2, 3)
    return values


def _described(value: Any, original: Any) -> Any:
    """What LangGraph's savers and ours agree on: LangGraph gives a dict subclass back as
    a plain dict (ours as itself), and it loses a defaultdict's factory."""
    if isinstance(value, dict):
        return {"dict": True, "items": sorted(value.items()), "equal": value == original}
    if type(value).__name__ == "ndarray":
        same = value.dtype == original.dtype and (value == original).all()
        return {"shape": list(value.shape), "dtype": str(value.dtype), "equal": bool(same)}
    return {"type": type(value).__name__, "repr": repr(value), "equal": value == original}


@case(aio=True, sql=True)
def case_stdlib_values_in_state_survive_a_checkpoint(ns: NS, aio: bool) -> Any:
    """OrderedDict, defaultdict, Counter, a path, a compiled pattern, IP addresses and
    networks, time zones and a numpy array in state: written by a node, saved, read back
    on resume (after an interrupt) and by `get_state`."""

    def make(state: Any) -> dict[str, Any]:
        return {"log": ["made"], "held": _stdlib_values()}

    def ask(state: Any) -> dict[str, Any]:
        answer = ns.interrupt("ok?")
        seen = {k: type(v).__name__ for k, v in state["held"].items()}
        return {"log": [answer, len(seen)]}

    nodes = {"make": make, "ask": ask}
    graph = build(ns, Holder, nodes, chain_edges(list(nodes))[:-1], checkpointer=ns.InMemorySaver())
    config = thread()
    invoke(graph, {"log": []}, config, aio=aio)
    resumed = invoke(graph, ns.Command(resume="yes"), config, aio=aio)
    original = _stdlib_values()
    state = graph.get_state(config).values
    return {
        "log": resumed["log"],
        "held": {k: _described(v, original[k]) for k, v in state["held"].items()},
        "history": len(history(graph, config)),
    }


@case
def case_allowlists_take_what_langgraph_takes(ns: NS) -> Any:
    """Allowlist entries naming a type stored anyway, a module that is not installed and
    a class of the graph's: the serializer and `with_allowlist` take them all, and the
    class named is restored."""
    entries = [
        ("decimal", "Decimal"),
        ("collections", "OrderedDict"),
        ("optional_pkg_not_installed", "Thing"),
        (__name__, "Parcel"),
    ]

    def graph(saver: Any) -> Any:
        def pack(state: Any) -> dict[str, Any]:
            return {"log": ["packed"], "parcel": Parcel(3)}

        def ask(state: Any) -> dict[str, Any]:
            return {"log": [ns.interrupt("sign?"), state["parcel"].weight]}

        nodes = {"pack": pack, "ask": ask}
        return build(ns, ParcelState, nodes, chain_edges(list(nodes))[:-1], checkpointer=saver)

    out = {}
    savers = {
        "serde": ns.InMemorySaver(serde=ns.JsonPlusSerializer(allowed_msgpack_modules=entries)),
        "with_allowlist": ns.InMemorySaver().with_allowlist(entries),
    }
    for name, saver in savers.items():
        g, config = graph(saver), thread()
        invoke(g, {"log": []}, config)
        resumed = invoke(g, ns.Command(resume="signed"), config)
        out[name] = {"resumed": resumed, "parcel": g.get_state(config).values["parcel"].weight}
    return out
