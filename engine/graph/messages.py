"""Chat message types and the ``add_messages`` reducer.

Threadline stores conversation state in the same JSON shape LangChain uses, so
checkpoints, API payloads and chat frontends stay interchangeable with the
LangGraph ecosystem.  The classes here are slotted dataclasses rather than
pydantic models because they sit on hot paths (every state update runs the
reducer over the whole history).
"""

import json
import uuid
from dataclasses import KW_ONLY, MISSING, dataclass, field, fields
from operator import attrgetter
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, TypedDict

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "BaseMessage",
    "HumanMessage",
    "MessageLike",
    "MessagesState",
    "RemoveMessage",
    "SystemMessage",
    "ToolMessage",
    "add_messages",
    "coerce_message",
    "convert_to_messages",
    "message_from_dict",
    "message_from_parsed",
    "message_to_dict",
    "message_to_stored_dict",
]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""Id for a ``RemoveMessage`` that wipes every message before it in an update."""

Content: TypeAlias = str | list[str | dict[str, Any]]

_LC_RUN_PREFIX = "lc_run-"
_LC_PREFIX = "lc_"


# --------------------------------------------------------------------------- #
# Message classes
# --------------------------------------------------------------------------- #


@dataclass(slots=True)
class BaseMessage:
    """Fields shared by every message; ``type`` is the JSON discriminator."""

    type: ClassVar[str] = "base"

    content: Content = ""
    _: KW_ONLY
    additional_kwargs: dict[str, Any] = field(default_factory=dict)
    response_metadata: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    id: str | None = None

    @property
    def text(self) -> str:
        """Plain text of the message; frontends may send a list of content blocks."""
        content = self.content
        if isinstance(content, str):
            return content
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """LangChain ``model_dump()`` shape; nested values are shared, not copied."""
        return _base_dict(self)


def _base_dict(m: BaseMessage) -> dict[str, Any]:
    """Common keys in LangChain's order (a helper: slotted classes can't use super())."""
    return {
        "content": m.content,
        "additional_kwargs": m.additional_kwargs,
        "response_metadata": m.response_metadata,
        "type": m.type,
        "name": m.name,
        "id": m.id,
    }


@dataclass(slots=True)
class HumanMessage(BaseMessage):
    """A message from the end user."""

    type: ClassVar[str] = "human"


@dataclass(slots=True)
class SystemMessage(BaseMessage):
    """Instructions that prime the model."""

    type: ClassVar[str] = "system"


@dataclass(slots=True, kw_only=True)
class AIMessage(BaseMessage):
    """A model reply, possibly requesting tool calls."""

    type: ClassVar[str] = "ai"

    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    invalid_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage_metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        """Normalise tool calls so every dict has LangChain's exact keys."""
        if (
            not self.tool_calls
            and not self.invalid_tool_calls
            and (raw := self.additional_kwargs.get("tool_calls"))
        ):
            # OpenAI-style raw calls kept in additional_kwargs (older providers).
            self.tool_calls, self.invalid_tool_calls = _parse_openai_tool_calls(raw)
        if self.tool_calls:
            self.tool_calls = _normalise_tool_calls(self.tool_calls)
        if self.invalid_tool_calls:
            self.invalid_tool_calls = _normalise_invalid_tool_calls(self.invalid_tool_calls)

    def to_dict(self) -> dict[str, Any]:
        """LangChain ``model_dump()`` shape; nested values are shared, not copied."""
        d = _base_dict(self)
        d["tool_calls"] = self.tool_calls
        d["invalid_tool_calls"] = self.invalid_tool_calls
        d["usage_metadata"] = self.usage_metadata
        return d


@dataclass(slots=True, kw_only=True)
class AIMessageChunk(AIMessage):
    """A streamed piece of an AI reply; ``+`` accumulates chunks into one."""

    type: ClassVar[str] = "AIMessageChunk"

    tool_call_chunks: list[dict[str, Any]] = field(default_factory=list)
    chunk_position: Literal["last"] | None = None

    def __post_init__(self) -> None:
        """Keep ``tool_calls`` and ``tool_call_chunks`` consistent with each other."""
        if (
            not self.tool_calls
            and not self.invalid_tool_calls
            and not self.tool_call_chunks
            and (raw := self.additional_kwargs.get("tool_calls"))
        ):
            self.tool_call_chunks = _openai_tool_call_chunks(raw)
        self.tool_calls = _normalise_tool_calls(self.tool_calls)
        self.invalid_tool_calls = _normalise_invalid_tool_calls(self.invalid_tool_calls)
        self.tool_call_chunks = _normalise_tool_call_chunks(self.tool_call_chunks)
        if self.tool_call_chunks:
            self.tool_calls, self.invalid_tool_calls = _tool_calls_from_chunks(
                self.tool_call_chunks
            )
        elif self.tool_calls or self.invalid_tool_calls:
            self.tool_call_chunks = [
                _tool_call_chunk(tc["name"], json.dumps(tc["args"]), tc["id"], None)
                for tc in self.tool_calls
            ] + [
                _tool_call_chunk(tc["name"], tc["args"], tc["id"], None)
                for tc in self.invalid_tool_calls
            ]

    def __add__(self, other: object) -> "AIMessageChunk":
        """Accumulate streamed chunks (one chunk or a list of chunks)."""
        if isinstance(other, AIMessageChunk):
            return _add_chunks(self, [other])
        if isinstance(other, (list, tuple)) and all(isinstance(o, AIMessageChunk) for o in other):
            return _add_chunks(self, list(other))
        return NotImplemented

    def to_message(self) -> AIMessage:
        """The finished ``AIMessage`` this stream adds up to."""
        return AIMessage(
            content=self.content,
            additional_kwargs=self.additional_kwargs,
            response_metadata=self.response_metadata,
            name=self.name,
            id=self.id,
            tool_calls=self.tool_calls,
            invalid_tool_calls=self.invalid_tool_calls,
            usage_metadata=self.usage_metadata,
        )

    def to_dict(self) -> dict[str, Any]:
        """LangChain ``model_dump()`` shape; nested values are shared, not copied."""
        d = _base_dict(self)
        d["tool_calls"] = self.tool_calls
        d["invalid_tool_calls"] = self.invalid_tool_calls
        d["usage_metadata"] = self.usage_metadata
        d["tool_call_chunks"] = self.tool_call_chunks
        d["chunk_position"] = self.chunk_position
        return d


_TOOL_STATUSES = frozenset({"success", "error"})


@dataclass(slots=True, kw_only=True)
class ToolMessage(BaseMessage):
    """The result of running a tool, tied to the AI tool call that asked for it."""

    type: ClassVar[str] = "tool"

    tool_call_id: str
    artifact: Any = None
    status: Literal["success", "error"] = "success"

    def __post_init__(self) -> None:
        """Coerce content and ids the way LangChain does, so tool output never breaks."""
        content: Any = self.content
        if isinstance(content, tuple):
            content = list(content)
        if isinstance(content, list):
            self.content = [x if isinstance(x, (str, dict)) else str(x) for x in content]
        elif not isinstance(content, str):
            self.content = str(content)
        if not isinstance(self.tool_call_id, str):
            if isinstance(self.tool_call_id, (uuid.UUID, int, float)):
                self.tool_call_id = str(self.tool_call_id)
            else:
                raise ValueError(
                    f"ToolMessage.tool_call_id must be a str, got {type(self.tool_call_id)!r}"
                )
        if self.status not in _TOOL_STATUSES:
            raise ValueError(
                f"ToolMessage.status must be 'success' or 'error', got {self.status!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """LangChain ``model_dump()`` shape; nested values are shared, not copied."""
        d = _base_dict(self)
        d["tool_call_id"] = self.tool_call_id
        d["artifact"] = self.artifact
        d["status"] = self.status
        return d


@dataclass(slots=True, init=False)
class RemoveMessage(BaseMessage):
    """A tombstone: in an update, deletes the state message with the same id."""

    type: ClassVar[str] = "remove"

    def __init__(
        self,
        id: str,
        *,
        content: Content = "",
        name: str | None = None,
        additional_kwargs: dict[str, Any] | None = None,
        response_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Only an id matters; content is always empty, as in LangChain."""
        if not isinstance(id, str):
            raise ValueError(f"RemoveMessage needs a str id, got {id!r}")
        if content:
            raise ValueError("RemoveMessage cannot have content; it only carries an id")
        self.content = ""
        self.id = id
        self.name = name
        self.additional_kwargs = {} if additional_kwargs is None else additional_kwargs
        self.response_metadata = {} if response_metadata is None else response_metadata


AnyMessage: TypeAlias = (
    HumanMessage | AIMessage | AIMessageChunk | SystemMessage | ToolMessage | RemoveMessage
)
"""Any concrete message; RemoveMessage is included because updates may carry it."""

MessageLike: TypeAlias = BaseMessage | str | dict[str, Any] | tuple[str, Any] | list[Any]
"""Anything ``coerce_message`` accepts."""


# --------------------------------------------------------------------------- #
# Tool-call helpers
# --------------------------------------------------------------------------- #


def _tool_call(name: Any, args: Any, id: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def _invalid_tool_call(name: Any, args: Any, id: Any, error: Any) -> dict[str, Any]:
    return {"type": "invalid_tool_call", "id": id, "name": name, "args": args, "error": error}


def _tool_call_chunk(name: Any, args: Any, id: Any, index: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "index": index, "type": "tool_call_chunk"}


_TOOL_CALL_KEYS = frozenset({"name", "args", "id", "type"})
_INVALID_TOOL_CALL_KEYS = frozenset({"name", "args", "id", "error", "type"})
_TOOL_CALL_CHUNK_KEYS = frozenset({"name", "args", "id", "index", "type"})


def _normalise_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add the ``type`` tag and drop stray keys; already-clean lists pass through as-is."""
    if all(
        isinstance(tc, dict) and tc.keys() == _TOOL_CALL_KEYS and tc["type"] == "tool_call"
        for tc in calls
    ):
        return calls
    out: list[dict[str, Any]] = []
    for tc in calls:
        if not isinstance(tc, dict) or "name" not in tc or "args" not in tc:
            raise ValueError(f"A tool call must be a dict with 'name' and 'args', got {tc!r}")
        out.append(_tool_call(tc["name"], tc["args"], tc.get("id")))
    return out


def _normalise_invalid_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every invalid tool call LangChain's five keys."""
    if all(
        isinstance(tc, dict)
        and tc.keys() == _INVALID_TOOL_CALL_KEYS
        and tc["type"] == "invalid_tool_call"
        for tc in calls
    ):
        return calls
    return [
        _invalid_tool_call(tc.get("name"), tc.get("args"), tc.get("id"), tc.get("error"))
        for tc in calls
    ]


def _normalise_tool_call_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every tool-call chunk LangChain's five keys."""
    if all(
        isinstance(c, dict) and c.keys() == _TOOL_CALL_CHUNK_KEYS and c["type"] == "tool_call_chunk"
        for c in chunks
    ):
        return chunks
    return [
        _tool_call_chunk(c.get("name"), c.get("args"), c.get("id"), c.get("index")) for c in chunks
    ]


def _parse_openai_tool_calls(
    raw: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split OpenAI ``{"function": {...}}`` calls into parsed and unparseable ones."""
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for tc in raw:
        if not isinstance(tc, dict) or "function" not in tc:
            continue
        fn = tc["function"]
        try:
            args = json.loads(fn["arguments"])
        except (json.JSONDecodeError, TypeError):
            invalid.append(
                _invalid_tool_call(fn.get("name"), fn.get("arguments"), tc.get("id"), None)
            )
        else:
            calls.append(_tool_call(fn.get("name") or "", args or {}, tc.get("id")))
    return calls, invalid


def _openai_tool_call_chunks(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Streamed OpenAI tool calls as tool-call chunks (args stay raw strings)."""
    out: list[dict[str, Any]] = []
    for tc in raw:
        fn = tc.get("function") or {}
        out.append(
            _tool_call_chunk(fn.get("name"), fn.get("arguments"), tc.get("id"), tc.get("index"))
        )
    return out


def _openai_to_tool_call(tc: dict[str, Any]) -> dict[str, Any]:
    """Accept both LangChain and OpenAI tool-call dicts in incoming message dicts."""
    if "function" not in tc:
        return tc
    fn = tc["function"]
    args = fn["arguments"]
    if isinstance(args, str):
        args = json.loads(args, strict=False)
    return _tool_call(fn["name"], args, tc["id"])


def _tool_calls_from_chunks(
    chunks: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Best-effort parse of streamed args so partial tool calls are visible mid-stream."""
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for c in chunks:
        raw = c["args"]
        try:
            args = _parse_partial_json(raw) if raw else {}
        except ValueError:
            args = None
        if isinstance(args, dict):
            calls.append(_tool_call(c["name"] or "", args, c["id"]))
        else:
            invalid.append(_invalid_tool_call(c["name"], raw, c["id"], None))
    return calls, invalid


def _parse_partial_json(text: str) -> Any:
    """Parse a possibly truncated JSON document by closing open strings and brackets.

    Tries the longest prefix first, so a value cut mid-token falls back to the last
    complete one. Raises ``ValueError`` if nothing parses or brackets are mismatched.
    """
    try:
        return json.loads(text, strict=False)
    except ValueError:
        pass
    # states[i] describes the scanner after reading text[:i]:
    # (inside a string, the string ends in a lone backslash, pending closers).
    states: list[tuple[bool, bool, str]] = [(False, False, "")]
    in_str = escaped = False
    closers = ""
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            closers += "}" if ch == "{" else "]"
        elif ch in "}]":
            if not closers or closers[-1] != ch:
                raise ValueError(f"Mismatched {ch!r} in partial JSON {text!r}")
            closers = closers[:-1]
        states.append((in_str, escaped, closers))
    end = len(text)
    while end > 0:
        s_in_str, s_escaped, s_closers = states[end]
        if s_escaped:
            end -= 1
            continue
        candidate = text[:end] + ('"' if s_in_str else "") + s_closers[::-1]
        try:
            return json.loads(candidate, strict=False)
        except json.JSONDecodeError as e:
            # Every longer prefix still holds the token the decoder rejected.
            end = min(end - 1, e.pos)
    raise ValueError(f"Could not parse {text!r} as (partial) JSON")


# --------------------------------------------------------------------------- #
# Chunk merging
# --------------------------------------------------------------------------- #


def _merge_dicts(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    """Merge streamed metadata: strings concatenate, numbers add, nested values recurse."""
    merged = dict(left)
    for key, rv in right.items():
        lv = merged.get(key)
        if key not in merged or (lv is None and rv is not None):
            merged[key] = rv
        elif rv is None:
            continue
        elif type(lv) is not type(rv):
            raise TypeError(
                f"Cannot merge key {key!r}: {type(lv).__name__} vs {type(rv).__name__}."
            )
        elif isinstance(lv, str):
            if (key == "index" and lv.startswith(_LC_PREFIX)) or (
                key in ("id", "output_version", "model_provider") and lv == rv
            ):
                continue
            merged[key] = lv + rv
        elif isinstance(lv, dict):
            merged[key] = _merge_dicts(lv, rv)
        elif isinstance(lv, list):
            merged[key] = _merge_lists(lv, rv)
        elif lv == rv:
            continue
        elif isinstance(lv, int) and not isinstance(lv, bool):
            # Identifiers and timestamps are replaced, counters are summed.
            merged[key] = rv if key in ("index", "created", "timestamp") else lv + rv
        else:
            raise TypeError(
                f"Cannot merge key {key!r}: conflicting values of type {type(lv).__name__}."
            )
    return merged


def _has_merge_index(item: Any) -> bool:
    if not isinstance(item, dict) or "index" not in item:
        return False
    idx = item["index"]
    return isinstance(idx, int) or (isinstance(idx, str) and idx.startswith(_LC_PREFIX))


def _merge_lists(left: list[Any], right: list[Any]) -> list[Any]:
    """Append items, except dicts sharing an ``index`` (stream pieces) merge together."""
    merged = list(left)
    for item in right:
        if _has_merge_index(item):
            rid = item.get("id")
            for i, prev in enumerate(merged):
                if (
                    isinstance(prev, dict)
                    and "index" in prev
                    and prev["index"] == item["index"]
                    and (prev.get("id") in (None, "") or rid in (None, "") or prev.get("id") == rid)
                ):
                    piece = {k: v for k, v in item.items() if k != "type"}
                    merged[i] = _merge_dicts(prev, piece)
                    break
            else:
                merged.append(item)
        else:
            merged.append(item)
    return merged


def _merge_content(left: Content, right: Content) -> Content:
    """Concatenate streamed content, merging indexed blocks."""
    if isinstance(left, str):
        if isinstance(right, str):
            return left + right
        return [left, *right]
    if isinstance(right, list):
        return _merge_lists(left, right)
    if left and isinstance(left[-1], str):
        return [*left[:-1], left[-1] + right]
    if right == "":
        return list(left)
    return [*left, right]


def _add_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Sum token counts, recursing into the ``*_token_details`` dicts."""
    if not left and not right:
        return {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    if not left or not right:
        return left or right  # type: ignore[return-value]
    out: dict[str, Any] = {}
    for key in left.keys() | right.keys():
        lv, rv = left.get(key, 0), right.get(key, 0)
        if isinstance(lv, int) and isinstance(rv, int):
            out[key] = lv + rv
        else:
            lv = left.get(key, {})
            rv = right.get(key, {})
            if not (isinstance(lv, dict) and isinstance(rv, dict)):
                raise ValueError(f"Cannot add usage values {lv!r} and {rv!r} for {key!r}")
            out[key] = _add_usage(lv, rv) if lv and rv else dict(lv or rv)
    return out


def _id_rank(msg_id: str) -> int:
    """Provider ids beat ``lc_run-`` ids, which beat other ``lc_`` ids."""
    if msg_id.startswith(_LC_RUN_PREFIX):
        return 1
    if msg_id.startswith(_LC_PREFIX):
        return 0
    return 2


def _add_chunks(first: AIMessageChunk, others: list[AIMessageChunk]) -> AIMessageChunk:
    """Fold chunks left to right into a new chunk; inputs are not modified."""
    content: Content = first.content if isinstance(first.content, str) else list(first.content)
    additional_kwargs = dict(first.additional_kwargs)
    response_metadata = dict(first.response_metadata)
    tool_chunks = first.tool_call_chunks
    has_usage = bool(first.usage_metadata)
    name = first.name
    for o in others:
        content = _merge_content(content, o.content)
        additional_kwargs = _merge_dicts(additional_kwargs, o.additional_kwargs)
        response_metadata = _merge_dicts(response_metadata, o.response_metadata)
        tool_chunks = _merge_lists(tool_chunks, o.tool_call_chunks)
        has_usage = has_usage or o.usage_metadata is not None
        if name is None:
            name = o.name
    usage = first.usage_metadata
    if has_usage:
        for o in others:
            usage = _add_usage(usage, o.usage_metadata)
    best_id: str | None = None
    best_rank = -1
    for c in (first, *others):
        if c.id:
            rank = _id_rank(c.id)
            if rank > best_rank:
                best_id, best_rank = c.id, rank
                if rank == 2:
                    break
    last = any(c.chunk_position == "last" for c in (first, *others))
    return AIMessageChunk(
        content=content,
        additional_kwargs=additional_kwargs,
        response_metadata=response_metadata,
        tool_call_chunks=[
            _tool_call_chunk(c.get("name"), c.get("args"), c.get("id"), c.get("index"))
            for c in tool_chunks
        ],
        usage_metadata=usage if has_usage else None,
        name=name,
        id=best_id,
        chunk_position="last" if last else None,
    )


# --------------------------------------------------------------------------- #
# Dict round-trip
# --------------------------------------------------------------------------- #

_CLASS_BY_TYPE: dict[str, type[BaseMessage]] = {
    cls.type: cls
    for cls in (HumanMessage, AIMessage, AIMessageChunk, SystemMessage, ToolMessage, RemoveMessage)
}
_FIELDS_BY_CLASS: dict[type[BaseMessage], frozenset[str]] = {
    cls: frozenset(f.name for f in fields(cls)) for cls in _CLASS_BY_TYPE.values()
}
_STORED_KEYS: dict[type[BaseMessage], frozenset[str]] = {
    cls: names | {"type"} for cls, names in _FIELDS_BY_CLASS.items()
}
# Content is always kept, empty or not: a stored message should read as one.
_DEFAULTS_BY_CLASS: dict[type[BaseMessage], dict[str, Any]] = {
    cls: {
        f.name: f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
        for f in fields(cls)
        if f.name != "content" and (f.default is not MISSING or f.default_factory is not MISSING)
    }
    for cls in _CLASS_BY_TYPE.values()
}


def message_to_dict(m: BaseMessage) -> dict[str, Any]:
    """JSON shape identical to LangChain's ``model_dump()`` for the same message."""
    return m.to_dict()


def message_to_stored_dict(m: BaseMessage) -> dict[str, Any]:
    """``message_to_dict`` without the fields that hold their default, which
    ``message_from_dict`` fills in again: most fields of a chat message are empty, and
    they would otherwise be stored with every message (a third of a short one)."""
    defaults = _DEFAULTS_BY_CLASS[type(m)]
    return {
        key: value
        for key, value in m.to_dict().items()
        if key not in defaults or value != defaults[key]
    }


def message_class(d: dict[str, Any]) -> type[BaseMessage] | None:
    """The class that ``cls(**fields)`` rebuilds the stored message `d` with (its fields
    less "type"), or None when only ``message_from_dict`` can (or can say what is wrong)."""
    cls = _CLASS_BY_TYPE.get(d.get("type"))  # type: ignore[arg-type]
    if cls is None or cls is RemoveMessage or not _STORED_KEYS[cls].issuperset(d):
        return None
    return cls


def message_from_parsed(d: dict[str, Any]) -> BaseMessage:
    """``message_from_dict`` for a dict the caller owns, fresh from a JSON parse, which it
    takes apart instead of copying; a message its class refuses is then reported as
    ``message_from_dict`` reports it. (Reading a long chat rebuilds thousands.)"""
    cls = message_class(d)
    if cls is not None:
        msg_type = d.pop("type")
        try:
            return cls(**d)
        except TypeError:
            d["type"] = msg_type
    return message_from_dict(d)


def message_from_dict(d: dict[str, Any]) -> BaseMessage:
    """Rebuild a message from ``message_to_dict`` output (or LangChain's ``{type, data}``)."""
    if not isinstance(d, dict):
        raise ValueError(f"message_from_dict expects a dict, got {type(d).__name__}")
    if len(d) == 2 and "data" in d and "type" in d and isinstance(d["data"], dict):
        d = {**d["data"], "type": d["type"]}
    # Reading a long chat rebuilds thousands of these: no set is built per message.
    kwargs = dict(d)
    msg_type = kwargs.pop("type", None)
    cls = _CLASS_BY_TYPE.get(msg_type) if isinstance(msg_type, str) else None
    if cls is None:
        raise ValueError(
            f"Unknown message type {msg_type!r}; expected one of {sorted(_CLASS_BY_TYPE)}"
        )
    if "example" in kwargs and not kwargs["example"]:
        del kwargs["example"]  # legacy LangChain field, always False in practice
    if not _FIELDS_BY_CLASS[cls].issuperset(kwargs):
        unknown = kwargs.keys() - _FIELDS_BY_CLASS[cls]
        raise ValueError(f"Unknown keys for a {msg_type!r} message: {sorted(unknown)}")
    if cls is RemoveMessage:
        if kwargs.get("content") is None:
            kwargs.pop("content", None)
        if kwargs.get("id") is None:
            raise ValueError("A 'remove' message needs an 'id'")
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ValueError(f"Bad fields for a {msg_type!r} message: {e}") from e


# --------------------------------------------------------------------------- #
# Coercion
# --------------------------------------------------------------------------- #

_ROLE_TO_TYPE = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "remove": "remove",
    "AIMessageChunk": "AIMessageChunk",
}
_LC_CLASS_TO_TYPE = {
    "HumanMessage": "human",
    "HumanMessageChunk": "human",
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "RemoveMessage": "remove",
}
_COMMON_KEYS = frozenset({"name", "id"})
_KEYS_BY_TYPE: dict[str, frozenset[str]] = {
    "human": _COMMON_KEYS,
    "system": _COMMON_KEYS,
    "ai": _COMMON_KEYS | {"tool_calls", "invalid_tool_calls", "usage_metadata"},
    "AIMessageChunk": _COMMON_KEYS
    | {"tool_calls", "invalid_tool_calls", "usage_metadata", "tool_call_chunks", "chunk_position"},
    "tool": _COMMON_KEYS | {"tool_call_id", "artifact", "status"},
    "remove": _COMMON_KEYS,
}


def _message_from_role(role: Any, content: Any, extra: dict[str, Any]) -> BaseMessage:
    """Build a message from a chat-style role; unknown keys become additional_kwargs."""
    msg_type = _ROLE_TO_TYPE.get(role) if isinstance(role, str) else None
    if msg_type is None:
        raise ValueError(
            f"Unknown message role/type {role!r}; expected one of "
            "'human', 'user', 'ai', 'assistant', 'system', 'developer', 'tool'"
        )
    allowed = _KEYS_BY_TYPE[msg_type]
    kwargs: dict[str, Any] = {}
    additional: dict[str, Any] = {}
    for key, value in extra.items():
        if key in allowed:
            if value is not None:
                kwargs[key] = value
        elif key == "additional_kwargs":
            additional.update(value or {})
        elif key == "example" and not value:
            continue  # legacy LangChain field, always False in practice
        elif key == "response_metadata":
            if value:
                kwargs["response_metadata"] = value
        else:
            additional[key] = value
    if role == "developer":
        additional["__openai_role__"] = "developer"
    if additional:
        kwargs["additional_kwargs"] = additional
    if "tool_calls" in kwargs:
        kwargs["tool_calls"] = [_openai_to_tool_call(tc) for tc in kwargs["tool_calls"]]
    if msg_type == "remove":
        if kwargs.get("id") is None:
            raise ValueError("A 'remove' message needs an 'id'")
        return RemoveMessage(**kwargs)  # content is ignored, as LangChain does
    if msg_type == "tool" and "tool_call_id" not in kwargs:
        raise ValueError("A 'tool' message needs a 'tool_call_id'")
    cls = _CLASS_BY_TYPE[msg_type]
    return cls(content="" if content is None else content, **kwargs)


def coerce_message(x: MessageLike) -> BaseMessage:
    """Turn any accepted message representation into a message object.

    Accepts message objects (returned unchanged), plain strings (human),
    ``(role, content)`` pairs, and dicts with ``role`` or ``type`` plus ``content``.
    """
    if isinstance(x, BaseMessage):
        return x
    if isinstance(x, str):
        return HumanMessage(content=x)
    if isinstance(x, dict):
        if (
            x.get("lc") == 1
            and x.get("type") == "constructor"
            and isinstance(x.get("id"), list)
            and x["id"]
            and isinstance(x.get("kwargs"), dict)
            and x["id"][-1] in _LC_CLASS_TO_TYPE
        ):
            return coerce_message({**x["kwargs"], "type": _LC_CLASS_TO_TYPE[x["id"][-1]]})
        extra = dict(x)
        if "role" in extra:
            role = extra.pop("role")
        elif "type" in extra:
            role = extra.pop("type")
        else:
            raise ValueError(f"Message dict needs a 'role' or 'type' key, got keys {sorted(x)}")
        if "content" in extra:
            content = extra.pop("content")
        elif role == "remove":
            content = ""
        else:
            raise ValueError(f"Message dict needs a 'content' key, got keys {sorted(x)}")
        return _message_from_role(role, content, extra)
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise ValueError(
                f"A message given as a sequence must be (role, content), got {len(x)} items"
            )
        return _message_from_role(x[0], x[1], {})
    raise ValueError(
        f"Cannot convert {type(x).__name__} to a message; expected a message, str, "
        "dict with 'role'/'type' and 'content', or (role, content) tuple"
    )


def convert_to_messages(items: Any) -> list[BaseMessage]:
    """Coerce each item of an iterable with ``coerce_message``."""
    if isinstance(items, (str, dict, BaseMessage)):
        raise ValueError(
            f"convert_to_messages expects a list of messages, got a single {type(items).__name__}"
        )
    return [coerce_message(x) for x in items]


# --------------------------------------------------------------------------- #
# Reducer
# --------------------------------------------------------------------------- #

_PLAIN_TYPES = frozenset({HumanMessage, AIMessage, SystemMessage, ToolMessage, RemoveMessage})
_CLONE_FIELDS: dict[type, tuple[str, ...]] = {}


def _with_id(m: BaseMessage, new_id: str) -> BaseMessage:
    """Shallow copy with a new id, so the caller's message is never mutated."""
    cls = type(m)
    names = _CLONE_FIELDS.get(cls)
    if names is None:
        names = _CLONE_FIELDS[cls] = tuple(f.name for f in fields(cls))
    clone = object.__new__(cls)
    for name in names:
        setattr(clone, name, getattr(m, name))
    clone.id = new_id
    return clone


_get_id = attrgetter("id")


def _coerce_side(value: Any) -> list[BaseMessage]:
    """Coerce one side of an update to a list of non-chunk messages (same list if possible)."""
    items = value if isinstance(value, list) else [value]
    if set(map(type, items)) <= _PLAIN_TYPES:
        return items
    coerced = [coerce_message(x) for x in items]
    return [m.to_message() if isinstance(m, AIMessageChunk) else m for m in coerced]


def _fill_ids(items: list[BaseMessage]) -> list[BaseMessage]:
    """Give id-less messages a uuid4, on copies so the caller's objects stay untouched."""
    return [m if m.id is not None else _with_id(m, str(uuid.uuid4())) for m in items]


def add_messages(left: Any, right: Any) -> list[BaseMessage]:
    """Merge a message update into existing messages (LangGraph's reducer semantics).

    Messages are appended unless their id matches an existing one, which they replace
    in place; ``RemoveMessage(id)`` deletes that id (``ValueError`` if absent) and
    ``RemoveMessage(REMOVE_ALL_MESSAGES)`` discards everything before it. Messages
    without ids get a fresh uuid4 on a copy; the inputs are never mutated.
    """
    if left is None or right is None:
        which = "left" if left is None else "right"
        raise ValueError(f"add_messages needs both 'left' and 'right'; '{which}' is None")
    left_msgs = _coerce_side(left)
    right_msgs = _coerce_side(right)
    # One C-level pass builds the id index; on duplicate ids the last position wins.
    index = dict(zip(map(_get_id, left_msgs), range(len(left_msgs)), strict=True))
    if None in index:
        left_msgs = _fill_ids(left_msgs)
        index = dict(zip(map(_get_id, left_msgs), range(len(left_msgs)), strict=True))
    if None in map(_get_id, right_msgs):
        right_msgs = _fill_ids(right_msgs)

    for i in range(len(right_msgs) - 1, -1, -1):
        m = right_msgs[i]
        if m.id == REMOVE_ALL_MESSAGES and isinstance(m, RemoveMessage):
            # Matches LangGraph: the tail is taken verbatim, not merged.
            return right_msgs[i + 1 :]

    merged = list(left_msgs)
    removed: set[str] = set()
    for m in right_msgs:
        pos = index.get(m.id)
        if pos is None:
            if isinstance(m, RemoveMessage):
                raise ValueError(f"Cannot remove message {m.id!r}: no message has that id")
            index[m.id] = len(merged)
            merged.append(m)
        elif isinstance(m, RemoveMessage):
            removed.add(m.id)  # type: ignore[arg-type]
        else:
            removed.discard(m.id)  # type: ignore[arg-type]
            merged[pos] = m
    if removed:
        merged = [m for m in merged if m.id not in removed]
    return merged


class MessagesState(TypedDict):
    """Ready-made graph state: a message list reduced with ``add_messages``."""

    messages: Annotated[list[AnyMessage], add_messages]
