"""The default assistant: the classic agent loop, with the user's say before a reminder is set.

    START -> model -> END                 (a reply without tool calls ends the turn)
                   -> ask_user -> tools   (any add_reminder: one review of all of them)
                   -> tools               (one task per call, all in one step)
             tools -> model
          remind -> END                   (a reminder come due: the agent says it)

Written as LangGraph users write agents, so it doubles as an example to copy: a LangChain
chat model with the tools bound (`THREADLINE_MODEL` picks it, see `app.chat_models.base`), a
`ToolNode` that runs each call (sent to it with `Send`, as `create_react_agent` does), and
`interrupt()` for the review. Every tool task of a turn runs in the same step, so `model`
runs once after all of them.
`ask_user` only asks: it has no side effects before `interrupt()`, and a resume it cannot
read fails with `InvalidResumeError` while the thread stays interrupted. Its card shows
when each reminder will fire, or, when no time can be read from its `due`, asks for one
(the user edits the reminder, or approves it without a time).

When a reminder comes due, the server runs the thread with `Command(goto=Send("remind",
reminder))` (`app.services.reminder_scheduler`): `remind` has the model say it, in a turn
of its own that streams like any reply, once, however often the run is retried.
"""

import logging
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from app.agents.due import resolve_due, zone_of
from app.agents.reminder_store import reminder_store
from app.agents.tools import TOOLS, add_reminder, declined, owner_of, tool_error
from app.chat_models.base import load_model
from engine import END, START, Command, MessagesState, Send, StateGraph, interrupt
from engine.prebuilt import ToolNode

ADD_REMINDER = add_reminder.name
SYSTEM_PROMPT = (
    "You are Threadline, a concise, friendly assistant. Use get_forecast for weather "
    "questions, add_reminder to set reminders (the user confirms each one before it is set) "
    "and list_reminders to show them. If the user declines a reminder, acknowledge it and do "
    "not set it again."
)
REMINDER_PROMPT = (
    "A reminder the user set is due now. Tell them, in one short friendly sentence that "
    "starts with '⏰'. Do not ask anything."
)
# The request `remind` puts to the model (the scripted model knows it).
DUE_NOW = "Reminder due now: "
log = logging.getLogger(__name__)
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


class DueReminder(TypedDict):
    """What the server sends `remind` when a reminder comes due."""

    id: str
    text: str
    due: str | None


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
        try:
            add_reminder.tool_call_schema.model_validate(action.get("args"))  # type: ignore[union-attr]
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()
            )
            raise InvalidResumeError(f"{where}: {ADD_REMINDER} {problems}.") from None
        return {"type": "edit", "edited_action": {"name": ADD_REMINDER, "args": action["args"]}}
    raise InvalidResumeError(f"{where}: type must be 'approve', 'edit' or 'reject', got {kind!r}.")


def review_request(calls: list[dict[str, Any]], zone: tzinfo, now: datetime) -> ReviewRequest:
    """One action request per add_reminder call, in call order; each says when it fires
    (in `zone`, seen from `now`), or asks when."""
    return {
        "action_requests": [
            {
                "name": c["name"],
                "args": c["args"],
                "description": _description(c["args"], zone, now),
            }
            for c in calls
        ],
        "review_configs": [
            {"action_name": ADD_REMINDER, "allowed_decisions": ["approve", "edit", "reject"]}
        ],
    }


def _description(args: Any, zone: tzinfo, now: datetime) -> str:
    if not isinstance(args, dict) or not args.get("text"):
        return "Set a reminder."
    words = args.get("due")
    if not isinstance(words, str) or not words.strip():
        return f"Set a reminder to {args['text']}."
    set_it = f"Set a reminder to {args['text']}, due {words}."
    due = resolve_due(words, zone, now)
    if due.at is None:
        return f"{set_it} When is that? {due.problem}: edit it, or approve it without a time."
    return f"{set_it} That is {due.describe(zone)}."


def _tool_calls(state: MessagesState) -> list[dict[str, Any]]:
    messages = state["messages"]
    last = messages[-1] if messages else None
    return last.tool_calls if isinstance(last, AIMessage) else []


def _to_tools(call: dict[str, Any]) -> Send:
    """One call for the ToolNode. Only the call is sent (and so saved with the version):
    a tool that asks for the state reads it from the graph when it runs."""
    return Send("tools", [call])


def route_after_model(state: MessagesState) -> str | list[Send]:
    """No calls: the turn is over; any reminder: ask first; else one task per call."""
    calls = _tool_calls(state)
    if not calls:
        return END
    if any(call["name"] == ADD_REMINDER for call in calls):
        return "ask_user"
    return [_to_tools(call) for call in calls]


def ask_user(state: MessagesState, config: RunnableConfig) -> Command:
    """Review all reminders of the message in one interrupt, then send every call that may
    run (approved, edited, and the other tools) to `tools` in one step. Edited calls
    replace the originals in the model's message (same id), as LangChain's
    human-in-the-loop middleware does, so the conversation shows what ran."""
    calls = _tool_calls(state)
    reminders = [call for call in calls if call["name"] == ADD_REMINDER]
    question = review_request(reminders, zone_of(config["configurable"]), datetime.now(UTC))
    decisions = iter(validate_resume(interrupt(question), len(reminders)))
    sends: list[Send] = []
    answers: list[ToolMessage] = []
    revised: list[dict[str, Any]] = []
    for call in calls:
        decision: Decision = (
            next(decisions) if call["name"] == ADD_REMINDER else {"type": "approve"}
        )
        if decision["type"] == "edit":
            call = {**call, "args": decision["edited_action"]["args"]}
        revised.append(call)
        if decision["type"] == "reject":
            answers.append(declined(call, decision["message"]))
        else:
            sends.append(_to_tools(call))
    messages: list[Any] = list(answers)
    if revised != calls:
        messages.insert(0, state["messages"][-1].model_copy(update={"tool_calls": revised}))
    # With nothing to run, the model answers the refusals straight away.
    return Command(update={"messages": messages} if messages else None, goto=sends or "model")


def build_graph(model: BaseChatModel | None = None) -> StateGraph:
    """The agent over `model` (default: THREADLINE_MODEL), not compiled: the caller picks
    the checkpointer. Its tools and `remind` write through the reminder store each run's
    config hands (`app.agents.reminder_store.REMINDER_STORE`)."""
    base_model = model or load_model()
    chat_model = base_model.bind_tools(TOOLS)

    async def call_model(state: MessagesState) -> dict[str, list[AIMessage]]:
        """The system prompt is added per call, never stored, so changing it is free."""
        messages = [SystemMessage(SYSTEM_PROMPT), *state["messages"]]
        return {"messages": [await chat_model.ainvoke(messages)]}

    async def remind(reminder: DueReminder, config: RunnableConfig) -> dict[str, list[AIMessage]]:
        """Say a reminder that came due, once: a run that finds it said by another run
        (the server made two, its maker having died halfway) says nothing."""
        configurable = config["configurable"]
        first = await reminder_store(config).deliver(
            reminder_id=reminder["id"],
            owner=owner_of(configurable),
            thread_id=configurable.get("thread_id", ""),
            run_id=configurable.get("run_id", ""),
        )
        if not first:
            return {}
        try:
            said = await base_model.ainvoke(
                [SystemMessage(REMINDER_PROMPT), HumanMessage(DUE_NOW + reminder["text"])]
            )
        except Exception:  # the reminder is said all the same, in plain words
            log.warning("the model could not say reminder %s", reminder["id"], exc_info=True)
            said = AIMessage(f"⏰ Reminder: {reminder['text']}.")
        return {"messages": [said.model_copy(update={"name": "reminder"})]}

    return (
        StateGraph(MessagesState)
        .add_node("model", call_model)
        .add_node("ask_user", ask_user, destinations=("tools", "model"))
        .add_node("tools", ToolNode(TOOLS, handle_tool_errors=tool_error))
        .add_node("remind", remind)
        .add_edge(START, "model")
        .add_conditional_edges("model", route_after_model, ["ask_user", "tools", END])
        .add_edge("tools", "model")
        .add_edge("remind", END)
    )


graph = build_graph()
