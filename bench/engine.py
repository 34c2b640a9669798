"""Engine benchmark: our `engine` against LangGraph on the same four graphs, in one process.

Each workload is written once against a `Impl` namespace, so both sides run the very same
graph code and any gap is engine overhead. No checkpointer, sync `invoke`, compile outside
the timed region. Run `.venv/bin/python bench/engine.py [--repeat N] [--quick] [--only W]`.
"""

# No `from __future__ import annotations`: the state TypedDicts are built inside functions
# and both engines read their `Annotated` reducers with `get_type_hints`, which cannot
# resolve string annotations that name function locals.

import argparse
import gc
import operator
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

# Run as a script (`python bench/engine.py`) the repo root is not on sys.path.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Impl:
    """The names a workload needs, so one graph definition serves both engines (messages
    are LangChain's on both)."""

    name: str
    StateGraph: Any
    START: str
    END: str
    Send: Any
    add_messages: Callable[..., Any]
    ToolNode: Any
    tools_condition: Callable[..., Any]


def langgraph_impl() -> Impl:
    """The reference: LangGraph."""
    from langgraph.graph import END, START, StateGraph, add_messages
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Send

    return Impl("langgraph", StateGraph, START, END, Send, add_messages, ToolNode, tools_condition)


def engine_impl() -> Impl:
    """Ours; raises (ImportError/AttributeError) while the engine is still incomplete."""
    import engine
    from engine.prebuilt import ToolNode, tools_condition

    return Impl(
        "ours", engine.StateGraph, engine.START, engine.END, engine.Send, engine.add_messages,
        ToolNode, tools_condition,
    )  # fmt: skip


@dataclass
class Workload:
    """A graph builder plus its input, run config and the goal for ours/langgraph."""

    key: str
    title: str
    size: int
    goal: float
    build: Callable[[Impl, int], Any]  # returns a compiled graph
    make_input: Callable[[Impl, int], dict[str, Any]]
    recursion_limit: int


# --- 1. sequential chain ----------------------------------------------------------------


def build_chain(ns: Impl, n: int) -> Any:
    """n nodes in a line, each a trivial increment: measures per-step loop overhead."""

    class State(TypedDict):
        n: int

    def step(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    g = ns.StateGraph(State)
    names = [f"n{i}" for i in range(n)]
    for name in names:
        g.add_node(name, step)
    g.add_edge(ns.START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        g.add_edge(a, b)
    g.add_edge(names[-1], ns.END)
    return g.compile()


# --- 2. model/tools loop ----------------------------------------------------------------


def build_tools_loop(ns: Impl, n: int) -> Any:
    """A ReAct-shaped agent with a scripted model: measures add_messages on a growing list."""

    class State(TypedDict):
        messages: Annotated[list, ns.add_messages]

    def model(state: State) -> dict[str, Any]:
        calls = sum(1 for m in state["messages"] if m.type == "tool")
        if calls >= n:
            return {"messages": [AIMessage(content=f"done after {calls} calls", id="ai-final")]}
        call = {"name": "lookup", "args": {"i": calls}, "id": f"call-{calls}", "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[call], id=f"ai-{calls}")]}

    def tools(state: State) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        answer = ToolMessage(
            content=f"result {call['args']['i']}", tool_call_id=call["id"], id=f"tool-{call['id']}"
        )
        return {"messages": [answer]}

    def route(state: State) -> str:
        return "tools" if state["messages"][-1].tool_calls else ns.END

    g = ns.StateGraph(State)
    g.add_node("model", model)
    g.add_node("tools", tools)
    g.add_edge(ns.START, "model")
    g.add_conditional_edges("model", route, ["tools", ns.END])
    g.add_edge("tools", "model")
    return g.compile()


class ToolCallingModel(BaseChatModel):
    """A LangChain chat model that asks for `calls` tool calls, one per turn, then
    answers: what a real agent's model does, without a network."""

    calls: int

    @property
    def _llm_type(self) -> str:
        return "bench-tool-calling"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ToolCallingModel":
        return self

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        done = sum(1 for m in messages if m.type == "tool")
        if done >= self.calls:
            reply = AIMessage(content=f"done after {done} calls", id="ai-final")
        else:
            call = {"name": "lookup", "args": {"i": done}, "id": f"call-{done}"}
            reply = AIMessage(content="", tool_calls=[call], id=f"ai-{done}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def lookup(i: int) -> str:
    """Look item i up."""
    return f"result {i}"


def build_langchain_agent(ns: Impl, n: int) -> Any:
    """The classic agent loop with LangChain parts: a chat model with a tool bound, the
    prebuilt ToolNode and tools_condition; measures what real agents cost per turn."""

    class State(TypedDict):
        messages: Annotated[list, ns.add_messages]

    model = ToolCallingModel(calls=n).bind_tools([lookup])

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = ns.StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", ns.ToolNode([lookup]))
    g.add_edge(ns.START, "agent")
    g.add_conditional_edges("agent", ns.tools_condition)
    g.add_edge("tools", "agent")
    return g.compile()


def tools_input(ns: Impl, n: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(content="go", id="human-0")]}


# --- 3. Send fan-out of subgraphs -------------------------------------------------------


def build_fanout(ns: Impl, n: int) -> Any:
    """n Sends to a compiled 3-node subgraph: measures task creation and subgraph entry."""

    class SubState(TypedDict):
        item: int
        results: Annotated[list, operator.add]

    def double(state: SubState) -> dict[str, Any]:
        return {"item": state["item"] * 2}

    def inc(state: SubState) -> dict[str, Any]:
        return {"item": state["item"] + 1}

    def emit(state: SubState) -> dict[str, Any]:
        return {"results": [state["item"]]}

    sub = ns.StateGraph(SubState)
    sub.add_node("double", double)
    sub.add_node("inc", inc)
    sub.add_node("emit", emit)
    sub.add_edge(ns.START, "double")
    sub.add_edge("double", "inc")
    sub.add_edge("inc", "emit")
    sub.add_edge("emit", ns.END)
    subgraph = sub.compile()

    class State(TypedDict):
        items: list[int]
        results: Annotated[list, operator.add]
        total: int

    def fan(state: State) -> list[Any]:
        return [ns.Send("sub", {"item": i}) for i in state["items"]]

    def collect(state: State) -> dict[str, Any]:
        return {"total": sum(state["results"])}

    g = ns.StateGraph(State)
    g.add_node("sub", subgraph)
    g.add_node("collect", collect)
    g.add_conditional_edges(ns.START, fan, ["sub"])
    g.add_edge("sub", "collect")
    g.add_edge("collect", ns.END)
    return g.compile()


def fanout_input(ns: Impl, n: int) -> dict[str, Any]:
    return {"items": list(range(n)), "results": [], "total": 0}


# --- 4. many reducers -------------------------------------------------------------------

LOG_CAP = 20
TEXT_CAP = 64


def _max(a: int, b: int) -> int:
    return max(a, b)


def _min(a: int, b: int) -> int:
    return min(a, b)


def _capped_append(a: list, b: list) -> list:
    return (a + b)[-LOG_CAP:]


def _merge(a: dict, b: dict) -> dict:
    return {**a, **b}


def _union(a: list, b: list) -> list:
    return sorted(set(a) | set(b))


def _rolling_hash(a: int, b: int) -> int:
    # Order-sensitive, so a reducer applied out of order shows up as a state mismatch.
    return (a * 31 + b) % 1_000_003


def _first(a: str, b: str) -> str:
    return a or b


def _concat_capped(a: str, b: str) -> str:
    return (a + b)[-TEXT_CAP:]


def _count_keys(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _pairwise_max(a: list, b: list) -> list:
    if not a:
        return list(b)
    return [max(x, y) for x, y in zip(a, b, strict=True)]


def build_reducers(ns: Impl, n: int) -> Any:
    """One node rewriting 16 reduced fields per step: measures channel update cost."""

    class State(TypedDict):
        counter: Annotated[int, operator.add]
        hi: Annotated[int, _max]
        lo: Annotated[int, _min]
        total: Annotated[int, operator.add]
        fsum: Annotated[float, operator.add]
        log: Annotated[list, _capped_append]
        tags: Annotated[dict, _merge]
        seen: Annotated[list, _union]
        digest: Annotated[int, _rolling_hash]
        xor: Annotated[int, operator.xor]
        first: Annotated[str, _first]
        text: Annotated[str, _concat_capped]
        hist: Annotated[dict, _count_keys]
        peaks: Annotated[list, _pairwise_max]
        last: str
        evens: Annotated[int, operator.add]

    def step(state: State) -> dict[str, Any]:
        i = state["counter"]
        return {
            "counter": 1,
            "hi": (i * 37) % 101,
            "lo": 50 - (i * 53) % 97,
            "total": i,
            "fsum": i / 7,
            "log": [i],
            "tags": {f"k{i % 13}": i},
            "seen": [i % 17],
            "digest": i + 2,
            "xor": i * 2654435761 % 4096,
            "first": f"s{i}",
            "text": chr(97 + i % 26),
            "hist": {f"b{i % 5}": 1},
            "peaks": [(i * 7) % 11, (i * 5) % 13, (i * 3) % 17],
            "last": f"step {i}",
            "evens": 1 if i % 2 == 0 else 0,
        }

    def route(state: State) -> str:
        return "step" if state["counter"] < n else ns.END

    g = ns.StateGraph(State)
    g.add_node("step", step)
    g.add_edge(ns.START, "step")
    g.add_conditional_edges("step", route, ["step", ns.END])
    return g.compile()


def reducers_input(ns: Impl, n: int) -> dict[str, Any]:
    return {
        "counter": 0, "hi": 0, "lo": 0, "total": 0, "fsum": 0.0, "log": [], "tags": {},
        "seen": [], "digest": 0, "xor": 0, "first": "", "text": "", "hist": {}, "peaks": [],
        "last": "", "evens": 0,
    }  # fmt: skip


def workloads(quick: bool) -> list[Workload]:
    """The workloads of the issues; --quick shrinks them to a smoke test."""
    chain, calls, fan, loops = (100, 20, 20, 50) if quick else (1000, 100, 100, 300)
    return [
        Workload("chain", "sequential chain", chain, 0.25, build_chain,
                 lambda ns, n: {"n": 0}, chain + 10),
        Workload("tools", "model/tools loop", calls, 0.25, build_tools_loop, tools_input,
                 2 * calls + 10),
        Workload("agent", "LangChain agent loop", calls, 0.5, build_langchain_agent,
                 tools_input, 2 * calls + 10),
        Workload("fanout", "Send fan-out subgraphs", fan, 0.5, build_fanout, fanout_input, 10),
        Workload("reducers", "16 reducers loop", loops, 0.5, build_reducers, reducers_input,
                 loops + 10),
    ]  # fmt: skip


# --- running and comparing --------------------------------------------------------------


VERBOSE = False  # set by --verbose: print the traceback of each caught error


@dataclass
class Outcome:
    """Timings and the normalised final state, or the error that stopped the run."""

    times: list[float] = field(default_factory=list)
    state: Any = None
    error: str | None = None
    graph: Any = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def _fail(o: Outcome, exc: Exception) -> None:
    if VERBOSE:
        traceback.print_exc()
    o.error = f"{type(exc).__name__}: {exc}"


def prepare(ns: Impl | None, w: Workload, load_error: str | None) -> Outcome:
    """Build, compile and warm up once (untimed); the warm-up's output is the checked state."""
    o = Outcome()
    if ns is None:
        o.error = load_error or "not available"
        return o
    try:
        o.graph = w.build(ns, w.size)
        o.state = normalise(o.graph.invoke(w.make_input(ns, w.size), _config(w)))
    except Exception as exc:  # report and go on to the next workload
        _fail(o, exc)
    return o


def time_once(ns: Impl, w: Workload, o: Outcome) -> None:
    """One timed invoke; on error the side stops being timed for this workload."""
    if o.error:
        return
    try:
        payload = w.make_input(ns, w.size)
        gc.collect()
        t0 = time.perf_counter()
        o.graph.invoke(payload, _config(w))
        o.times.append(time.perf_counter() - t0)
    except Exception as exc:
        _fail(o, exc)
        o.times.clear()


def _config(w: Workload) -> dict[str, Any]:
    return {"recursion_limit": w.recursion_limit}


def run_pair(
    lg: Impl, ours: Impl | None, w: Workload, repeat: int, ours_error: str | None
) -> tuple[Outcome, Outcome]:
    """Alternate the sides run by run, so load from other processes hits both alike."""
    ref, mine = prepare(lg, w, None), prepare(ours, w, ours_error)
    for _ in range(repeat):
        time_once(lg, w, ref)
        if ours is not None:
            time_once(ours, w, mine)
    return ref, mine


def normalise(value: Any) -> Any:
    """Drop implementation details (message classes, ids, metadata) before comparing."""
    if hasattr(value, "type") and hasattr(value, "content"):
        out: dict[str, Any] = {"type": value.type, "content": value.content}
        calls = getattr(value, "tool_calls", None)
        if calls:
            out["tool_calls"] = [(c["name"], c["args"], c["id"]) for c in calls]
        if getattr(value, "tool_call_id", None):
            out["tool_call_id"] = value.tool_call_id
        return out
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(normalise(v) for v in value)
    return value


def first_difference(a: Any, b: Any, path: str = "state") -> str | None:
    """Where two normalised states first differ, so a mismatch warning is actionable."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            if d := first_difference(a[k], b[k], f"{path}.{k}"):
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if d := first_difference(x, y, f"{path}[{i}]"):
                return d
        return None
    if a != b:
        return f"{path}: {a!r:.60} != {b!r:.60}"
    return None


def fmt_ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f}"


def main(argv: list[str] | None = None) -> int:
    """Print one row per workload; the exit code stays 0 so `make bench` only reports."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=None, help="timed runs per side (default 5)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, 2 repeats: a smoke test")
    p.add_argument("--only", action="append", help="run only this workload key (repeatable)")
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of errors")
    args = p.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    repeat = args.repeat or (2 if args.quick else 5)

    lg = langgraph_impl()
    ours: Impl | None = None
    ours_error = None
    try:
        ours = engine_impl()
    except Exception as exc:
        ours_error = f"engine not importable: {type(exc).__name__}: {exc}"

    selected = [w for w in workloads(args.quick) if not args.only or w.key in args.only]
    print(f"engine benchmark: median of {repeat} run(s) after 1 warm-up, ms per invoke")
    print(f"python {sys.version.split()[0]}, sync invoke, no checkpointer")
    if args.quick:
        print("--quick: reduced sizes; the goals are meant for full runs")
    header = (
        f"{'workload':<24}{'size':>6}{'langgraph':>11}{'ours':>11}{'ratio':>8}"
        f"{'goal':>7}  {'result':<6}  state"
    )
    print()
    print(header)
    print("-" * len(header))
    notes: list[str] = []
    for w in selected:
        ref, mine = run_pair(lg, ours, w, repeat, ours_error)
        ratio = mine.median / ref.median if mine.median and ref.median else None
        verdict = "-" if ratio is None else ("PASS" if ratio <= w.goal else "MISS")
        if ref.error or mine.error:
            same = "-"
        else:
            diff = first_difference(ref.state, mine.state)
            same = "same" if diff is None else "DIFF"
            if diff:
                notes.append(f"WARNING {w.key}: final states differ at {diff}")
        for side, o in (("langgraph", ref), ("ours", mine)):
            if o.error and not (o is mine and ours is None):
                notes.append(f"ERROR {w.key} ({side}): {o.error[:300]}")
        print(
            f"{w.title:<24}{w.size:>6}{fmt_ms(ref.median):>11}{fmt_ms(mine.median):>11}"
            f"{'-' if ratio is None else f'{ratio:.3f}':>8}{f'<={w.goal}':>7}  {verdict:<6}  {same}"
        )
    if ours is None:
        notes.insert(0, f"ERROR ours: {ours_error}")
    if notes:
        print()
        print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
