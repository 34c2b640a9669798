"""The shapes of a human-in-the-loop question and its answer, as chat frontends (Agent
Inbox, Agent Chat UI) expect them: a node asks with `interrupt([HumanInterrupt(...)])`
and is resumed with a list of HumanResponse."""

from typing import Literal

# typing_extensions' TypedDict: pydantic (an interrupt's `response_schema`) rejects
# typing's before Python 3.12.
from typing_extensions import TypedDict

__all__ = ["ActionRequest", "HumanInterrupt", "HumanInterruptConfig", "HumanResponse"]


class HumanInterruptConfig(TypedDict):
    """Which answers the frontend offers the human."""

    allow_ignore: bool
    allow_respond: bool
    allow_edit: bool
    allow_accept: bool


class ActionRequest(TypedDict):
    """The action waiting for approval (e.g. a tool name) and its arguments."""

    action: str
    args: dict


class HumanInterrupt(TypedDict):
    """One question to a human: what is about to happen, what they may answer, and an
    optional longer description (markdown)."""

    action_request: ActionRequest
    config: HumanInterruptConfig
    description: str | None


class HumanResponse(TypedDict):
    """The human's answer: `accept` and `ignore` carry no args, `response` a text for the
    model, `edit` the ActionRequest to run instead."""

    type: Literal["accept", "ignore", "response", "edit"]
    args: None | str | ActionRequest
