"""The engine's version, as LangGraph programs read `langgraph.version.__version__`: the
engine ships in the `threadline` distribution, so that is the version given."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("threadline")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = ""
