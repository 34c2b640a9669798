"""Webhooks: when a run with a `webhook` ends, POST LangGraph's payload to it.

The payload is the run (its fields, `status`, `run_started_at`, `run_ended_at`) with the
thread's final `values`, `error` (the message) when it failed, and `webhook_sent_at`. It
is recorded in `webhook_deliveries` in the transaction that records the run's outcome,
so a crash cannot lose it, then sent by the process at once, in the background: a run
never waits for its webhook, and a slow receiver holds up no other delivery.

Delivery is at least once. Each attempt has a timeout; a connection error, a timeout, a
408, 425, 429 or 5xx answer is retried with backoff (doubling, at most MAX_BACKOFF_S
apart) until the attempts run out; any other answer but a 2xx ends it as failed. An
attempt in flight holds the delivery for twice the timeout: if its process dies, another
process (or this one, restarted) sends it again. Every attempt carries the same
`X-Threadline-Delivery` id, for receivers to deduplicate, and, with a secret set,
`X-Threadline-Signature: sha256=<hex HMAC-SHA256 of the body>`.

Server-side request forgery: a webhook may not call a private, loopback, link-local or
otherwise non-public address unless THREADLINE_WEBHOOK_ALLOW names its host or a network
holding it. The URL is checked when the run is created (a 422 says why) and again at
each attempt, where the connection goes to the address that was checked (a name that
resolves elsewhere by then cannot redirect it); redirects are not followed and proxy
variables are ignored. A URL starting with `/` calls this server's own app, in process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.types import ASGIApp

from app import __version__
from app.config import Settings
from app.db.database import Database
from app.db.models import RunRow, WebhookDeliveryRow
from app.errors import Invalid
from app.jsonable import to_json
from app.outages import Retrying
from app.services.common import error_message, new_id, now
from app.services.runs.kwargs import shown_kwargs

log = logging.getLogger(__name__)
MAX_URL_LENGTH = 2048
MAX_BACKOFF_S = 600.0
# Deliveries one process sends at once.
MAX_IN_FLIGHT = 32
# How often a process looks for deliveries that no process is sending (their sender
# died), when it has none of its own to retry sooner.
IDLE_POLL_S = 5.0
# A delivery due now that another process is claiming is left to it this long.
MIN_PAUSE_S = 0.05
RESOLVE_TIMEOUT_S = 5.0
RETRIED_STATUSES = frozenset({408, 425, 429})
DELIVERY_HEADER = "X-Threadline-Delivery"
SIGNATURE_HEADER = "X-Threadline-Signature"
# The host name of this server's own app, for webhooks given as a path.
OWN_APP_BASE = "http://threadline.internal"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(Exception):
    """The webhook's host may not be called (checked again at each attempt)."""


@dataclass(frozen=True)
class Guard:
    """Which hosts a webhook may call: public addresses, and what THREADLINE_WEBHOOK_ALLOW
    names (host names, addresses or CIDR networks)."""

    hosts: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def of(cls, allowed: Sequence[str]) -> Guard:
        hosts: set[str] = set()
        networks = []
        for entry in allowed:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows(self, address: Address) -> bool:
        """A public address, or one THREADLINE_WEBHOOK_ALLOW names; an IPv6 address that
        embeds an IPv4 one is judged by where it leads."""
        embedded = _embedded(address) if isinstance(address, ipaddress.IPv6Address) else None
        named = [a for a in (address, embedded) if a is not None]
        if any(a in network for a in named for network in self.networks):
            return True
        judged = embedded or address
        return judged.is_global and not judged.is_multicast

    async def addresses(self, host: str, port: int) -> list[Address]:
        """The addresses to connect to for `host` (all of them allowed), or none when the
        host itself is allowed by name. Raises WebhookRefused."""
        if self.allows_host(host):
            return []
        try:
            found = [ipaddress.ip_address(host)]
        except ValueError:
            found = await _resolve(host, port)
        refused = [a for a in found if not self.allows(a)]
        if refused:
            raise WebhookRefused(
                f"the webhook host {host!r} is a private or loopback address ({refused[0]}); "
                "allow it with THREADLINE_WEBHOOK_ALLOW"
            )
        return found


# IPv6 prefixes whose last 32 bits are an IPv4 address that a translating gateway
# (NAT64, SIIT) or the host itself (IPv4-compatible addresses) reaches.
_TRANSLATED = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in ("64:ff9b::/96", "64:ff9b:1::/48", "::/96", "::ffff:0:0:0/96", "::ffff:0:0/96")
)


def _embedded(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one leads to, if it embeds one (a 6to4 address carries
    it in its second and third groups): a webhook to `[64:ff9b::7f00:1]` goes to
    127.0.0.1 through a NAT64 gateway."""
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in prefix for prefix in _TRANSLATED):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _ascii(url: httpx.URL) -> str:
    """A URL's host as DNS and THREADLINE_WEBHOOK_ALLOW spell it (`xn--bcher-kva.de`
    for `bücher.de`)."""
    return url.raw_host.decode("ascii")


def _shown(url: str) -> str:
    """A webhook's URL as a log line shows it: without the password it may carry."""
    parsed = httpx.URL(url)
    hidden = parsed.copy_with(username=parsed.username, password="***")
    return str(hidden) if parsed.password else url


async def _resolve(host: str, port: int) -> list[Address]:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT_S):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError) as exc:
        raise WebhookRefused(f"the webhook host {host!r} cannot be resolved ({exc})") from None
    # The scope of a link-local IPv6 address ("fe80::1%eth0") is not part of the address.
    found = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
    if not found:
        raise WebhookRefused(f"the webhook host {host!r} has no address")
    return sorted(found, key=lambda a: (a.version, int(a)))


class GuardedTransport(httpx.AsyncBaseTransport):
    """Connects only to addresses the guard allows, to the very address it checked: the
    request goes to that address, with the host name kept in `Host` and for TLS."""

    def __init__(self, guard: Guard, inner: httpx.AsyncBaseTransport) -> None:
        self.guard = guard
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        addresses = await self.guard.addresses(_ascii(url), url.port or _default_port(url))
        if addresses:
            request.url = url.copy_with(host=str(addresses[0]))
            if url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": url.host}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


def signature(secret: bytes, body: bytes) -> str:
    """The signature header's value: what a receiver compares (in constant time) with
    the HMAC-SHA256 of the body it got, keyed with the shared secret."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class _Claimed:
    delivery_id: str
    url: str
    body: str
    attempts: int


class Webhooks:
    """Checks run webhooks, records their deliveries with run outcomes, and sends them."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.guard = Guard.of(settings.webhook_allow)
        self.secret = settings.webhook_secret.encode()
        self.timeout_s = settings.webhook_timeout_s
        self.attempts = max(1, settings.webhook_attempts)
        self.backoff_s = settings.webhook_backoff_s
        # Clients of public hosts (guarded) and of this server's app, while sending.
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._sending: set[asyncio.Task[None]] = set()
        self._wakeup = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None

    # Checking and recording.

    async def check(self, url: str | None) -> None:
        """422 when a run's `webhook` cannot be called: not an http(s) URL or a path, or a
        host that is not public and not allowed."""
        if url is None:
            return
        if len(url) > MAX_URL_LENGTH:
            raise Invalid(f"webhook: at most {MAX_URL_LENGTH} characters.")
        if url.startswith("/"):
            if url.startswith("//"):
                raise Invalid("webhook: a path must start with a single '/'.")
            return
        try:
            parsed = httpx.URL(url)
            host = parsed.host  # a name IDNA refuses (`xn--`) fails here
        except (httpx.InvalidURL, UnicodeError) as exc:
            raise Invalid(f"webhook: not a URL ({exc}).") from None
        if parsed.scheme not in ("http", "https") or not host:
            raise Invalid("webhook: an http or https URL with a host, or a path of this server.")
        if parsed.port is not None and not 0 < parsed.port < 65536:
            raise Invalid(f"webhook: {parsed.port} is not a port (1 to 65535).")
        try:
            await self.guard.addresses(_ascii(parsed), parsed.port or _default_port(parsed))
        except WebhookRefused as exc:
            raise Invalid(f"webhook: {exc}.") from None

    async def record(
        self,
        session: AsyncSession,
        run: RunRow,
        status: str,
        values: Any,
        error: BaseException | None,
    ) -> bool:
        """Record the webhook call of `run`, which ended with `status`, in `session` (the
        transaction recording its outcome). False when the run has no webhook."""
        url = (run.kwargs or {}).get("webhook")
        if not url:
            return False
        ended = now()
        payload: dict[str, Any] = {
            "run_id": run.run_id,
            "thread_id": run.thread_id,
            "assistant_id": run.assistant_id,
            "created_at": run.created_at.isoformat(),
            "updated_at": ended.isoformat(),
            "status": status,
            "metadata": run.metadata_ or {},
            "multitask_strategy": run.multitask_strategy,
            "kwargs": shown_kwargs(run.kwargs),
            # A run is taken (started, or by a retry, continued) when its row last changed.
            "run_started_at": run.updated_at.isoformat(),
            "run_ended_at": ended.isoformat(),
            "values": values,
        }
        if error is not None:  # as a run's `__error__` and LangGraph's webhook give it
            payload["error"] = {"error": type(error).__name__, "message": error_message(error)}
        await session.execute(
            insert(WebhookDeliveryRow.__table__).values(
                delivery_id=new_id(),
                run_id=run.run_id,
                url=url,
                body=to_json(payload),
                status="pending",
                attempts=0,
                next_attempt_at=ended,
                created_at=ended,
                updated_at=ended,
            )
        )
        return True

    def wake(self) -> None:
        """Send what is due now (a delivery was just recorded here)."""
        self._wakeup.set()

    # Sending.

    def start(self, own_app: ASGIApp) -> None:
        """Send deliveries from this process; `own_app` serves webhooks given as a path."""
        external = GuardedTransport(self.guard, httpx.AsyncHTTPTransport(trust_env=False))
        self._clients = {
            "external": httpx.AsyncClient(transport=external, trust_env=False),
            # A route that raises answers 500, as it would over the network.
            "own": httpx.AsyncClient(
                transport=httpx.ASGITransport(app=own_app, raise_app_exceptions=False),
                base_url=OWN_APP_BASE,
            ),
        }
        self._loop = asyncio.create_task(self._send_forever(), name="threadline: webhooks")

    async def stop(self) -> None:
        """Stop sending; deliveries in flight are sent again later (by any process)."""
        tasks = [*([self._loop] if self._loop else []), *self._sending]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in self._clients.values():
            await client.aclose()
        self._loop, self._clients = None, {}

    async def _send_forever(self) -> None:
        """Claim what is due while there is room, then sleep until the next delivery is
        due (or a wake-up). Reads come first: a write every few seconds on SQLite would
        queue behind (and hold up) the saves of runs."""
        retrying = Retrying(log, "claiming webhook deliveries")
        while True:
            self._wakeup.clear()
            pause = IDLE_POLL_S
            try:
                room = MAX_IN_FLIGHT - len(self._sending)
                if room > 0 and await self._until_next_due() == 0:
                    for delivery in await self._claim(room):
                        task = asyncio.create_task(self._send(delivery), name="threadline: webhook")
                        self._sending.add(task)
                        task.add_done_callback(self._sent)
                if len(self._sending) < MAX_IN_FLIGHT:  # else a send that ends wakes it
                    pause = max(await self._until_next_due(), MIN_PAUSE_S)
            except Exception as exc:
                retrying.failed(exc)
            else:
                retrying.succeeded()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), pause)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        if len(self._sending) == MAX_IN_FLIGHT - 1:
            self.wake()  # a place came free

    async def _claim(self, room: int) -> list[_Claimed]:
        stamp = now()
        chosen = (
            select(WebhookDeliveryRow.delivery_id)
            .where(
                WebhookDeliveryRow.status == "pending", WebhookDeliveryRow.next_attempt_at <= stamp
            )
            .order_by(WebhookDeliveryRow.next_attempt_at)
            .limit(room)
        )
        if self.db.dialect == "postgresql":
            chosen = chosen.with_for_update(skip_locked=True)
        async with self.db.write() as session:
            rows = await session.execute(
                update(WebhookDeliveryRow)
                .where(
                    WebhookDeliveryRow.delivery_id.in_(chosen),
                    WebhookDeliveryRow.status == "pending",
                    WebhookDeliveryRow.next_attempt_at <= stamp,
                )
                .values(
                    attempts=WebhookDeliveryRow.attempts + 1,
                    next_attempt_at=stamp + timedelta(seconds=2 * self.timeout_s),
                    updated_at=stamp,
                )
                .returning(
                    WebhookDeliveryRow.delivery_id,
                    WebhookDeliveryRow.url,
                    WebhookDeliveryRow.body,
                    WebhookDeliveryRow.attempts,
                )
                .execution_options(synchronize_session=False)
            )
            return [_Claimed(*row) for row in rows]

    async def _until_next_due(self) -> float:
        """Seconds until the next pending delivery is due, at most IDLE_POLL_S."""
        async with self.db.read() as session:
            due: datetime | None = await session.scalar(
                select(func.min(WebhookDeliveryRow.next_attempt_at)).where(
                    WebhookDeliveryRow.status == "pending"
                )
            )
        if due is None:
            return IDLE_POLL_S
        return min(max((due - now()).total_seconds(), 0.0), IDLE_POLL_S)

    async def _send(self, delivery: _Claimed) -> None:
        payload = json.loads(delivery.body)
        payload["webhook_sent_at"] = now().isoformat()
        content = to_json(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"threadline/{__version__}",
            DELIVERY_HEADER: delivery.delivery_id,
            "X-Threadline-Attempt": str(delivery.attempts),
        }
        if self.secret:
            headers[SIGNATURE_HEADER] = signature(self.secret, content)
        client = self._clients["own" if delivery.url.startswith("/") else "external"]
        retry = True
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await client.post(delivery.url, content=content, headers=headers)
        except WebhookRefused as exc:
            problem, retry = str(exc), False
        except (httpx.HTTPError, OSError, TimeoutError) as exc:
            problem = f"{type(exc).__name__}: {exc}".rstrip(": ")
        else:
            if response.is_success:
                await self._settle(delivery, "delivered", None)
                return
            problem = f"HTTP {response.status_code}"
            code = response.status_code
            retry = code in RETRIED_STATUSES or code >= 500
        if retry and delivery.attempts < self.attempts:
            pause = min(self.backoff_s * 2 ** (delivery.attempts - 1), MAX_BACKOFF_S)
            log.info(
                "webhook %s: attempt %d failed (%s); retrying in %gs",
                delivery.delivery_id,
                delivery.attempts,
                problem,
                pause,
            )
            await self._settle(delivery, "pending", problem, retry_in_s=pause)
        else:
            log.warning(
                "webhook %s to %s failed after %d attempt(s): %s",
                delivery.delivery_id,
                _shown(delivery.url),
                delivery.attempts,
                problem,
            )
            await self._settle(delivery, "failed", problem)

    async def _settle(
        self, delivery: _Claimed, status: str, problem: str | None, retry_in_s: float = 0.0
    ) -> None:
        """Record an attempt's outcome, if no other sender took the delivery since."""
        stamp = now()
        changes: dict[str, Any] = {"status": status, "last_error": problem, "updated_at": stamp}
        if status == "pending":
            changes["next_attempt_at"] = stamp + timedelta(seconds=retry_in_s)
        else:
            changes["body"] = None
        async with self.db.write() as session:
            await session.execute(
                update(WebhookDeliveryRow)
                .where(
                    WebhookDeliveryRow.delivery_id == delivery.delivery_id,
                    WebhookDeliveryRow.attempts == delivery.attempts,
                    WebhookDeliveryRow.status == "pending",
                )
                .values(**changes)
                .execution_options(synchronize_session=False)
            )
        if status == "pending":
            self.wake()  # the loop sleeps until the next due delivery: this one, maybe
