"""What the server's background loops say when their work fails and they try again: a
database that went away is one warning when it goes and one line when it is back, rather
than a traceback on every beat of every loop (hundreds a restart); any other failure is
logged with its traceback each time."""

from __future__ import annotations

import logging

from app.errors import database_unavailable


class Retrying:
    """The failures of one loop's work (`doing`: what it was doing), told to `logger`."""

    def __init__(self, logger: logging.Logger, doing: str) -> None:
        self.logger = logger
        self.doing = doing
        self.away = False

    def failed(self, exc: BaseException) -> None:
        """`exc` ended an attempt; the loop tries again."""
        if database_unavailable(exc):
            if not self.away:
                self.away = True
                why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                self.logger.warning(
                    "%s: the database is unavailable (%s); trying again", self.doing, why
                )
            return
        self.logger.error("%s failed; trying again", self.doing, exc_info=exc)

    def succeeded(self) -> None:
        """An attempt went through: the database is back, if it was away."""
        if self.away:
            self.away = False
            self.logger.info("%s: the database is back", self.doing)
