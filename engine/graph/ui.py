"""Generative UI: a node names a UI component and the props to render it with. The
message streams at once, as a `custom` part (what chat frontends such as agent-chat-ui
render), and, unless `state_key` is None, is written to that state key when the node
returns, so that a reloaded conversation shows it again. The key's reducer is
`ui_message_reducer`: a message replaces (or, with `merge`, updates) the one with its
id, and a `remove-ui` message takes one away."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias
from uuid import uuid4

from typing_extensions import TypedDict

from engine.pregel.context import current, get_config

__all__ = (
    "AnyUIMessage",
    "RemoveUIMessage",
    "UIMessage",
    "delete_ui_message",
    "push_ui_message",
    "ui_message_reducer",
)


class UIMessage(TypedDict):
    """A UI component to show: its `name`, its `props`, and where it comes from."""

    type: Literal["ui"]
    id: str
    name: str
    props: dict[str, Any]
    metadata: dict[str, Any]


class RemoveUIMessage(TypedDict):
    """Take away the UI component with this id."""

    type: Literal["remove-ui"]
    id: str


AnyUIMessage: TypeAlias = UIMessage | RemoveUIMessage


def _send(message: AnyUIMessage, state_key: str | None) -> None:
    pad = current()
    pad.writer(message)
    if state_key:
        pad.pushed.append((state_key, message))


def push_ui_message(
    name: str,
    props: dict[str, Any],
    *,
    id: str | None = None,  # noqa: A002 - LangGraph's keyword
    metadata: dict[str, Any] | None = None,
    message: Any = None,
    state_key: str | None = "ui",
    merge: bool = False,
) -> UIMessage:
    """Show component `name` with `props` (replacing the one with `id`, or with `merge`
    updating its props); `message` ties it to a chat message (by the message's id)."""
    config = get_config()
    message_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    ui: UIMessage = {
        "type": "ui",
        "id": id or str(uuid4()),
        "name": name,
        "props": props,
        "metadata": {
            "merge": merge,
            "run_id": config.get("run_id"),
            # None without tags, as in LangGraph (whose node config has no empty list).
            "tags": config.get("tags") or None,
            "name": config.get("run_name"),
            **(metadata or {}),
            **({"message_id": message_id} if message_id else {}),
        },
    }
    _send(ui, state_key)
    return ui


def delete_ui_message(id: str, *, state_key: str = "ui") -> RemoveUIMessage:  # noqa: A002
    """Take away the component with `id`, from the stream's reader and from the state."""
    removal: RemoveUIMessage = {"type": "remove-ui", "id": id}
    _send(removal, state_key)
    return removal


def ui_message_reducer(
    left: list[AnyUIMessage] | AnyUIMessage, right: list[AnyUIMessage] | AnyUIMessage
) -> list[AnyUIMessage]:
    """The UI messages after `right`: each replaces the one with its id (its props merged
    into the old ones when its metadata says `merge`) or comes last; a `remove-ui` takes
    its id away, and naming an id that is not there is an error."""
    merged = list(left) if isinstance(left, list) else [left]
    position = {m.get("id"): i for i, m in enumerate(merged)}
    removed: set[Any] = set()
    for new in right if isinstance(right, list) else [right]:
        key = new.get("id")
        at = position.get(key)
        if new.get("type") == "remove-ui":
            if at is None:
                raise ValueError(
                    f"Attempting to delete an UI message with an ID that doesn't exist ('{key}')"
                )
            removed.add(key)
            continue
        if at is None:
            position[key] = len(merged)
            merged.append(new)
            continue
        removed.discard(key)
        if new.get("metadata", {}).get("merge", False):
            new = {**new, "props": {**merged[at]["props"], **new["props"]}}  # type: ignore[typeddict-item]
        merged[at] = new
    return [m for m in merged if m.get("id") not in removed]
