"""`from langgraph.utils.runnable import RunnableCallable`: an older path to the
function-as-Runnable that nodes are called through."""

from engine.pregel.runnable import RunnableCallable

__all__ = ["RunnableCallable"]
