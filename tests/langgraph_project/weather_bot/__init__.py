"""A small LangGraph project, written against `langgraph` as its users write them, for
tests/test_langgraph_project.py, which ports it to Threadline as docs/langgraph-projects.md
says (its imports go from `langgraph` to `engine`) and serves it with `threadline serve`."""
