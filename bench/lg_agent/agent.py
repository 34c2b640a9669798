"""The reminder agent's shape written against LangGraph, for the reference server in
bench/compare.py (`langgraph dev` in this folder serves it as `agent`).

    START -> model -> END

The model node is ours (app.models.scripted) behind LangChain's chat model interface, so
LangGraph streams its reply word by word through its own callbacks, as our engine does.
`ask_user` and `tools` are left out and no tools are offered: the benchmark's message
("hello there") never makes the scripted model call a tool, so our agent takes the same
single model step for it.
"""

import re
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import agenerate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langgraph.graph import START, MessagesState, StateGraph

from app.agents.reminders import SYSTEM_PROMPT
from app.models.scripted import ScriptedChatModel
from engine.graph.messages import message_from_dict

# The scripted model streams a reply in these pieces: each word with the spaces before it.
WORD = re.compile(r"\s*\S+")


class ScriptedLangChainModel(BaseChatModel):
    """Our scripted model as a LangChain chat model; messages cross over as their dicts."""

    @property
    def _llm_type(self) -> str:
        return "threadline-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """LangChain requires a sync path; the scripted model is async only."""
        raise NotImplementedError("call the scripted model with ainvoke")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await agenerate_from_stream(self._astream(messages, stop, run_manager))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        ours = [message_from_dict(m.model_dump()) for m in messages]
        reply = await ScriptedChatModel().respond(ours, [])
        for word in WORD.findall(reply.text):
            # LangChain passes each chunk to the callbacks: LangGraph's `messages` stream.
            yield ChatGenerationChunk(message=AIMessageChunk(content=word, id=reply.id))


model = ScriptedLangChainModel()


async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """Like our agent's model node: the system prompt is added per call, never stored."""
    return {"messages": [await model.ainvoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])]}


graph = StateGraph(MessagesState).add_node("model", call_model).add_edge(START, "model").compile()
