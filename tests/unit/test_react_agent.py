"""create_react_agent against the oracle `langgraph.prebuilt.create_react_agent`: the
same model script, tools and input through both agents give the same conversation,
state, stream of updates and drawing.

Each side builds its own agent (its own graph engine, saver, store and types) around
its own copy of a scripted fake chat model.
"""

import asyncio
import dataclasses
import importlib
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool, InjectedToolCallId
from langchain_core.tools import tool as dec_tool
from pydantic import BaseModel
from typing_extensions import TypedDict

from engine.prebuilt import chat_agent_executor as engine_executor
from tests import side_by_side

# The oracle marks its prebuilt names deprecated (they moved to `langchain.agents`).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class ScriptedModel(BaseChatModel):
    """Answers with its input joined by "-", asking for the next scripted tool calls;
    its message ids count its calls, so both sides' histories line up."""

    script: list[list[ToolCall]] = []
    structured: Any = None
    index: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        calls = self.script[self.index % len(self.script)] if self.script else []
        text = "-".join(str(m.content) for m in messages)
        reply = AIMessage(content=text, id=str(self.index), tool_calls=list(calls))
        self.index += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        specs = [
            {"type": "function", "function": {"name": t.name}} if isinstance(t, BaseTool) else t
            for t in tools
        ]
        return self.bind(tools=specs)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable:
        return RunnableLambda(lambda _: self.structured)


@dataclasses.dataclass(frozen=True)
class Side:
    """One implementation, as its modules."""

    root: str

    def module(self, name: str) -> Any:
        return importlib.import_module(f"{self.root}.{name}")

    @property
    def prebuilt(self) -> Any:
        return self.module("prebuilt")

    def saver(self) -> Any:
        return self.module("checkpoint.memory").InMemorySaver()

    def store(self) -> Any:
        return self.module("store.memory").InMemoryStore()


ENGINE, ORACLE = Side("engine"), Side("langgraph")
SIDES = (ENGINE, ORACLE)


def call(name: str, call_id: str, /, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


def normalized(value: Any) -> Any:
    """Messages without their random ids; each side's own classes as plain values."""
    if isinstance(value, BaseMessage):
        calls = [(c["name"], c["args"], c["id"]) for c in getattr(value, "tool_calls", [])]
        return (
            value.type,
            value.content,
            value.name,
            calls,
            getattr(value, "tool_call_id", None),
            getattr(value, "status", None),
        )
    if type(value).__name__ == "Interrupt":
        return ("interrupt", normalized(value.value))
    if isinstance(value, BaseModel):
        return value.model_dump()
    return side_by_side.in_containers(value, normalized)


def outcome(run: Callable[[], Any]) -> Any:
    return side_by_side.outcome(run, normalized)


def updates(graph: Any, value: Any, config: Any = None) -> list[Any]:
    """The graph's stream of updates, the updates of parallel tasks of one node (v2
    tools) sorted: they come in the order the tasks finish, on both sides."""
    parts = [normalized(part) for part in graph.stream(value, config)]
    ordered: list[Any] = []
    for part in parts:
        if ordered and list(part) == list(ordered[-1][0]):
            ordered[-1].append(part)
        else:
            ordered.append([part])
    return [part for run in ordered for part in sorted(run, key=repr)]


def both(run: Callable[[Side], Any]) -> tuple[Any, Any]:
    engine, oracle = (outcome(lambda side=side: run(side)) for side in SIDES)
    return engine, oracle


# Tools, built per side (a tool returning a Command returns its own side's Command).


# In both tool sets below; each wraps it with `dec_tool` afresh. (Its docstring is the
# tool's description.)
def get_weather(city: str) -> str:
    """Get the weather."""
    return f"sunny in {city}"


def weather_tools(side: Side) -> list[Any]:
    @dec_tool
    def get_time(city: str) -> str:
        """Get the time."""
        return f"noon in {city}"

    @dec_tool(return_direct=True)
    def book(city: str) -> str:
        """Book a trip, and stop there."""
        return f"booked {city}"

    return [dec_tool(get_weather), get_time, book]


TWO_CALLS = [[call("get_weather", "1", city="Oslo"), call("get_time", "2", city="Rome")], []]


def agent(side: Side, script: list[list[ToolCall]], tools: Any = None, **kwargs: Any) -> Any:
    model = ScriptedModel(script=script, structured=kwargs.pop("structured", None))
    tools = weather_tools(side) if tools is None else tools
    return side.prebuilt.create_react_agent(model, tools, **kwargs)


def ask(text: str = "hi") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


# The conversation.


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize(
    "script",
    [
        [],
        TWO_CALLS,
        [[call("book", "1", city="Paris")], []],
        [[call("book", "1", city="Paris"), call("get_weather", "2", city="Oslo")], []],
        [[call("nope", "1")], []],
        [[call("get_weather", "1", wrong="x")], []],
    ],
    ids=["answer", "parallel calls", "return direct", "direct and not", "unknown", "bad args"],
)
def test_conversation_matches_oracle(version: str, script: list[list[ToolCall]]) -> None:
    engine, oracle = both(lambda side: agent(side, script, version=version).invoke(ask()))
    assert engine == oracle


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_async_conversation_matches_oracle(version: str) -> None:
    engine, oracle = both(
        lambda side: asyncio.run(agent(side, TWO_CALLS, version=version).ainvoke(ask()))
    )
    assert engine == oracle


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_stream_of_updates_matches_oracle(version: str) -> None:
    engine, oracle = both(lambda side: updates(agent(side, TWO_CALLS, version=version), ask()))
    assert engine == oracle


def prompts(side: Side) -> dict[str, Any]:
    async def async_prompt(state: Any) -> list[BaseMessage]:
        return [HumanMessage(f"async {state['messages'][-1].content}")]

    return {
        "none": None,
        "text": "Be brief",
        "system message": SystemMessage("Be kind"),
        "function": lambda state: [HumanMessage(f"Bar {state['messages'][-1].content}")],
        "runnable": RunnableLambda(lambda state: [SystemMessage("R"), *state["messages"]]),
        "async function": async_prompt,
    }


@pytest.mark.parametrize("name", list(prompts(ENGINE)))
def test_prompts_match_oracle(name: str) -> None:
    def run(side: Side) -> Any:
        graph = agent(side, TWO_CALLS, prompt=prompts(side)[name])
        return asyncio.run(graph.ainvoke(ask()))

    engine, oracle = both(run)
    assert engine == oracle


def test_prompt_gets_config_and_store() -> None:
    def run(side: Side) -> Any:
        store = side.store()
        store.put(("users",), "u1", {"name": "Ann"})

        def prompt(state: Any, config: RunnableConfig, *, store) -> list[BaseMessage]:
            # `store` unannotated, as LangGraph documents it (it skips `store: Any`).
            user = config["configurable"]["user_id"]
            return [SystemMessage(store.get(("users",), user).value["name"]), *state["messages"]]

        graph = agent(side, TWO_CALLS, prompt=prompt, store=store)
        return graph.invoke(ask(), {"configurable": {"user_id": "u1"}})

    engine, oracle = both(run)
    assert engine == oracle
    assert engine["messages"][-1][1].startswith("Ann-hi")


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("limit", [2, 3, 4, 5, 6])
def test_step_budget_matches_oracle(version: str, limit: int) -> None:
    script = [[call("get_weather", "1", city="Oslo")]] * 5 + [[]]

    def run(side: Side) -> Any:
        graph = agent(side, script, version=version)
        return graph.invoke(ask(), {"recursion_limit": limit})

    engine, oracle = both(run)
    assert engine == oracle


def test_step_budget_answers_sorry() -> None:
    graph = agent(ENGINE, [[call("get_weather", "1", city="Oslo")]])
    messages = graph.invoke(ask(), {"recursion_limit": 4})["messages"]
    assert messages[-1].content == "Sorry, need more steps to process this request."


@pytest.mark.parametrize("response_format", ["schema", "with prompt"])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_structured_response_matches_oracle(version: str, response_format: str) -> None:
    class Weather(BaseModel):
        temperature: float

    schema = Weather if response_format == "schema" else ("Answer in JSON", Weather)

    def run(side: Side) -> Any:
        graph = agent(
            side,
            TWO_CALLS,
            version=version,
            response_format=schema,
            structured=Weather(temperature=21),
        )
        return [updates(graph, ask()), graph.invoke(ask())]

    engine, oracle = both(run)
    assert engine == oracle
    assert engine[1]["structured_response"] == {"temperature": 21.0}


def test_pre_model_hook_matches_oracle() -> None:
    def run(side: Side) -> Any:
        def trim(state: Any) -> dict[str, Any]:
            return {"llm_input_messages": state["messages"][-1:]}

        def replace_all(state: Any) -> dict[str, Any]:
            reset = side.module("graph.message").REMOVE_ALL_MESSAGES
            return {"messages": [RemoveMessage(id=reset), HumanMessage("only this")]}

        return [
            updates(agent(side, TWO_CALLS, pre_model_hook=hook), ask())
            for hook in (trim, replace_all)
        ]

    engine, oracle = both(run)
    assert engine == oracle


@pytest.mark.parametrize("with_format", [False, True])
@pytest.mark.parametrize("tools", [False, True])
def test_post_model_hook_matches_oracle(tools: bool, with_format: bool) -> None:
    class Weather(BaseModel):
        temperature: float

    def run(side: Side) -> Any:
        base = side.prebuilt.chat_agent_executor.AgentState

        class State(base):
            flag: bool
            structured_response: Weather

        graph = agent(
            side,
            TWO_CALLS,
            tools=None if tools else [],
            post_model_hook=lambda state: {"flag": True},
            state_schema=State,
            response_format=Weather if with_format else None,
            structured=Weather(temperature=3),
        )
        return updates(graph, {**ask(), "flag": False})

    engine, oracle = both(run)
    assert engine == oracle


def test_custom_state_schemas_match_oracle() -> None:
    def run(side: Side, pydantic: bool) -> Any:
        executor = side.prebuilt.chat_agent_executor
        injected = side.prebuilt.InjectedState
        if pydantic:

            class State(executor.AgentStatePydantic):
                city: str = "Oslo"
        else:

            class State(executor.AgentState):
                city: str

        @dec_tool
        def where(state: Annotated[Any, injected]) -> str:
            """Read the city from the state."""
            return state.city if pydantic else state["city"]

        graph = agent(side, [[call("where", "1")], []], tools=[where], state_schema=State)
        return graph.invoke({**ask(), "city": "Lima"})

    for pydantic in (False, True):
        engine, oracle = both(lambda side, p=pydantic: run(side, p))
        assert engine == oracle


def test_store_injection_matches_oracle() -> None:
    def run(side: Side) -> Any:
        store = side.store()
        store.put(("prefs",), "color", {"v": "blue"})

        @dec_tool
        def color(store: Annotated[Any, side.prebuilt.InjectedStore()]) -> str:
            """Read a preference."""
            return store.get(("prefs",), "color").value["v"]

        graph = agent(side, [[call("color", "1")], []], tools=[color], store=store)
        return graph.invoke(ask())

    engine, oracle = both(run)
    assert engine == oracle


def test_dynamic_model_matches_oracle() -> None:
    @dataclasses.dataclass
    class Context:
        script: str

    def run(side: Side) -> Any:
        def choose(state: Any, runtime: Any) -> BaseChatModel:
            script = TWO_CALLS if runtime.context.script == "tools" else []
            return ScriptedModel(script=script).bind_tools(weather_tools(side))

        graph = side.prebuilt.create_react_agent(
            choose, weather_tools(side), context_schema=Context, prompt="P"
        )
        return [graph.invoke(ask(), context=Context(script=s)) for s in ("tools", "none")]

    engine, oracle = both(run)
    assert engine == oracle


def test_async_dynamic_model_needs_async_invoke() -> None:
    async def choose(state: Any, runtime: Any) -> BaseChatModel:
        return ScriptedModel()

    graph = engine_executor.create_react_agent(choose, [])
    assert len(asyncio.run(graph.ainvoke(ask()))["messages"]) == 2
    with pytest.raises(RuntimeError, match="Async model callable"):
        graph.invoke(ask())


def test_agent_name_is_set_on_replies() -> None:
    engine, oracle = both(lambda side: agent(side, TWO_CALLS, name="helper").invoke(ask()))
    assert engine == oracle
    assert {m[2] for m in engine["messages"] if m[0] == "ai"} == {"helper"}


# Interrupts, checkpoints and resumes.


def asking_tools(side: Side) -> list[Any]:
    interrupt = side.module("types").interrupt

    @dec_tool
    def ask_human(question: str) -> str:
        """Ask a human."""
        return f"human says {interrupt(question)}"

    return [ask_human, dec_tool(get_weather)]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_interrupt_in_a_tool_and_resume_match_oracle(version: str) -> None:
    script = [[call("get_weather", "1", city="Oslo"), call("ask_human", "2", question="ok?")], []]

    def run(side: Side) -> Any:
        graph = agent(
            side, script, tools=asking_tools(side), version=version, checkpointer=side.saver()
        )
        config = {"configurable": {"thread_id": "t"}}
        first = graph.invoke(ask(), config)
        state = graph.get_state(config)
        Command = side.module("types").Command
        last = graph.invoke(Command(resume="yes"), config)
        return [first, state.next, [t.name for t in state.tasks], last]

    engine, oracle = both(run)
    assert engine == oracle


@pytest.mark.parametrize("where", ["before", "after"])
def test_interrupt_before_and_after_tools_match_oracle(where: str) -> None:
    def run(side: Side) -> Any:
        graph = agent(
            side,
            TWO_CALLS,
            checkpointer=side.saver(),
            **{f"interrupt_{where}": ["tools"]},
        )
        config = {"configurable": {"thread_id": "t"}}
        first = graph.invoke(ask(), config)
        paused = graph.get_state(config).next
        return [first, paused, graph.invoke(None, config)]

    engine, oracle = both(run)
    assert engine == oracle


def test_unanswered_tool_calls_are_refused_like_the_oracle() -> None:
    dangling = {"messages": [HumanMessage("hi"), AIMessage("", tool_calls=[call("x", "1")])]}
    engine, oracle = both(lambda side: agent(side, []).invoke(dangling))
    assert engine == oracle == ("raised", "ValueError")


def test_tool_command_updates_custom_state() -> None:
    def run(side: Side) -> Any:
        Command = side.module("types").Command

        class State(side.prebuilt.chat_agent_executor.AgentState):
            user: str

        @dec_tool
        def remember(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
            """Remember the user's name."""
            answer = ToolMessage("remembered", tool_call_id=tool_call_id)
            return Command(update={"user": name, "messages": [answer]})

        graph = agent(
            side, [[call("remember", "1", name="Ann")], []], tools=[remember], state_schema=State
        )
        return graph.invoke(ask())

    engine, oracle = both(run)
    assert engine == oracle
    assert engine["user"] == "Ann"


# Construction.


def test_construction_errors_match_oracle() -> None:
    class NoSteps(TypedDict):
        messages: list

    def run(side: Side, **kwargs: Any) -> Any:
        return agent(side, [], **kwargs).get_graph() and "built"

    for kwargs in (
        {"version": "v3"},
        {"state_schema": NoSteps},
        {"unexpected": 1},
        {"tools": []},
    ):
        engine, oracle = both(lambda side, kw=kwargs: run(side, **kw))
        assert engine == oracle, kwargs


def test_model_with_tools_bound_matches_oracle() -> None:
    def run(side: Side, bound: int, given: int) -> Any:
        tools = weather_tools(side)
        model = ScriptedModel(script=TWO_CALLS).bind_tools(tools[:bound])
        return side.prebuilt.create_react_agent(model, tools[:given]).invoke(ask())

    for bound, given in ((3, 3), (1, 3), (3, 1)):
        engine, oracle = both(lambda side, b=bound, g=given: run(side, b, g))
        assert engine == oracle


def test_helpers_match_oracle() -> None:
    oracle_executor = ORACLE.module("prebuilt.chat_agent_executor")
    tools = weather_tools(ENGINE)
    model = ScriptedModel()
    models = [
        model,
        model.bind_tools(tools),
        model.bind_tools(tools[:1]),
        model | RunnableLambda(lambda m: m),
        model.bind_tools(tools) | RunnableLambda(lambda m: m),
        RunnableLambda(lambda m: m),
    ]
    for candidate in models:
        for given in ([], tools[:1], tools):
            assert outcome(
                lambda c=candidate, g=given: engine_executor._should_bind_tools(c, g)
            ) == (outcome(lambda c=candidate, g=given: oracle_executor._should_bind_tools(c, g)))
        ours = outcome(lambda c=candidate: engine_executor._get_model(c) is model)
        assert ours == outcome(lambda c=candidate: oracle_executor._get_model(c) is model)
    histories = [
        [],
        [HumanMessage("q"), AIMessage("", tool_calls=[call("a", "1")])],
        [AIMessage("", tool_calls=[call("a", "1")]), ToolMessage("r", tool_call_id="1")],
    ]
    for history in histories:
        assert outcome(lambda h=history: engine_executor._validate_chat_history(h)) == outcome(
            lambda h=history: oracle_executor._validate_chat_history(h)
        )


def test_string_model_needs_langchain() -> None:
    try:
        import langchain.chat_models  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install langchain"):
            engine_executor.create_react_agent("openai:gpt-4o", [])
    else:
        pytest.skip("langchain is installed: the string form builds a real model")


@pytest.mark.parametrize("tools", [False, True])
@pytest.mark.parametrize("pre", [False, True])
@pytest.mark.parametrize("post", [False, True])
@pytest.mark.parametrize("response_format", [False, True])
def test_drawing_matches_oracle(tools: bool, pre: bool, post: bool, response_format: bool) -> None:
    class Answer(BaseModel):
        text: str

    def run(side: Side) -> str:
        graph = agent(
            side,
            [],
            tools=None if tools else [],
            pre_model_hook=(lambda state: {}) if pre else None,
            post_model_hook=(lambda state: {}) if post else None,
            response_format=Answer if response_format else None,
        )
        return graph.get_graph().draw_mermaid(with_styles=False)

    engine, oracle = both(run)
    assert engine == oracle


class Reading(BaseModel):
    """A structured answer at module level: the SQL saver restores it by name."""

    temperature: float


def test_structured_response_saved_by_a_saver_attached_later(tmp_path: Any) -> None:
    """A server compiles the agent without a saver and attaches its own with `copy`; the
    builder may also be compiled again: either saver must store the answer's class."""
    from engine.checkpoint.memory import InMemorySaver
    from engine.checkpoint.sql.connect import create_engine
    from engine.checkpoint.sql.migrations import migrate
    from engine.checkpoint.sql.saver import SQLSaver

    url = f"sqlite:///{tmp_path / 'agent.db'}"
    asyncio.run(migrate(url))
    bare = engine_executor.create_react_agent(
        ScriptedModel(structured=Reading(temperature=21)), [], response_format=Reading
    )
    served = bare.copy({"checkpointer": SQLSaver(create_engine(url, pool_per_call=True))})
    again = bare.builder.compile(checkpointer=InMemorySaver())
    for graph in (served, again):
        config: RunnableConfig = {"configurable": {"thread_id": "1"}}
        graph.invoke(ask(), config)
        assert graph.get_state(config).values["structured_response"] == Reading(temperature=21)
