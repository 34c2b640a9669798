"""LangGraph's own benchmark suite, run on LangGraph and on our engine side by side.

    .venv/bin/python bench/langgraph_suite.py [--repeat 5] [--only REGEX]

The suite is the `bench/` folder of the langgraph 1.2.24 source archive: its graphs
(fanout_to_subgraph, react_agent, sequential, wide_state, wide_dict, pydantic_state) and
its `__main__.py`, which lists every workload, each with and without an `InMemorySaver`,
streamed with `durability="exit"`. The archive is the one the LangGraph test harness
verifies (tests/langgraph_suite/harness.py), downloaded at bench time and extracted under
.cache/, never committed.

Two worker processes load the suite: one on the installed `langgraph`, one on the engine
behind the harness's import shim (`langgraph.X` is `engine.X`). Each runs `__main__.py`
as far as its pyperf runner, so both build exactly the workloads it lists, with the same
random inputs (both seed `random` alike). The parent then times every workload on both,
one value each in turn: a warm-up, then `--repeat` timed values; the table shows the
medians and the ratio ours / LangGraph. A value is the mean time of back-to-back calls
lasting at least 0.1 s, after a full garbage collection, as pyperf (the suite's own
runner) times a value; `--single` times one call per value instead, which for rows of a
millisecond or less measures a cold call (caches emptied by the collection and the other
side's run) rather than the workload.

Rows are named as pyperf names them: `X` runs `arun` (async, on uvloop), `X_sync` runs
`run`, `X_first_event_latency[_sync]` stops at the first streamed event, `X_compilation`
times `compile()`, `serde_allowlist_*` the collection of a schema's classes for the
serializer's allowlist. Where the suite departs from its own `__main__.py`:

- `sequential` builds its nodes with LangGraph's private `RunnableCallable(noop, anoop)`;
  both sides run the same graph with the public `RunnableLambda(noop, afunc=anoop)`.
- `serde_allowlist` calls LangGraph's private `collect_allowlist_from_schemas`, which has
  no public twin: LangGraph runs it, the engine runs its own `allow_schemas` on the same
  schemas and channel types.
- `__main__.py` means to measure the first-event latency of `sequential_1000` and
  `pydantic_state_25x300`, but compares graph objects with their names, so pyperf never
  runs those; they run here.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import types
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, the repo root is not on sys.path
    sys.path.insert(0, str(ROOT))

from tests.langgraph_suite.harness import ARCHIVES, CACHE, download  # noqa: E402

ARCHIVE = ARCHIVES["langgraph"]
SUITE = CACHE / f"{ARCHIVE.name}-{ARCHIVE.version}-bench"  # holds the archive's bench/
GOAL = 0.5
# pyperf's shortest value: a row faster than this runs back to back until it is filled.
VALUE_S = 0.1
SIDES = ("langgraph", "ours")
FIRST_EVENT_GRAPHS = ("sequential_1000", "pydantic_state_25x300")
# Private imports of the suite's modules, and the public names that replace them.
SEQUENTIAL_PRIVATE = "from langgraph._internal._runnable import RunnableCallable\n"
SEQUENTIAL_PUBLIC = (
    "from langchain_core.runnables import RunnableLambda\n\n\n"
    "def RunnableCallable(func, afunc):\n"
    "    return RunnableLambda(func, afunc=afunc)\n"
)
ALLOWLIST_PRIVATE = "from langgraph._internal._serde import collect_allowlist_from_schemas\n"


def extract() -> Path:
    """The archive's bench/ folder under .cache/, downloaded and extracted if need be."""
    if (SUITE / "bench" / "__main__.py").is_file():
        return SUITE
    sdist = CACHE / "sdists" / ARCHIVE.sdist
    sdist.parent.mkdir(parents=True, exist_ok=True)
    if not sdist.is_file():
        download(ARCHIVE, sdist)
    staging = Path(tempfile.mkdtemp(dir=CACHE, prefix=".extract-"))
    with tarfile.open(sdist) as tar:
        members = []
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            if len(parts) > 2 and parts[1] == "bench":
                member.name = str(PurePosixPath(*parts[1:]))
                members.append(member)
        tar.extractall(staging, members=members, filter="data")
    if not SUITE.is_dir():  # another run may have extracted it meanwhile
        staging.rename(SUITE)
    return SUITE


# The worker: one process per side, answering one JSON line per request.


class Broken:
    """A workload whose graph could not be built on this side: every row of it reports
    the error instead of a time."""

    def __init__(self, error: str) -> None:
        self.error = error

    def compile(self, **_: Any) -> Broken:
        return self


def guarded(build: Callable[..., Any]) -> Callable[..., Any]:
    def build_or_broken(*args: Any, **kwargs: Any) -> Any:
        try:
            return build(*args, **kwargs)
        except Exception as error:  # a missing feature of one side, reported per row
            return Broken(f"{type(error).__name__}: {error}".splitlines()[0])

    return build_or_broken


def load_module(name: str, path: Path, replace: dict[str, str], names: dict[str, Any]) -> None:
    """Run one of the suite's modules with some of its lines replaced and some names
    given, registered under its own name so that `__main__.py` imports it."""
    source = path.read_text()
    for old, new in replace.items():
        if old not in source:
            raise LookupError(f"{path.name} no longer has {old!r}")
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(names)
    sys.modules[name] = module
    exec(compile(source, str(path), "exec"), module.__dict__)


def our_allowlist_collector() -> Callable[..., None]:
    """The engine's counterpart of LangGraph's collect_allowlist_from_schemas: its own
    `allow_schemas` on the schemas and the channels' value and update types, into the
    serializer of a saver made once (LangGraph's collects into a new set)."""
    from engine.checkpoint.memory import InMemorySaver
    from engine.checkpoint.serde.jsonplus import allow_schemas

    saver = InMemorySaver()

    def collect(*, schemas: Iterable[Any], channels: dict[str, Any]) -> None:
        types_ = [t for c in channels.values() for t in (c.ValueType, c.UpdateType)]
        allow_schemas(saver, [*schemas, *types_])

    return collect


def prepare_side(side: str) -> None:
    """Make the suite's modules importable as `bench.X` on this side (the engine's
    behind the shim), with public names where they use private ones."""
    root = extract()
    sys.path.insert(0, str(root))
    if side == "ours":
        sys.path.insert(0, str(ROOT / "tests" / "langgraph_suite"))
        from langgraph_shim import LanggraphFinder

        sys.meta_path.insert(0, LanggraphFinder())
    import bench  # theirs: a package, so it wins over the repo's folder of scripts

    folder = Path(bench.__file__).parent
    load_module(
        "bench.sequential", folder / "sequential.py", {SEQUENTIAL_PRIVATE: SEQUENTIAL_PUBLIC}, {}
    )
    if side == "ours":
        load_module(
            "bench.serde_allowlist",
            folder / "serde_allowlist.py",
            {ALLOWLIST_PRIVATE: ""},
            {"collect_allowlist_from_schemas": our_allowlist_collector()},
        )


def load_suite(side: str) -> dict[str, Any]:
    """Run `__main__.py` up to its pyperf runner on this side: its namespace."""
    prepare_side(side)
    # pyperf runs the suite upstream; here its runner is never called.
    pyperf = types.ModuleType("pyperf._runner")
    pyperf.Runner = None  # type: ignore[attr-defined]
    sys.modules["pyperf"] = types.ModuleType("pyperf")
    sys.modules["pyperf._runner"] = pyperf
    import bench.fanout_to_subgraph as fanout
    import bench.pydantic_state as pydantic_state
    import bench.react_agent as react_agent
    import bench.sequential as sequential
    import bench.wide_dict as wide_dict
    import bench.wide_state as wide_state

    for module, name in [
        (fanout, "fanout_to_subgraph"),
        (fanout, "fanout_to_subgraph_sync"),
        (pydantic_state, "pydantic_state"),
        (react_agent, "react_agent"),
        (sequential, "create_sequential"),
        (wide_dict, "wide_dict"),
        (wide_state, "wide_state"),
    ]:
        setattr(module, name, guarded(getattr(module, name)))
    main = Path(sys.modules["bench"].__file__).parent / "__main__.py"  # type: ignore[arg-type]
    source = main.read_text()
    source = source[: source.index("\nr = Runner()")]
    namespace: dict[str, Any] = {"__name__": "bench_main", "__file__": str(main)}
    exec(compile(source, str(main), "exec"), namespace)
    return namespace


def rows(suite: dict[str, Any]) -> dict[str, tuple[bool, Callable[..., Any], tuple[Any, ...]]]:
    """Every row: whether it is a coroutine function, the function, its arguments."""
    out: dict[str, tuple[bool, Callable[..., Any], tuple[Any, ...]]] = {}
    for name, agraph, graph, input_ in suite["benchmarks"]:
        out[name] = (True, suite["arun"], (agraph, input_))
        out[name + "_sync"] = (False, suite["run"], (graph, input_))
    for name, agraph, graph, input_ in suite["benchmarks"]:
        if name in FIRST_EVENT_GRAPHS:
            first = name + "_first_event_latency"
            out[first] = (True, suite["arun_first_event_latency"], (agraph, input_))
            out[first + "_sync"] = (False, suite["run_first_event_latency"], (graph, input_))
    builders = {
        "sequential_1000": lambda: suite["create_sequential"](1_000),
        "pydantic_state_25x300": lambda: suite["pydantic_state"](300),
        "wide_state_15x600": lambda: suite["wide_state"](600),
    }
    for name, build in builders.items():
        out[name + "_compilation"] = (False, suite["compile_graph"], (build(),))
    out["serde_allowlist_small"] = (False, suite["collect_allowlist_small"], ())
    out["serde_allowlist_large"] = (False, suite["collect_allowlist_large"], ())
    return out


def worker(side: str) -> None:
    """Answer `{"row": name}` lines on stdin with `{"s": seconds}` or `{"error": why}`;
    the first line out lists the rows."""
    import random

    import uvloop

    random.seed(0)  # the same inputs on both sides
    # LangGraph warns on every run without a checkpointer that `durability` does nothing.
    warnings.filterwarnings("ignore", message="`durability` has no effect")
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever the graphs print stays off the protocol
    suite = load_suite(side)
    table = rows(suite)
    loop = uvloop.new_event_loop()
    reply(out, {"rows": list(table)})
    for line in sys.stdin:
        request = json.loads(line)
        is_async, function, args = table[request["row"]]
        broken = next((a for a in args if isinstance(a, Broken)), None)
        if broken is not None:
            reply(out, {"error": broken.error})
            continue
        calls = range(request["loops"])
        gc.collect()
        try:
            start = time.perf_counter()
            for _ in calls:
                if is_async:
                    loop.run_until_complete(function(*args))
                else:
                    function(*args)
            reply(out, {"s": (time.perf_counter() - start) / len(calls)})
        except Exception as error:
            traceback.print_exc()
            reply(out, {"error": f"{type(error).__name__}: {error}".splitlines()[0]})


def reply(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


# The parent: both workers, one run each in turn.


class Worker:
    def __init__(self, side: str) -> None:
        self.side = side
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", side],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        first = self.read()
        self.rows: list[str] = first["rows"]

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.side} worker exited (its traceback is above)")
        return json.loads(line)  # type: ignore[no-any-return]

    def run(self, row: str, loops: int = 1) -> float | str:
        """Seconds a call of `loops` back-to-back calls took on average, or why the row
        cannot run on this side."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"row": row, "loops": loops}) + "\n")
        self.process.stdin.flush()
        answer = self.read()
        return answer["s"] if "s" in answer else answer["error"]  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def measure(workers: list[Worker], row: str, repeat: int, value_s: float) -> list[float | str]:
    """Each side's median in ms (or its error): a warm-up call each, then the timed
    values in turn, the side that goes first alternating. A value is as many calls as
    the warm-up says fill `value_s` (one at least)."""
    times: list[list[float]] = [[] for _ in workers]
    errors: list[str | None] = [None for _ in workers]
    loops = [1 for _ in workers]
    for i in range(repeat + 1):
        order = list(enumerate(workers))
        for index, w in order if i % 2 else reversed(order):
            if errors[index] is not None:
                continue
            result = w.run(row, loops[index])
            if isinstance(result, str):
                errors[index] = result
            elif i:
                times[index].append(result * 1000)
            else:
                loops[index] = max(1, math.ceil(value_s / result))
    return [
        e if e is not None else statistics.median(t) for e, t in zip(errors, times, strict=True)
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per side and row")
    parser.add_argument("--only", default="", help="rows whose name this regex searches")
    parser.add_argument(
        "--single", action="store_true", help="one call per timed value, not pyperf's loops"
    )
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    extract()
    workers = [Worker(side) for side in SIDES]
    chosen = [row for row in workers[0].rows if re.search(args.only, row)]
    value_s = 0.0 if args.single else VALUE_S
    per_value = "one call" if args.single else f"calls filling {VALUE_S} s"
    print(
        f"LangGraph {ARCHIVE.version} bench suite, median of {args.repeat} values "
        f"of {per_value} (ms per call)"
    )
    print(f"| workload | LangGraph ms | ours ms | ratio | <= {GOAL} |")
    print("|---|---:|---:|---:|---|")
    misses = 0
    try:
        for row in chosen:
            theirs, ours = measure(workers, row, args.repeat, value_s)
            if isinstance(theirs, float) and isinstance(ours, float):
                ratio = ours / theirs
                verdict = "PASS" if ratio <= GOAL else "MISS"
                print(f"| {row} | {theirs:.2f} | {ours:.2f} | {ratio:.2f} | {verdict} |")
            else:
                verdict = "MISS"
                shown = [v if isinstance(v, str) else f"{v:.2f}" for v in (theirs, ours)]
                print(f"| {row} | {shown[0]} | {shown[1]} | - | {verdict} |")
            misses += verdict == "MISS"
            sys.stdout.flush()
    finally:
        for w in workers:
            w.close()
    print(f"{len(chosen) - misses} of {len(chosen)} rows at most {GOAL}x LangGraph's time")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
