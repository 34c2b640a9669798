"""A webhook receiver for tests: a real HTTP server on a loopback port that records every
call, answers with the statuses it is told to (then 200), and can hang on the first one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.helpers import serving


@dataclass
class Call:
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str = ""
    # Statuses of the first answers, in order; 200 after them.
    statuses: list[int] = field(default_factory=list)
    # Hold the first call unanswered (as a receiver that hangs), until the server stops.
    hang_first: bool = False
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def _hook(self, request: Request) -> Response:
        call = Call({k.lower(): v for k, v in request.headers.items()}, await request.body())
        with self._lock:
            self.calls.append(call)
            index = len(self.calls) - 1
        if index == 0 and self.hang_first:
            await asyncio.sleep(3600)
        status = self.statuses[index] if index < len(self.statuses) else 200
        return JSONResponse({"received": index}, status_code=status)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/hook", self._hook, methods=["POST"])])

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Call]:
        """The calls once there are `count` of them (fails after `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if len(self.calls) >= count:
                    return list(self.calls)
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.calls)} webhook calls, not {count}")
            time.sleep(0.05)


@contextlib.contextmanager
def receiving(**options: Any) -> Iterator[Receiver]:
    """A receiver served at `receiver.url` (its `/hook`) while the block runs."""
    receiver = Receiver(**options)
    # A hanging call is given up a second into the shutdown.
    with serving(receiver.app(), timeout_graceful_shutdown=1) as url:
        receiver.url = f"{url}/hook"
        yield receiver
