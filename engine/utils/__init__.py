"""LangGraph's older utility import paths (`langgraph.utils.config`,
`langgraph.utils.runnable`), kept so programs that still use them port."""
