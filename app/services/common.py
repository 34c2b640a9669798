"""Helpers every service uses: ids, clocks, parsing ids from paths, JSON filters in SQL."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import convert_to_messages
from sqlalchemy import BindParameter, ColumnElement, Select, TextClause, bindparam, cast, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import JSONB

from app.db.models import AssistantRow
from app.errors import Conflict, Invalid, NotFound, TooLarge
from app.graphs import GraphRegistry, configurable_of, run_context
from app.jsonable import to_json
from app.limits import canonical_uuid
from app.schemas.crons import CronRunFields
from app.schemas.runs import RunCommand, RunCreate
from engine import (
    START,
    Command,
    CompiledGraph,
    CompiledStateGraph,
    InvalidUpdateError,
    Send,
    StateSnapshot,
)
from engine.checkpoint.ids import new_uuid7
from engine.graph.message import add_messages
from engine.graph.schema import ROOT


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """Time-ordered (UUIDv7), so ids sort in creation order."""
    return str(new_uuid7())


def parse_uuid(value: str, what: str) -> str:
    """The canonical form of a UUID given by a client, or a 422 naming the field."""
    try:
        return canonical_uuid(value)
    except (ValueError, AttributeError, TypeError):
        raise Invalid(f"{what} must be a UUID, got {value!r}.") from None


def served_graph(graphs: GraphRegistry, graph_id: str) -> CompiledGraph:
    """The compiled graph of `graph_id`, or a 404 naming the graphs served here."""
    graph = graphs.get(graph_id)
    if graph is None:
        raise NotFound(f"Graph '{graph_id}' is not served here (graphs: {sorted(graphs.graphs)}).")
    return graph


def _are_pairs(update: list[Any]) -> bool:
    """Whether a command's list `update` is `[key, value]` pairs."""
    return all(
        isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) for pair in update
    )


def command_of(command: dict[str, Any]) -> Command:
    """The engine's Command for a client's (`RunCommand` as JSON): `goto` names nodes, or
    sends them input (`{"node", "input"}`); an `update` of `[key, value]` pairs is the
    engine's (key, value) tuples, as LangGraph's server reads it."""
    goto = command.get("goto")
    if isinstance(goto, dict):
        goto = Send(goto["node"], goto.get("input"))
    elif isinstance(goto, list):
        goto = [Send(g["node"], g.get("input")) if isinstance(g, dict) else g for g in goto]
    update = command.get("update")
    if isinstance(update, list) and _are_pairs(update):
        update = [tuple(pair) for pair in update]
    return Command(resume=command.get("resume"), update=update, goto=goto or ())


def known_nodes(graph: CompiledGraph, names: list[str], field: str) -> None:
    """422 naming `field` when it names nodes the graph does not have."""
    unknown = [n for n in names if n not in graph.nodes]
    if unknown:
        raise Invalid(f"{field} names unknown nodes {unknown}; nodes: {list(graph.nodes)}.")


def known_keys(graph: CompiledGraph, values: Any, field: str) -> None:
    """422 naming `field` when `values`, an update of a graph's state, names keys the
    state does not have (LangGraph ignores them: a typo's update would change nothing)."""
    keys = graph.state_key_set
    if not isinstance(graph, CompiledStateGraph) or ROOT in keys or not isinstance(values, dict):
        return
    unknown = [key for key in values if key not in keys]
    if unknown:
        raise Invalid(
            f"{field}: the state has no keys {unknown}; its keys: {list(graph.state_keys)}."
        )


def _folds_messages(reducer: Any) -> bool:
    while isinstance(reducer, functools.partial):
        reducer = reducer.func
    return reducer is add_messages


def check_values(graph: CompiledGraph, values: Any, field: str) -> None:
    """422 naming `field` unless `values`, written to the graph's state as a node's
    return, holds keys the state has (`known_keys`) and messages where the state folds
    messages (`check_message_values`)."""
    known_keys(graph, values, field)
    check_message_values(graph, values, field)


def check_message_values(graph: CompiledGraph, values: Any, field: str) -> None:
    """422 naming the key when a value for a key `add_messages` folds is not messages
    LangChain can make: written as it is (to the graph's input, folded only when the next
    run starts), it would fail every later read of the thread's state."""
    if not isinstance(values, dict):
        return
    channels = graph.channels
    for key, value in values.items():
        if not _folds_messages(getattr(channels.get(key), "reducer", None)):
            continue
        try:
            convert_to_messages(value if isinstance(value, list) else [value])
        except (*MESSAGE_ERRORS, AttributeError) as exc:
            raise Invalid(f"{field}.{key}: not messages: {error_message(exc)}") from None


def check_command(graph: CompiledGraph, command: RunCommand | None, field: str) -> None:
    """422 naming `field` unless the command's `update` is one the graph's state takes (an
    object, or `[key, value]` pairs, of keys the state has) and its `goto` goes to the
    graph's nodes."""
    if command is None:
        return
    update = command.update
    if isinstance(update, list):
        if not _are_pairs(update):
            raise Invalid(f"{field}.update: a list must be [key, value] pairs.")
        update = dict(update)
    known_keys(graph, update, f"{field}.update")
    check_goto(graph, command, f"{field}.goto")


def check_goto(graph: CompiledGraph, command: RunCommand | None, field: str) -> None:
    """422 naming `field` unless every node a client's command goes to is the graph's, and
    each it sends to is sent an `input` (null too, but given: the node's state)."""
    goto = command.goto if command is not None else None
    targets = goto if isinstance(goto, list) else [] if goto is None else [goto]
    names = [t if isinstance(t, str) else t.node for t in targets]
    if START in names:
        # The engine would drop it (LangGraph warns): the run would change nothing.
        raise Invalid(f"{field}.goto: {START} takes a run's input; go to one of the nodes.")
    known_nodes(graph, names, field)
    for target in targets:
        if not isinstance(target, str) and "input" not in target.model_fields_set:
            raise Invalid(f"{field}: sending to {target.node!r} needs its `input`.")


def check_run_body(graph: CompiledGraph, body: RunCreate) -> None:
    """422 unless every node the run names (to stop before or after, to go to) is one of
    the graph's, and its input is one the graph takes: any JSON for an `@entrypoint` (a
    string, say), an object of its state's keys for a `StateGraph`, whose run would
    otherwise fail on its first step."""
    for field in ("interrupt_before", "interrupt_after"):
        names = getattr(body, field)
        if isinstance(names, list):
            known_nodes(graph, names, field)
    check_command(graph, body.command, "command")
    if graph.builder is not None and not isinstance(body.input, dict | None):
        raise Invalid(
            "input: the graph's state takes an object of its keys, "
            f"not {type(body.input).__name__} {to_json(body.input)[:60]}."
        )


def check_context(
    graph: CompiledGraph, assistant: AssistantRow, body: RunCreate | CronRunFields
) -> None:
    """422 unless the context a run would get (its assistant's, then its own: each its
    `context`, else its configurable's context keys) fits the graph's context schema."""
    run_context(
        graph,
        (assistant.context, configurable_of(assistant.config)),
        (body.context, body.config and body.config.configurable),
    )


def ordered(query: Select[Any], direction: str, *columns: Any) -> Select[Any]:
    """`query` sorted by `columns`, all in one direction; the last should be unique, so
    that pages of a search never overlap nor skip rows."""
    return query.order_by(*(c.asc() if direction == "asc" else c.desc() for c in columns))


def json_contains(
    dialect: str, column: ColumnElement[Any], subset: dict[str, Any]
) -> ColumnElement[bool] | TextClause:
    """SQL for "the JSON in `column` contains `subset`", with PostgreSQL's `@>` meaning
    (objects match key by key, arrays contain every given element) on both dialects, so
    filters run in the database, never by loading rows."""
    if dialect == "postgresql":
        return cast(column, JSONB).contains(subset)
    return SqliteContains(column).where(subset)


class SqliteContains:
    """`@>` for SQLite, written as SQL text with every key, path and value a bound
    parameter: objects are followed by JSON paths, arrays (and keys a path cannot name) by
    `json_each` subqueries. Text, not SQLAlchemy constructs: building and compiling those
    for a large filter held the event loop for a tenth of a second, this takes a few
    milliseconds; the database does the rest on its own, without the interpreter."""

    def __init__(self, column: ColumnElement[Any]) -> None:
        self.column = str(column.compile(dialect=_SQLITE))
        self.params: list[BindParameter[Any]] = []
        self.subqueries = 0

    def where(self, subset: dict[str, Any]) -> TextClause:
        return text(self._contains(self.column, "$", subset)).bindparams(*self.params)

    def _bind(self, value: Any) -> str:
        name = f"contains_{len(self.params)}"
        self.params.append(bindparam(name, value, unique=True))
        return f":{name}"

    def _contains(self, doc: str, path: str, value: Any) -> str:
        """True when the JSON text `doc`, at `path`, contains `value`."""
        kind = f"json_type({doc}, {self._bind(path)})"
        if isinstance(value, dict):
            terms = [f"{kind} = 'object'"]
            for key, item in value.items():
                if _PATH_KEY.fullmatch(key):
                    terms.append(self._contains(doc, f'{path}."{key}"', item))
                else:
                    terms.append(self._member(doc, path, item, key))
        elif isinstance(value, list):
            terms = [f"{kind} = 'array'", *(self._member(doc, path, item) for item in value)]
        else:
            return self._scalar(kind, lambda: f"json_extract({doc}, {self._bind(path)})", value)
        return " AND ".join(terms)

    def _member(self, doc: str, path: str, value: Any, key: str | None = None) -> str:
        """True when a member of the container at `path` (the one named `key`, if given)
        contains `value`."""
        self.subqueries += 1
        each = f"each_{self.subqueries}"
        named = f"{each}.key = {self._bind(key)} AND " if key is not None else ""
        return (
            f"EXISTS (SELECT 1 FROM json_each({doc}, {self._bind(path)}) AS {each} "
            f"WHERE {named}{self._element(each, value)})"
        )

    def _element(self, each: str, value: Any) -> str:
        """True when the `json_each` row `each` holds a value that contains `value`."""
        if isinstance(value, dict | list):
            # As JSON text: json_each gives a string element as the bare string.
            return self._contains(f"json_quote({each}.value)", "$", value)
        return self._scalar(f"{each}.type", lambda: f"{each}.value", value)

    def _scalar(self, kind: str, extracted: Callable[[], str], value: Any) -> str:
        """True when the JSON type `kind` and the SQL value `extracted` (only called
        when needed: it may bind a parameter) are `value`'s."""
        if value is None or isinstance(value, bool):
            return f"{kind} = '{json.dumps(value)}'"
        if isinstance(value, int | float):
            return f"{kind} IN ('integer', 'real') AND {extracted()} = {self._bind(value)}"
        return f"{kind} = 'text' AND {extracted()} = {self._bind(value)}"


_SQLITE = sqlite.dialect()
# Keys a JSON path names: SQLite compares a path's key with the key as the stored JSON
# spells it, so one that JSON escapes (a quote, a backslash, a control or non-ASCII
# character) is found by its value in `json_each` instead.
_PATH_KEY = re.compile(r"[ !#-\[\]-~]+")


MESSAGE_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError)
"""What LangChain raises for a value it cannot make a message of: a client's mistake."""


def error_message(exc: BaseException) -> str:
    """What went wrong, in words: a KeyError's text (LangChain's message coercion raises
    one for a missing field) is only the key."""
    return f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)


def check_messages(value: Any, limit: int, where: str) -> None:
    """413 when `value`'s `messages` list holds more than `limit` (0: no limit) messages:
    one request must not grow a thread without bound."""
    messages = value.get("messages") if isinstance(value, dict) else None
    if limit and isinstance(messages, list) and len(messages) > limit:
        raise TooLarge(
            f"{where}.messages has {len(messages)} messages; at most {limit} per request."
        )


async def snapshot_of(
    graph: CompiledGraph, config: dict[str, Any], *, subgraphs: bool = False
) -> StateSnapshot:
    """The state at the version `config` names. A 409 when the writes saved for its step
    cannot be applied together (two tasks of a step wrote a key that takes one value, and
    the run failed there): every read of that version fails alike, as in LangGraph, whose
    server answers 400; the thread's history and older versions stay readable."""
    try:
        return await graph.aget_state(config, subgraphs=subgraphs)
    except InvalidUpdateError as exc:
        thread = config["configurable"]["thread_id"]
        raise Conflict(
            f"The state of thread '{thread}' cannot be read: {error_message(exc)} Run from an "
            "older version (checkpoint_id) to go on."
        ) from None
