"""The default assistant: the classic agent loop, with the user's say before a reminder is set.

    START -> model -> END                 (a reply without tool calls ends the turn)
                   -> ask_user -> tools   (any add_reminder: one review of all of them)
                   -> tools               (one task per call, all in one step)
             tools -> model

Every tool task of a turn runs in the same step, so `model` runs once after all of them.
`ask_user` only asks: it has no side effects before `interrupt()`, and a resume it cannot
read fails with `InvalidResumeError` while the thread stays interrupted.
"""

from typing import Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from app.agents.tools import TOOLS, declined, run_tool, tool_schemas
from app.models.base import load_model
from engine import END, START, Command, MessagesState, Send, StateGraph, interrupt

ADD_REMINDER = "add_reminder"
SYSTEM_PROMPT = (
    "You are Threadline, a concise, friendly assistant. Use get_forecast for weather "
    "questions, add_reminder to set reminders (the user confirms each one before it is set) "
    "and list_reminders to show them. If the user declines a reminder, acknowledge it and do "
    "not set it again."
)
_YES = frozenset({"yes", "y", "approve"})
_NO = frozenset({"no", "n", "reject"})


class ActionRequest(TypedDict):
    """One tool call put to the user (LangChain's human-in-the-loop shape)."""

    name: str
    args: dict[str, Any]
    description: str


class ReviewConfig(TypedDict):
    """Which answers a frontend may offer for an action."""

    action_name: str
    allowed_decisions: list[str]


class ReviewRequest(TypedDict):
    """The interrupt value: agent-chat-ui and Agent Inbox render it as approve/edit/reject."""

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]


class ApproveDecision(TypedDict):
    type: Literal["approve"]


class EditedAction(TypedDict):
    name: str
    args: dict[str, Any]


class EditDecision(TypedDict):
    type: Literal["edit"]
    edited_action: EditedAction


class RejectDecision(TypedDict):
    type: Literal["reject"]
    message: str | None


Decision = ApproveDecision | EditDecision | RejectDecision


class InvalidResumeError(ValueError):
    """A resume value `ask_user` cannot read; the server can answer it with a 422."""


def validate_resume(value: Any, action_count: int) -> list[Decision]:
    """The decisions in a resume value, one per action request, in order.

    Accepts `{"decisions": [...]}` and, for people with curl, "yes"/"no" (also y/n,
    approve/reject, any case) meaning approve all / reject all.
    """
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _YES:
            return [{"type": "approve"} for _ in range(action_count)]
        if word in _NO:
            return [{"type": "reject", "message": None} for _ in range(action_count)]
    decisions = value.get("decisions") if isinstance(value, dict) else None
    if not isinstance(decisions, list):
        raise InvalidResumeError(
            f'Cannot read the answer {value!r}: resume with "yes", "no" or '
            '{"decisions": [{"type": "approve" | "edit" | "reject", ...}]}.'
        )
    if len(decisions) != action_count:
        raise InvalidResumeError(
            f"Expected {action_count} decision(s), one per action request; got {len(decisions)}."
        )
    return [_decision(raw, f"decisions[{i}]") for i, raw in enumerate(decisions)]


def check_resume(interrupt_value: Any, resume: Any) -> None:
    """The server's hook: refuse an unreadable answer to `ask_user` before a run starts
    (raises InvalidResumeError, a ValueError). Other interrupts take any answer."""
    if isinstance(interrupt_value, dict) and "action_requests" in interrupt_value:
        validate_resume(resume, len(interrupt_value["action_requests"]))


def _decision(raw: Any, where: str) -> Decision:
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "approve":
        return {"type": "approve"}
    if kind == "reject":
        message = raw.get("message")
        if message is not None and not isinstance(message, str):
            raise InvalidResumeError(f"{where}: a reject message must be a string.")
        return {"type": "reject", "message": message or None}
    if kind == "edit":
        action = raw.get("edited_action")
        if not isinstance(action, dict) or action.get("name", ADD_REMINDER) != ADD_REMINDER:
            raise InvalidResumeError(
                f'{where}: an edit needs "edited_action": {{"name": "{ADD_REMINDER}", '
                '"args": {"text": ..., "due": ...}}.'
            )
        if problem := TOOLS[ADD_REMINDER].check_args(action.get("args")):
            raise InvalidResumeError(f"{where}: {problem}.")
        return {"type": "edit", "edited_action": {"name": ADD_REMINDER, "args": action["args"]}}
    raise InvalidResumeError(f"{where}: type must be 'approve', 'edit' or 'reject', got {kind!r}.")


def review_request(calls: list[dict[str, Any]]) -> ReviewRequest:
    """One action request per add_reminder call, in call order."""
    return {
        "action_requests": [
            {"name": c["name"], "args": c["args"], "description": _description(c["args"])}
            for c in calls
        ],
        "review_configs": [
            {"action_name": ADD_REMINDER, "allowed_decisions": ["approve", "edit", "reject"]}
        ],
    }


def _description(args: Any) -> str:
    if not isinstance(args, dict) or not args.get("text"):
        return "Set a reminder."
    due = f", due {args['due']}" if args.get("due") else ""
    return f"Set a reminder to {args['text']}{due}."


def _tool_calls(state: MessagesState) -> list[dict[str, Any]]:
    messages = state["messages"]
    last = messages[-1] if messages else None
    return last.tool_calls if isinstance(last, AIMessage) else []


def _to_tools(call: dict[str, Any]) -> Send:
    return Send("tools", {"tool_call": call})


def route_after_model(state: MessagesState) -> str | list[Send]:
    """No calls: the turn is over; any reminder: ask first; else one task per call."""
    calls = _tool_calls(state)
    if not calls:
        return END
    if any(call["name"] == ADD_REMINDER for call in calls):
        return "ask_user"
    return [_to_tools(call) for call in calls]


def ask_user(state: MessagesState) -> Command:
    """Review all reminders of the message in one interrupt, then send every call that may
    run (approved, edited, and the other tools) to `tools` in one step."""
    calls = _tool_calls(state)
    reminders = [call for call in calls if call["name"] == ADD_REMINDER]
    decisions = iter(validate_resume(interrupt(review_request(reminders)), len(reminders)))
    sends: list[Send] = []
    answers: list[ToolMessage] = []
    for call in calls:
        decision: Decision = (
            next(decisions) if call["name"] == ADD_REMINDER else {"type": "approve"}
        )
        if decision["type"] == "reject":
            answers.append(declined(call, decision["message"]))
        elif decision["type"] == "edit":
            sends.append(_to_tools({**call, "args": decision["edited_action"]["args"]}))
        else:
            sends.append(_to_tools(call))
    # With nothing to run, the model answers the refusals straight away.
    return Command(update={"messages": answers} if answers else None, goto=sends or "model")


async def run_tool_call(
    packet: dict[str, Any], config: RunnableConfig
) -> dict[str, list[ToolMessage]]:
    """One tool call per task; the call id is the idempotency key of its side effect."""
    configurable = config["configurable"]
    message = await run_tool(
        packet["tool_call"],
        owner=configurable.get("user_id") or "local",
        thread_id=configurable.get("thread_id", ""),
    )
    return {"messages": [message]}


def build_graph(model: BaseChatModel | None = None) -> StateGraph:
    """The agent over `model` (default: THREADLINE_MODEL), not compiled: the caller picks
    the checkpointer."""
    chat_model = (model or load_model()).bind_tools(tool_schemas())

    async def call_model(state: MessagesState) -> dict[str, list[AIMessage]]:
        """The system prompt is added per call, never stored, so changing it is free."""
        messages = [SystemMessage(SYSTEM_PROMPT), *state["messages"]]
        return {"messages": [await chat_model.ainvoke(messages)]}

    return (
        StateGraph(MessagesState)
        .add_node("model", call_model)
        .add_node("ask_user", ask_user, destinations=("tools", "model"))
        .add_node("tools", run_tool_call)
        .add_edge(START, "model")
        .add_conditional_edges("model", route_after_model, ["ask_user", "tools", END])
        .add_edge("tools", "model")
    )


graph = build_graph()
