"""Names the graph reserves: its entry and exit, and tags that change what streams."""

from engine.types import END, START

__all__ = ["END", "PREVIOUS", "RETURN", "START", "TAG_HIDDEN", "TAG_NOSTREAM"]

TAG_NOSTREAM = "nostream"
"""A chat model with this tag streams no tokens in `stream_mode="messages"`."""
TAG_HIDDEN = "langsmith:hidden"
"""A Runnable with this tag is left out of streams and traces."""
PREVIOUS = "__previous__"
"""The channel where an entrypoint keeps what it saved for its next call (`previous`)."""
RETURN = "__return__"
"""The write that saves a `@task` call's result, so a resumed entrypoint does not redo it."""
