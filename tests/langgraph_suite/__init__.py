"""LangGraph's own test files, downloaded at test time, run against our engine."""
