"""Differential harness: run one graph definition on LangGraph and on our engine.

A *case* is a function ``case(ns) -> observation``. ``ns`` is a namespace holding the
public API of one implementation under the same attribute names (``ns.StateGraph``,
``ns.Command``, ``ns.InMemoryStore`` ...); messages, chat models and Runnables are
LangChain's on both sides. The case builds its graphs through ``ns`` only and returns a
JSON-like observation; the test runs it once per implementation and the two
observations, normalised by :func:`normalize`, must be equal.

Normalisation makes observations comparable across implementations:

* uuid-like strings (checkpoint ids, task ids, namespaces such as ``node:<task id>``)
  and interrupt ids become placeholders ``<id0>``, ``<id1>`` ... numbered by first
  appearance in a deterministic walk (dict keys sorted, lists in order);
* messages become their class name and ``model_dump()``;
* ``Interrupt`` objects become ``{"value", "id"}``; ``Send`` and ``Command`` become dicts;
* ``StateSnapshot`` and ``PregelTask`` become dicts of their observable fields;
* exceptions become ``{"error": <class name>, "has_message": bool}``;
* tuples become lists, timestamps are dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import functools
import importlib
import inspect
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest
from langchain_core.messages import BaseMessage

NS = SimpleNamespace
Obs = Any
CaseFn = Callable[[NS], Obs]

# Each public name by the LangGraph module users import it from. Our engine offers every
# public LangGraph module as a twin under the same path, with "engine" for "langgraph".
API_MODULES: dict[str, tuple[str, ...]] = {
    "langgraph.graph": (
        "StateGraph",
        "START",
        "END",
        "add_messages",
        "MessagesState",
        "MessageGraph",
    ),
    "langgraph.graph.message": ("REMOVE_ALL_MESSAGES", "_messages_delta_reducer", "push_message"),
    "langgraph.graph.ui": ("push_ui_message", "delete_ui_message", "ui_message_reducer"),
    "langgraph.channels.delta": ("DeltaChannel",),
    "langgraph.channels": (
        "EphemeralValue",
        "Topic",
        "UntrackedValue",
        "AnyValue",
        "LastValue",
        "LastValueAfterFinish",
        "NamedBarrierValueAfterFinish",
        "BaseChannel",
        "BinaryOperatorAggregate",
    ),
    "langgraph.types": (
        "Send",
        "Command",
        "Overwrite",
        "interrupt",
        "RetryPolicy",
        "CachePolicy",
        "StreamWriter",
        "StateUpdate",
        "Interrupt",
        "TimeoutPolicy",
        "TracePolicy",
        "omit_payload",
    ),
    "langgraph.pregel": ("Pregel", "NodeBuilder"),
    "langgraph.checkpoint.memory": ("InMemorySaver",),
    "langgraph.checkpoint.serde.jsonplus": ("JsonPlusSerializer",),
    "langgraph.config": ("get_stream_writer", "get_store", "get_config"),
    "langgraph.runtime": ("Runtime", "get_runtime"),
    "langgraph.managed": ("RemainingSteps", "IsLastStep"),
    "langgraph.store.base": ("BaseStore", "NOT_PROVIDED", "NotProvided", "Item"),
    "langgraph.store.memory": ("InMemoryStore",),
    "langgraph.cache.memory": ("InMemoryCache",),
    "langgraph.errors": (
        "InvalidUpdateError",
        "GraphRecursionError",
        "GraphInterrupt",
        "EmptyChannelError",
        "NodeTimeoutError",
        "NodeError",
        "NodeInterrupt",
        "ParentCommand",
    ),
    "langgraph.func": ("entrypoint", "task"),
    "langgraph.prebuilt": ("ToolNode", "create_react_agent"),
    "langgraph.callbacks": ("GraphCallbackHandler",),
    "langgraph.warnings": ("LangGraphDeprecationWarning",),
}


# --------------------------------------------------------------------------- namespaces


class MissingName:
    """Stands in for a name our engine does not export yet: any use of it fails."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AttributeError(f"engine does not export {self._name!r}")

    def __getattr__(self, attr: str) -> Any:
        raise AttributeError(f"engine does not export {self._name!r}")


def _names(package: str) -> dict[str, Any]:
    """Every name of ``API_MODULES``, from its module under ``package``; a module or
    name that is missing becomes a ``MissingName``."""
    values: dict[str, Any] = {}
    for module_name, names in API_MODULES.items():
        try:
            module = importlib.import_module(package + module_name.removeprefix("langgraph"))
        except ImportError:
            module = None
        for name in names:
            values[name] = getattr(module, name, None) or MissingName(name)
    return values


def langgraph_ns() -> NS:
    """The oracle: LangGraph's public API, collected from its documented modules."""
    return NS(label="langgraph", **_names("langgraph"))


def engine_ns() -> NS:
    """Our implementation: the same names, from the twin modules of the ``engine`` package."""
    from engine.checkpoint.memory import InMemorySaver

    values = _names("engine")
    # Every case also checks that the loop never changes a checkpoint it already saved.
    values["InMemorySaver"] = functools.partial(InMemorySaver, check_immutable=True)
    return NS(label="engine", **values)


# --------------------------------------------------------------------------- running


def run_sync_or_async(make: Callable[[], Any], factory: Callable[[], Any], aio: bool) -> Any:
    """Call ``make()`` (sync) or run the coroutine ``factory()`` to completion (async)."""
    if aio:
        return asyncio.run(factory())
    return make()


def error_obs(exc: BaseException) -> dict[str, Any]:
    return {"error": type(exc).__name__, "has_message": bool(str(exc).strip())}


def invoke(
    graph: Any,
    inp: Any,
    config: Mapping[str, Any] | None = None,
    *,
    aio: bool = False,
    **kwargs: Any,
) -> Any:
    """``graph.invoke`` / ``graph.ainvoke``; an exception becomes an error observation."""
    try:
        out = run_sync_or_async(
            lambda: graph.invoke(inp, config, **kwargs),
            lambda: graph.ainvoke(inp, config, **kwargs),
            aio,
        )
    except Exception as exc:  # the error class is the observation
        return error_obs(exc)
    return _interrupts_in_order(out)


def update_next(
    graph: Any,
    config: Mapping[str, Any],
    values: Any,
    as_node: str | None,
    *,
    aio: bool,
    read: Mapping[str, Any] | None = None,
) -> Any:
    """``graph.update_state`` / ``aupdate_state``, then the thread's ``next`` (read with
    `read`, else `config`); an exception becomes an error observation."""
    try:
        run_sync_or_async(
            lambda: graph.update_state(config, values, as_node=as_node),
            lambda: graph.aupdate_state(config, values, as_node=as_node),
            aio,
        )
    except Exception as exc:  # the error is the observation
        return error_obs(exc)
    return graph.get_state(read or config).next


def _interrupts_in_order(out: Any) -> Any:
    """Sort a result's interrupts by value.

    Both engines list the interrupts of parallel tasks in the order the tasks finished,
    which threads make a race (CI once saw LangGraph's two askers in the other order).
    """
    if isinstance(out, dict) and len(out.get("__interrupt__", ())) > 1:
        ordered = sorted(out["__interrupt__"], key=lambda i: repr(i.value))
        return {**out, "__interrupt__": ordered}
    return out


def raw_stream(
    graph: Any, inp: Any, config: Mapping[str, Any] | None, aio: bool, **kwargs: Any
) -> tuple[list[Any], BaseException | None]:
    """Collect every part of ``graph.stream`` / ``graph.astream`` and the error, if any."""
    parts: list[Any] = []

    def sync() -> None:
        for part in graph.stream(inp, config, **kwargs):
            parts.append(part)

    async def asynchronous() -> None:
        async for part in graph.astream(inp, config, **kwargs):
            parts.append(part)

    try:
        run_sync_or_async(sync, asynchronous, aio)
    except Exception as exc:  # the error class is the observation
        return parts, exc
    return parts, None


def _part_key(mode: str, chunk: Any) -> str:
    """Which task a stream part belongs to (used to order parts of one step)."""
    if mode == "updates" and isinstance(chunk, Mapping):
        return ",".join(sorted(str(k) for k in chunk))
    if mode == "tasks" and isinstance(chunk, Mapping):
        return str(chunk.get("name"))
    if mode == "debug" and isinstance(chunk, Mapping):
        payload = chunk.get("payload")
        if isinstance(payload, Mapping) and "name" in payload:
            return str(payload["name"])
        return "~" + str(chunk.get("type"))
    if mode == "messages" and isinstance(chunk, (tuple, list)) and len(chunk) == 2:
        meta = chunk[1]
        if isinstance(meta, Mapping):
            return str(meta.get("langgraph_node"))
    if mode == "custom" and isinstance(chunk, Mapping):
        return str(chunk.get("node", ""))
    return ""


def _is_delimiter(mode: str, chunk: Any) -> bool:
    """Parts that close a step: values, checkpoints and debug checkpoint parts."""
    if mode in ("values", "checkpoints"):
        return True
    return mode == "debug" and isinstance(chunk, Mapping) and chunk.get("type") == "checkpoint"


def _order_within_steps(
    parts: list[tuple[tuple[str, ...], str, Any]],
) -> list[tuple[tuple[str, ...], str, Any]]:
    """Stable-sort the parts between two step-closing parts by (namespace, task name).

    Parallel tasks of one step may finish in any order in LangGraph (sync nodes run in a
    thread pool), so their parts may interleave in any order; the parts one task emits
    keep their relative order, and so do the steps.
    """
    out: list[tuple[tuple[str, ...], str, Any]] = []
    segment: list[tuple[tuple[str, ...], str, Any]] = []

    def flush() -> None:
        segment.sort(key=lambda p: ("|".join(_ns_names(p[0])), _part_key(p[1], p[2])))
        out.extend(segment)
        segment.clear()

    for part in parts:
        if _is_delimiter(part[1], part[2]):
            flush()
            out.append(part)
        else:
            segment.append(part)
    flush()
    return out


def _ns_names(ns: tuple[str, ...]) -> list[str]:
    return [str(seg).split(":", 1)[0] for seg in ns]


def stream(
    graph: Any,
    inp: Any,
    config: Mapping[str, Any] | None = None,
    *,
    stream_mode: str | list[str] | None = None,
    subgraphs: bool = False,
    aio: bool = False,
    unordered: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Stream a run and return ``{"parts": [...], "error": <class name or None>}``.

    Parts keep the shape the API yields (chunk; ``[mode, chunk]`` for a list of modes;
    ``[ns, ...]`` with subgraphs). With ``unordered=True`` the parts of one step are put
    in a canonical order (see :func:`_order_within_steps`); "values" parts delimit steps,
    so "values" is streamed too and dropped again if it was not asked for.
    """
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode or [])
    if unordered and not modes:
        modes = ["updates"]
    extra = unordered and "values" not in modes
    # Pass stream_mode exactly as given (a string, a list or nothing) unless "values"
    # has to be added: each form has its own output shape, and both are under test.
    call_mode: str | list[str] | None = modes + ["values"] if extra else stream_mode
    call_kwargs = dict(kwargs)
    if call_mode is not None:
        call_kwargs["stream_mode"] = call_mode
    if subgraphs:
        call_kwargs["subgraphs"] = True
    raw, exc = raw_stream(graph, inp, config, aio, **call_kwargs)
    as_list = isinstance(call_mode, list)
    parts: list[tuple[tuple[str, ...], str, Any]] = []
    for item in raw:
        ns: tuple[str, ...] = ()
        rest: tuple[Any, ...] = (item,)
        if subgraphs:
            ns, rest = tuple(item[0]), tuple(item[1:])
        elif as_list:
            rest = tuple(item)
        if as_list:
            mode, chunk = rest
        else:
            mode, chunk = str(call_mode or "updates"), rest[0]
        parts.append((ns, mode, chunk))
    if unordered:
        parts = _order_within_steps(parts)
    if extra:
        parts = [p for p in parts if p[1] != "values"]
    shaped: list[Any] = []
    for ns, mode, chunk in parts:
        body: list[Any] = [mode, chunk] if isinstance(stream_mode, list) else [chunk]
        if subgraphs:
            body = [list(ns), *body]
        shaped.append(body if len(body) > 1 else body[0])
    return {"parts": shaped, "error": type(exc).__name__ if exc else None}


# --------------------------------------------------------------------------- normalising

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
HEX32_RE = re.compile(r"\b[0-9a-f]{32}\b")
DROPPED_KEYS = frozenset({"timestamp", "created_at", "ts"})
ID_KEYS = frozenset({"checkpoint_id", "task_id", "parent_checkpoint_id"})
NS_KEYS = frozenset({"checkpoint_ns", "langgraph_checkpoint_ns"})


class Normalizer:
    """Turns an observation into plain JSON-like data with stable id placeholders."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def ident(self, value: Any) -> Any:
        if value is None or value == "":
            return value
        key = str(value)
        if key not in self.ids:
            self.ids[key] = f"<id{len(self.ids)}>"
        return self.ids[key]

    def namespace(self, value: Any) -> Any:
        """``parent:<task id>|child:<task id>`` -> ids replaced, node names kept."""
        if not isinstance(value, str) or not value:
            return value
        segments = []
        for seg in value.split("|"):
            name, sep, rest = seg.partition(":")
            segments.append(f"{name}:{self.ident(rest)}" if sep else name)
        return "|".join(segments)

    def text(self, value: str) -> str:
        value = UUID_RE.sub(lambda m: self.ident(m.group(0)), value)
        return HEX32_RE.sub(lambda m: self.ident(m.group(0)), value)

    def __call__(self, obj: Any) -> Any:  # one dispatch table
        if obj is None or isinstance(obj, (bool, int, float)):
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, BaseException):
            return error_obs(obj)
        kind = type(obj).__name__
        if kind == "Interrupt" and hasattr(obj, "value"):
            return self.interrupt({"value": obj.value, "id": getattr(obj, "id", None)})
        if kind == "Send" and hasattr(obj, "node") and hasattr(obj, "arg"):
            return {"send": obj.node, "arg": self(obj.arg)}
        if kind == "Command" and hasattr(obj, "goto"):
            return {
                "command": {
                    "update": self(obj.update),
                    "goto": self(obj.goto),
                    "resume": self(obj.resume),
                    "graph": obj.graph,
                }
            }
        if isinstance(obj, BaseMessage):
            return self.message(obj)
        if is_snapshot(obj):
            return self.snapshot(obj)
        if is_task(obj):
            return self.task(obj)
        if isinstance(obj, pydantic.BaseModel):
            return {"model": kind, "fields": self(obj.model_dump())}
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
            return {"dataclass": kind, "fields": self(fields)}
        if isinstance(obj, Mapping):
            return self.mapping(obj)
        if isinstance(obj, (list, tuple)):
            return [self(x) for x in obj]
        if isinstance(obj, (set, frozenset)):
            return sorted((self(x) for x in obj), key=canonical)
        return {"repr_of": kind}

    def mapping(self, obj: Mapping[Any, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted(obj, key=str):
            if key in DROPPED_KEYS:
                continue
            value = obj[key]
            if key in ID_KEYS and isinstance(value, str):
                out[str(key)] = self.ident(value)
            elif key in NS_KEYS:
                out[str(key)] = self.namespace(value)
            elif key == "id" and isinstance(value, str) and value:
                out[str(key)] = self.ident(value)
            elif key == "interrupts" and isinstance(value, (list, tuple)):
                out[str(key)] = [self.interrupt(i) for i in value]
            else:
                out[self.text(str(key))] = self(value)
        return out

    def interrupt(self, item: Any) -> Any:
        """An Interrupt, or its dict form in stream payloads -> ``{"value", "id"}``."""
        if isinstance(item, Mapping) and "value" in item:
            return {"value": self(item["value"]), "id": self.ident(item.get("id"))}
        return self(item)

    def message(self, msg: BaseMessage) -> dict[str, Any]:
        """A LangChain message: its class and every field."""
        return {"class": type(msg).__name__, **self.mapping(msg.model_dump())}

    def config_ref(self, config: Any) -> Any:
        if not config:
            return None
        conf = config.get("configurable", {})
        return {
            "checkpoint_id": self.ident(conf.get("checkpoint_id")),
            "checkpoint_ns": self.namespace(conf.get("checkpoint_ns", "")),
        }

    def metadata(self, meta: Mapping[str, Any] | None) -> dict[str, Any]:
        meta = meta or {}
        out = {
            "source": meta.get("source"),
            "step": meta.get("step"),
            "parents": {
                self.namespace(k): self.ident(v)
                for k, v in sorted((meta.get("parents") or {}).items())
            },
        }
        if meta.get("writes") is not None:
            out["writes"] = self(meta["writes"])
        return out

    def snapshot(self, snap: Any) -> dict[str, Any]:
        return {
            "config": self.config_ref(snap.config),
            "values": self(snap.values),
            "next": list(snap.next),
            "metadata": self.metadata(snap.metadata),
            "tasks": [self.task(t) for t in snap.tasks],
            "interrupts": [self(i) for i in getattr(snap, "interrupts", ())],
            "parent": self.config_ref(snap.parent_config),
        }

    def task(self, task: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.ident(task.id),
            "name": task.name,
            "path": self.path(task.path),
            # Its class, and what it is kept as (LangGraph's snapshots give the repr).
            "error": error_class(task.error),
            "error_kept_as": type(task.error).__name__,
            "interrupts": [self(i) for i in task.interrupts],
        }
        state = getattr(task, "state", None)
        if state is not None:
            out["state"] = self.snapshot(state) if is_snapshot(state) else self.config_ref(state)
        result = getattr(task, "result", None)
        if result is not None:
            out["result"] = self(result)
        return out

    def path(self, path: Any) -> Any:
        if isinstance(path, (list, tuple)):
            return [self.path(p) for p in path]
        if isinstance(path, str) and UUID_RE.fullmatch(path):
            return self.ident(path)
        return self(path)


def error_class(error: Any) -> str | None:
    """A task error's class name, whether stored as an exception or as its repr."""
    if error is None:
        return None
    if isinstance(error, BaseException):
        return type(error).__name__
    match = re.match(r"\s*([A-Za-z_][\w.]*)\s*\(", str(error))
    return match.group(1).rsplit(".", 1)[-1] if match else str(error)


def is_snapshot(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("values", "next", "config", "metadata", "tasks"))


def is_task(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("id", "name", "path", "error", "interrupts"))


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=repr)


def normalize(obj: Obs) -> Obs:
    return Normalizer()(obj)


def pretty(obj: Obs) -> str:
    return json.dumps(obj, sort_keys=True, indent=1, default=repr)


def diff(expected: Obs, actual: Obs) -> str:
    lines = difflib.unified_diff(
        pretty(expected).splitlines(),
        pretty(actual).splitlines(),
        fromfile="langgraph",
        tofile="engine",
        lineterm="",
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- registry

CASES: dict[str, CaseFn] = {}
ENGINE_BUGS: dict[str, str] = {}  # case name -> the engine bug it shows (strict xfail)
ON_SQL: set[str] = set()  # cases run again with the SQL saver (besides cases_persistence)
SELFCHECK = os.environ.get("CONFORMANCE_SELFCHECK") == "1"  # LangGraph on both sides


def case(
    fn: Callable[..., Obs] | None = None,
    *,
    aio: bool = False,
    engine_bug: str | None = None,
    sql: bool = False,
) -> Any:
    """Register ``fn(ns) -> observation`` under its name.

    With ``aio=True`` the function takes ``(ns, aio)`` and is registered twice: ``name``
    (sync ``invoke``/``stream``) and ``name[async]`` (``ainvoke``/``astream``).
    ``engine_bug`` says why our engine fails the case for now (it is expected to fail,
    strictly); ``sql=True`` runs it with the SQL saver too (test_sql_conformance).
    """

    def register(f: Callable[..., Obs]) -> Callable[..., Obs]:
        name = f.__name__.removeprefix("case_")
        variants = (
            {
                name: functools.partial(f, aio=False),
                f"{name}[async]": functools.partial(f, aio=True),
            }
            if aio
            else {name: f}
        )
        for variant, variant_fn in variants.items():
            if variant in CASES:
                raise ValueError(f"duplicate conformance case {variant!r}")
            CASES[variant] = variant_fn
            if engine_bug is not None:
                ENGINE_BUGS[variant] = engine_bug
            if sql:
                ON_SQL.add(variant)
        return f

    return register(fn) if fn is not None else register


def case_params(names: Iterable[str]) -> list[Any]:
    """The cases as pytest parameters, those that show an engine bug marked to fail."""
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=ENGINE_BUGS[name]))
        if name in ENGINE_BUGS and not SELFCHECK
        else name
        for name in names
    ]


def observe(fn: CaseFn, ns: NS) -> Obs:
    """Run one case on one implementation; an escaping exception is part of the result."""
    try:
        result = fn(ns)
    except Exception as exc:  # an uncaught error is an observation too
        return {"uncaught": error_obs(exc)}
    if inspect.iscoroutine(result):
        raise TypeError("cases are synchronous; use aio=True and the helpers for async")
    return normalize(result)


# --------------------------------------------------------------------------- small helpers


def thread(tid: str = "t1", **extra: Any) -> dict[str, Any]:
    """A config for one thread; extra keys go to ``configurable``."""
    return {"configurable": {"thread_id": tid, **extra}}


def history(graph: Any, config: Mapping[str, Any], **kwargs: Any) -> list[Any]:
    return list(graph.get_state_history(config, **kwargs))


def graph_shape(graph: Any) -> dict[str, Any]:
    """Nodes and edges of ``compiled.get_graph()``, as sorted sets."""
    drawn = graph.get_graph()
    nodes = sorted({str(n) for n in drawn.nodes})
    edges = sorted({(e.source, e.target, bool(e.conditional)) for e in drawn.edges})
    return {"nodes": nodes, "edges": [list(e) for e in edges]}


def bump(calls: dict[str, int], name: str) -> int:
    calls[name] = calls.get(name, 0) + 1
    return calls[name]
