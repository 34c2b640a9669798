"""The functional API: an entrypoint with its checkpointer and `previous`, tasks as
futures, interrupts and resumes that do not redo finished tasks, and its streams.

No ``from __future__ import annotations`` here (see cases_core).
"""

import asyncio
import contextlib
from typing import Any

import pydantic

from .cases_core import LogState
from .cases_persistence import timeline
from .harness import NS, bump, case, invoke, stream, thread


def workflow(ns: NS, calls: dict[str, int], **options: Any) -> Any:
    """double(x), a question, then double(the answer): two tasks around an interrupt."""

    @ns.task
    def double(x: int) -> int:
        bump(calls, f"double {x}")
        return 2 * x

    @ns.entrypoint(checkpointer=ns.InMemorySaver(), **options)
    def flow(x: int, *, previous: Any = None) -> Any:
        first = double(x).result()
        answer = ns.interrupt({"first": first})
        second = double(answer).result()
        return ns.entrypoint.final(value=[first, second, previous], save=second)

    return flow


@case
def case_entrypoint_interrupt_resume_and_previous(ns: NS) -> Any:
    calls: dict[str, int] = {}
    flow = workflow(ns, calls)
    config = thread()
    first = stream(flow, 3, config, stream_mode=["updates", "values"])
    resumed = stream(flow, ns.Command(resume=5), config, stream_mode=["updates", "values"])
    again = invoke(flow, 1, config)
    return {
        "first": first,
        "resumed": resumed,
        "again": again,
        "again_resumed": invoke(flow, ns.Command(resume=1), config),
        "calls": calls,
        "timeline": timeline(flow, config),
    }


@case(aio=True)
def case_async_tasks_run_together(ns: NS, aio: bool) -> Any:
    @ns.task
    async def add_one(x: int) -> int:
        return x + 1

    @ns.task
    def square(x: int) -> int:
        return x * x

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    async def together(xs: list[int]) -> list[int]:
        futures = [add_one(x) for x in xs]
        ones = [await f for f in futures]
        squares = [square(x) for x in ones]
        return [await s for s in squares]

    return {
        "invoke": invoke(together, [1, 2, 3], thread(), aio=True),
        "stream": stream(together, [4], thread("t2"), aio=True, stream_mode="updates"),
    }


@case
def case_task_retry_policy(ns: NS) -> Any:
    calls: dict[str, int] = {}

    @ns.task(retry_policy=ns.RetryPolicy(max_attempts=3, initial_interval=0.001))
    def flaky(x: int) -> int:
        if bump(calls, "flaky") < 3:
            raise ConnectionError("try again")
        return x

    @ns.entrypoint()
    def flow(x: int) -> int:
        return flaky(x).result() + 1

    return {"result": invoke(flow, 41), "calls": calls}


@case
def case_entrypoint_streams_custom_and_reads_the_store(ns: NS) -> Any:
    store = ns.InMemoryStore()
    store.put(("users",), "ann", {"name": "Ann"})

    @ns.entrypoint(store=store)
    def greet(user: str, *, writer: ns.StreamWriter, store: ns.BaseStore) -> str:
        writer({"looking up": user})
        return f"hello {store.get(('users',), user).value['name']}"

    # Parameters typed as something else are the function's own, as in LangGraph.
    @ns.entrypoint(store=store)
    def untyped(user: str, *, writer: Any, store: Any) -> str:
        return user

    return {
        "typed": stream(greet, "ann", stream_mode=["custom", "updates", "values"]),
        "untyped": stream(untyped, "ann"),
    }


@case
def case_entrypoint_errors(ns: NS) -> Any:
    @ns.entrypoint()
    def fails(x: int) -> int:
        raise ValueError("no")

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def needs_thread(x: int) -> int:
        return x

    return {"fails": invoke(fails, 1), "no_thread": invoke(needs_thread, 1)}


@case(aio=True)
def case_async_entrypoint_gathers_sync_tasks_across_an_interrupt(ns: NS, aio: bool) -> Any:
    """A sync task's future can be awaited and gathered; after the resume the finished
    calls' saved results are awaited the same way."""
    calls: dict[str, int] = {}

    @ns.task
    def double(x: int) -> int:
        bump(calls, f"double {x}")
        return 2 * x

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    async def flow(xs: list[int]) -> Any:
        doubled = await asyncio.gather(*(double(x) for x in xs))
        extra = ns.interrupt({"doubled": doubled})
        return [*doubled, await double(extra)]

    config = thread()
    return {
        "first": invoke(flow, [1, 2], config, aio=True),
        "resumed": invoke(flow, ns.Command(resume=5), config, aio=True),
        "calls": calls,
    }


@case
def case_sync_entrypoint_calls_an_async_task(ns: NS) -> Any:
    """Under `ainvoke` the async task runs on the run's event loop and the sync code takes
    its result."""

    @ns.task
    async def add(x: int) -> int:
        await asyncio.sleep(0)
        return x + 100

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def flow(x: int) -> int:
        return add(x).result()

    return {"ainvoke": invoke(flow, 1, thread(), aio=True)}


@case
def case_sync_task_waits_for_an_async_task(ns: NS) -> Any:
    """Under `ainvoke`/`astream` a sync task's code can wait for an async task it calls
    (`result()`): the call runs on the run's event loop, not on the worker thread's."""

    @ns.task
    async def add(x: int) -> int:
        await asyncio.sleep(0)
        return x + 1

    @ns.task
    def tenfold(x: int) -> int:
        return add(x).result() * 10

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    async def from_async(x: int) -> int:
        return await tenfold(x)

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def from_sync(x: int) -> int:
        return tenfold(x).result()

    return [
        {
            "ainvoke": invoke(graph, 1, thread(), aio=True),
            "astream": stream(graph, 2, thread("t2"), stream_mode="updates", aio=True),
        }
        for graph in (from_async, from_sync)
    ]


@case(aio=True, sql=True)
def case_task_calls_keep_their_own_answers(ns: NS, aio: bool) -> Any:
    """Each `@task` call asks its own questions: the same task called twice, each call
    interrupting, takes one answer each (a call whose result is saved takes no other
    call's answer); calls started together and a question of the entrypoint itself are
    answered in the order asked; an answer by interrupt id goes to the call that asked,
    and a task called inside a task keeps its answers too."""

    @ns.task
    def ask(text: str) -> str:
        return f"{text}={ns.interrupt(text)}"

    @ns.task
    def ask_twice(text: str) -> str:
        return ask(text).result() + "," + ask(text + "!").result()

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def in_turn(first: str) -> str:
        return ask(ask(first).result()).result()

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def together(texts: list[str]) -> list[str]:
        calls = [ask(text) for text in texts]
        return [call.result() for call in calls] + [ns.interrupt("last?")]

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def nested(text: str) -> list[str]:
        return [ask_twice(text).result(), ns.interrupt("done?")]

    def answer_by_id(out: Any) -> Any:
        return ns.Command(resume={i.id: f"#{i.value}" for i in out["__interrupt__"]})

    out: dict[str, Any] = {}
    for name, graph, first, answers in (
        ("in turn", in_turn, "a", ["b", "c"]),
        ("together", together, ["x", "y"], [None, None, "3"]),
        ("nested", nested, "n", ["p", "q", "r"]),
    ):
        config = thread(name)
        steps = [invoke(graph, first, config, aio=aio)]
        for answer in answers:
            resume = answer_by_id(steps[-1]) if answer is None else ns.Command(resume=answer)
            steps.append(invoke(graph, resume, config, aio=aio))
        out[name] = steps
    return out


@case
def case_task_names(ns: NS) -> Any:
    """A task's name in the updates stream: the one given, else its function's; a bound
    method, a partial (the function it wraps) and a callable object are tasks too."""
    import functools

    class Greeter:
        def greet(self, text: str) -> str:
            return text + "|greet"

        def __call__(self, text: str) -> str:
            return text + "|called"

    def tag(label: str, text: str) -> str:
        return f"{text}|{label}"

    greeter = Greeter()
    tasks = [
        ns.task(greeter.greet, name="custom_greet"),
        ns.task(greeter.greet),
        ns.task(functools.partial(tag, "plain")),
        ns.task(functools.partial(tag, "named"), name="named_tag"),
        ns.task(greeter, name="object"),
    ]

    @ns.entrypoint()
    def flow(text: str) -> str:
        for each in tasks:
            text = each(text).result()
        return text

    return stream(flow, "", stream_mode="updates")


@case
def case_entrypoint_json_schemas(ns: NS) -> Any:
    """An entrypoint's input and output JSON schemas follow its function's annotations
    (the first parameter's, the return's; `final[R, S]` gives R's), any value without."""

    @ns.entrypoint()
    def typed(numbers: list[int]) -> list[str]:
        return [str(n) for n in numbers]

    @ns.entrypoint()
    def saving(text: str, *, previous: Any) -> ns.entrypoint.final[str, int]:
        return ns.entrypoint.final(value=text, save=1)

    @ns.entrypoint()
    def untyped(value):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        return value

    @ns.entrypoint()
    def bare_final(value: int, *, previous: Any) -> ns.entrypoint.final:
        return ns.entrypoint.final(value=value, save=value)

    return [
        [graph.get_input_jsonschema(), graph.get_output_jsonschema()]
        for graph in (typed, saving, untyped, bare_final)
    ]


@case
def case_entrypoint_update_state_sets_previous(ns: NS) -> Any:
    """`update_state` without `as_node` on an entrypoint's thread, before its first call
    and between calls, stands for the entrypoint's own output: what the next call gets
    as `previous`, and the thread's value."""
    seen: list[Any] = []

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def remember(given: Any, *, previous: Any) -> Any:
        seen.append(previous)
        return {"previous": previous, "given": given}

    config = thread()
    remember.update_state(config, {"a": "-1"})
    first = invoke(remember, {"a": "1"}, config)
    remember.update_state(config, {"a": "2"})
    return {
        "first": first,
        "state": remember.get_state(config).values,
        "second": invoke(remember, {"a": "3"}, config),
        "seen": seen,
    }


@case(aio=True, sql=True)
def case_task_results_cached(ns: NS, aio: bool) -> Any:
    """`@task(cache_policy=...)` under an entrypoint with a cache: a call with the same
    arguments is answered from the cache (in later runs and other threads too; the
    updates stream says so), across interrupts; `clear_cache` forgets them."""
    calls: dict[str, int] = {}

    @ns.task(cache_policy=ns.CachePolicy())
    def double(x: int) -> int:
        bump(calls, f"double {x}")
        return 2 * x

    cache = ns.InMemoryCache()

    @ns.entrypoint(checkpointer=ns.InMemorySaver(), cache=cache)
    def flow(xs: list[int]) -> list[Any]:
        out: list[Any] = []
        for x in xs:
            out += [double(x).result(), ns.interrupt(f"after {x}?")]
        return out

    runs = {}
    for name in ("first", "second"):
        config = thread(name)
        steps = [stream(flow, [1, 1, 2], config, stream_mode="updates", aio=aio)]
        for answer in "xyz":
            steps.append(
                stream(flow, ns.Command(resume=answer), config, stream_mode="updates", aio=aio)
            )
        runs[name] = steps
    double.clear_cache(cache)
    runs["cleared"] = invoke(flow, [2], thread("third"), aio=aio)
    return {"runs": runs, "calls": calls}


class Order(pydantic.BaseModel):
    item: str
    note: str | None = None


@case(aio=True, sql=True)
def case_pydantic_values_through_tasks_across_an_interrupt(ns: NS, aio: bool) -> Any:
    """An entrypoint and its tasks annotated with a pydantic class: their values are
    saved and read back as that class; a call started before an interrupt and not
    waited for is saved when it ends, and not run again on resume."""
    calls: dict[str, int] = {}

    @ns.task
    def prepare(order: Order) -> Order:
        bump(calls, "prepare")
        return Order(item=order.item + " prepared")

    @ns.task
    def finish(order: Order) -> dict[str, Any]:
        return {"item": order.item, "note": order.note}

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def flow(order: Order) -> Any:
        started = prepare(order)
        note = ns.interrupt("note?")
        prepared = started.result()
        return finish(Order(item=prepared.item, note=note)).result()

    config = thread()
    return {
        "first": invoke(flow, Order(item="tea"), config, aio=aio),
        "resumed": invoke(flow, ns.Command(resume="hot"), config, aio=aio),
        "calls": calls,
    }


@case(aio=True)
def case_an_entrypoint_task_result_is_its_return(ns: NS, aio: bool) -> Any:
    """The `tasks` mode shows what the entrypoint returned, not what it saved for its
    next call (`entrypoint.final(save=...)`, or the value again)."""

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def total(n: int, *, previous: Any = None) -> Any:
        return ns.entrypoint.final(value={"total": n}, save=(previous or 0) + n)

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def plain(n: int) -> int:
        return n * 2

    cfg = thread()
    return [
        stream(graph, 5, cfg, stream_mode=["tasks", "updates"], aio=aio)
        for graph in (total, total, plain)
    ]


def _calls_flow(ns: NS, aio: bool) -> Any:
    """An entrypoint whose task calls finish, fail and ask; under `ainvoke` an async one
    whose first call is an async task's."""

    @ns.task
    def double(x: int, *, plus: int = 0) -> int:
        return 2 * x + plus

    @ns.task
    async def adouble(x: int, *, plus: int = 0) -> int:
        return 2 * x + plus

    @ns.task
    def boom(x: int) -> int:
        raise ValueError(f"no {x}")

    @ns.task
    def ask(x: int) -> Any:
        return ns.interrupt({"q": x})

    @ns.task
    def outer(x: int) -> int:
        return double(x).result() + 1

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def flow(x: int) -> int:
        a = double(x, plus=1).result()
        with contextlib.suppress(ValueError):
            boom(a).result()
        return outer(a).result() + ask(a).result()

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    async def aflow(x: int) -> int:
        a = await adouble(x, plus=1)
        with contextlib.suppress(ValueError):
            await boom(a)
        return await outer(a) + await ask(a)

    return aflow if aio else flow


@case(aio=True)
def case_task_calls_are_tasks_of_the_tasks_and_debug_streams(ns: NS, aio: bool) -> Any:
    """Each `@task` call shows in the `tasks` and `debug` streams as a task: its start
    (input `(args, kwargs)`, its caller's metadata) and its result (`__return__`) or
    error. A call that asks shows no result (its caller's shows the question); on
    resume a call whose result was saved shows its start only."""

    out: dict[str, Any] = {}
    # (The run's metadata only where no `debug` checkpoint parts show it: LangGraph's
    # leave it out of a new checkpoint's, a difference of its own.)
    tagged = {**thread(), "metadata": {"user": 1}, "tags": ["t"]}
    for mode, run in ((["tasks", "updates"], tagged), ("debug", thread())):
        flow = _calls_flow(ns, aio)
        out[str(mode)] = [
            stream(flow, 3, run, stream_mode=mode, aio=aio),
            stream(flow, ns.Command(resume=10), run, stream_mode=mode, aio=aio),
        ]

    @ns.task
    def halve(x: int) -> int:
        return x // 2

    def halving(state: Any) -> dict[str, Any]:
        return {"log": [str(halve(len(state["log"]) + 4).result())]}

    graph = ns.StateGraph(LogState).add_node("n", halving).add_edge(ns.START, "n").compile()
    parent = ns.StateGraph(LogState).add_node("p", graph).add_edge(ns.START, "p").compile()
    out["subgraph"] = stream(parent, {"log": []}, stream_mode="tasks", subgraphs=True, aio=aio)
    return out


@case(aio=True)
def case_custom_parts_of_task_calls_carry_the_callers_namespace(ns: NS, aio: bool) -> Any:
    """With subgraphs, what a `@task` call writes to the custom stream comes under its
    caller's namespace (the entrypoint's or node's task, then the enclosing calls);
    without, it is a part of the run like its caller's."""

    @ns.task
    def inner(x: int) -> int:
        ns.get_stream_writer()(f"inner {x}")
        return x

    @ns.task
    def outer(x: int, writer) -> int:  # the writer found by its name
        writer(f"outer writer {x}")
        ns.get_stream_writer()(f"outer {x}")
        return inner(x).result()

    @ns.entrypoint()
    def flow(x: int) -> int:
        ns.get_stream_writer()("body")
        return outer(x).result()

    def node(state: Any) -> dict[str, Any]:
        return {"log": [outer(len(state["log"])).result()]}

    graph = ns.StateGraph(LogState).add_node("n", node).add_edge(ns.START, "n").compile()
    parent = ns.StateGraph(LogState).add_node("p", graph).add_edge(ns.START, "p").compile()
    modes = ["custom", "updates"]
    return {
        "in a subgraph": stream(parent, {"log": []}, stream_mode=modes, subgraphs=True, aio=aio),
        "in a subgraph, no subgraphs": stream(parent, {"log": []}, stream_mode=modes, aio=aio),
        "entrypoint": stream(flow, 1, stream_mode=modes, subgraphs=True, aio=aio),
        "entrypoint, no subgraphs": stream(flow, 1, stream_mode=modes, aio=aio),
        "graph node": stream(graph, {"log": []}, stream_mode=modes, subgraphs=True, aio=aio),
    }


def _asking_subgraph(ns: NS, seen: list[Any]) -> Any:
    """A graph whose one node notes its namespace and asks about its first log entry."""

    def ask(state: Any) -> dict[str, Any]:
        seen.append(ns.get_config()["configurable"]["checkpoint_ns"])
        first = state["log"][0]
        return {"log": [f"{first}={ns.interrupt('q ' + first)}"]}

    return ns.StateGraph(LogState).add_node("ask", ask).add_edge(ns.START, "ask").compile()


def _answer_all(ns: NS, flow: Any, first: Any, config: dict[str, Any], aio: bool) -> list[Any]:
    """Stream the run with subgraphs, then answer every question it asks (each with its
    question in capitals) until it finishes. The parts of each run are sorted by their
    namespace's names and their content: parallel calls' parts come in any order."""
    command: Any = first
    runs = []
    for _ in range(6):
        run = stream(flow, command, config, stream_mode="updates", subgraphs=True, aio=aio)
        run["parts"].sort(key=lambda p: (_names_only(p[0]), repr(p[1])))
        runs.append(run)
        asked = flow.get_state(config).interrupts
        if not asked:
            break
        command = ns.Command(resume={i.id: i.value.upper() for i in asked})
    return runs


def _names_only(namespace: Any) -> Any:
    """A namespace (a string or its parts) without the task ids in it."""
    parts = namespace.split("|") if isinstance(namespace, str) else namespace
    return [part.split(":")[0] for part in parts]


@case(aio=True, sql=True)
def case_graphs_invoked_in_task_calls_run_in_the_calls_namespaces(ns: NS, aio: bool) -> Any:
    """A graph invoked inside a `@task` call runs under the call's namespace (the
    entrypoint's task, then the calls it is made in; a second graph in one call is
    numbered), as the call's config names it, or under the one the config it is invoked
    with names: two calls' graphs keep their own checkpoints, so each asks its own
    question, in sequence or in parallel."""
    seen: list[Any] = []
    sub = _asking_subgraph(ns, seen)

    @ns.task
    def run_sub(x: str) -> list[str]:
        seen.append(ns.get_config()["configurable"]["checkpoint_ns"])
        return sub.invoke({"log": [x]})["log"]

    @ns.task
    async def arun_sub(x: str) -> list[str]:
        seen.append(ns.get_config()["configurable"]["checkpoint_ns"])
        return (await sub.ainvoke({"log": [x]}))["log"]

    call = arun_sub if aio else run_sub

    @ns.task
    def twice(x: str) -> list[str]:
        return sub.invoke({"log": [x]})["log"] + sub.invoke({"log": [x + "2"]})["log"]

    @ns.task
    def given(x: str, cfg: dict[str, Any]) -> list[str]:
        # The entrypoint's config: the graph runs under the entrypoint's namespace.
        return sub.invoke({"log": [x]}, cfg)["log"]

    @ns.task
    def outer(x: str) -> list[str]:
        return call(x).result()

    @ns.task
    async def aouter(x: str) -> list[str]:
        return await call(x)

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def in_turn(xs: list[str]) -> Any:
        results = [call(x).result() for x in xs] + [twice("t").result()]
        results.append(given("g", ns.get_config()).result())
        return [*results, (aouter if aio else outer)("o").result()]

    @ns.entrypoint(checkpointer=ns.InMemorySaver())
    def together(xs: list[str]) -> Any:
        futures = [call(x) for x in xs]
        return [f.result() for f in futures]

    config = thread()
    runs = _answer_all(ns, in_turn, ["a", "b"], config, aio)
    saver = in_turn.checkpointer
    saved = {c.config["configurable"]["checkpoint_ns"] for c in saver.list(None)}
    # In the order the calls ran in: by names, then by the namespace a node first saw.
    first_seen = {n: next((i for i, s in enumerate(seen) if s.startswith(n)), -1) for n in saved}
    return {
        "in turn": runs,
        "seen": list(seen),
        "saved": sorted(saved, key=lambda n: (_names_only(n), first_seen[n])),
        "together": _answer_all(ns, together, ["a", "b"], thread("t2"), aio),
        "together state": together.get_state(thread("t2")).values,
    }


@case(aio=True, sql=True)
def case_entrypoint_shows_the_state_of_a_graph_it_invokes(ns: NS, aio: bool) -> Any:
    """An entrypoint invokes a graph that stops on a question: the entrypoint's task
    in get_state(subgraphs=True) carries that graph's snapshot, found in the code of the
    user's function (async too), as LangGraph finds it."""

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [ns.interrupt("sub?")]}

    builder = ns.StateGraph(LogState)
    builder.add_node("ask", ask)
    builder.add_edge(ns.START, "ask")
    inner = builder.compile()

    if aio:

        @ns.entrypoint(checkpointer=ns.InMemorySaver())
        async def flow(x: str, *, previous: Any = None) -> Any:
            return (await inner.ainvoke({"log": [x]}))["log"]

    else:

        @ns.entrypoint(checkpointer=ns.InMemorySaver())
        def flow(x: str, *, previous: Any = None) -> Any:
            return inner.invoke({"log": [x]})["log"]

    config = thread()
    first = invoke(flow, "a", config, aio=aio)
    state = flow.get_state(config, subgraphs=True)
    return {
        "first": first,
        "tasks": state.tasks,
        "resumed": invoke(flow, ns.Command(resume="b"), config, aio=aio),
    }


@case
def case_task_renamed_is_named_so(ns: NS) -> Any:
    """`@task(name=...)` names the task as given, its `__name__` too."""

    @ns.task(name="renamed")
    def step(x: int) -> int:
        return x + 1

    @ns.task
    def plain(x: int) -> int:
        return x

    @ns.entrypoint()
    def flow(x: int) -> int:
        return step(x).result() + plain(x).result()

    return {"names": [step.__name__, plain.__name__], "updates": list(flow.stream(1))}
