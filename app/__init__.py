"""Threadline server: the LangGraph Agent Server HTTP API on top of the `engine` package."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("threadline")
except PackageNotFoundError:  # a source tree that was never pip-installed
    __version__ = "0.0.0"
