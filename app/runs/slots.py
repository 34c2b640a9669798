"""Each user's share of the open streams of this process."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from app.errors import TooManyRequests

# A refused stream may be retried once the client's other streams had time to end.
STREAM_RETRY_AFTER_S = 5


class StreamSlots:
    """Open streams per user in this process; `limit` (0: none) is each user's share."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: Counter[str] = Counter()

    @contextmanager
    def hold(self, owner: str) -> Iterator[Callable[[], None]]:
        """One slot of `owner` for the block, or until the function it gives is called
        (once or more); 429 with Retry-After when all are taken."""
        if self.limit and self.open[owner] >= self.limit:
            raise TooManyRequests(
                f"Too many open streams: at most {self.limit} per user; close one first.",
                retry_after_s=STREAM_RETRY_AFTER_S,
            )
        self.open[owner] += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.open[owner] -= 1
                if not self.open[owner]:
                    del self.open[owner]

        try:
            yield release
        finally:
            release()
