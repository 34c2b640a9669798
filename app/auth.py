"""Who is calling: the authentication modes (THREADLINE_AUTH), users and their API keys.

- `none`: every request is the one local user, `local` (the single-machine default).
- `api_key`: a key made with `threadline users key NAME`, sent as `x-api-key` (what
  langgraph-sdk sends) or as `Authorization: Bearer KEY`. Keys are stored as an HMAC-SHA256
  of their secret under a random per-key salt; the key itself is shown once.
- `jwt`: a signed token, sent the same ways, verified with the configured algorithm only
  (so `alg: none` and algorithm swaps are refused), its expiry, issuer and audience; the
  user is its `sub` claim.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jwt
from sqlalchemy import or_, select

from app.config import Settings
from app.db.database import Database
from app.db.models import ApiKeyRow, UserRow
from app.errors import Unauthorized
from app.limits import UNSTORABLE
from app.services.common import new_id, now

LOCAL_USER = "local"
MODES = ("none", "api_key", "jwt")
JWT_ALGORITHMS = frozenset(
    {"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512"}
)
KEY_SCHEME = "tl"
_USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}")
# Owner columns hold 200 characters: a longer `sub` cannot own anything.
_MAX_USER_ID = 200


class AuthConfigError(RuntimeError):
    """The THREADLINE_AUTH settings cannot work: the server refuses to start."""


class UserError(ValueError):
    """A `threadline users` command that cannot be done, with the reason."""


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: every row a request reads or writes is owned by `user_id`."""

    user_id: str


@dataclass(frozen=True, slots=True)
class GraphUser:
    """The user a run is for, as LangGraph's server hands it to graphs:
    `config["configurable"]["langgraph_auth_user"]` and `runtime.server_info.user`, read
    as attributes or as keys (`user.identity`, `user["identity"]`)."""

    identity: str
    is_authenticated: bool
    permissions: tuple[str, ...] = ()

    @property
    def display_name(self) -> str:
        return self.identity

    def __getitem__(self, key: str) -> Any:
        if key not in ("identity", "is_authenticated", "permissions", "display_name"):
            raise KeyError(key)
        return getattr(self, key)


class Authenticator(Protocol):
    async def authenticate(self, credential: str | None) -> Principal:
        """The caller behind a credential (an API key or a token); 401 if none or bad."""
        ...


class NoAuth:
    """THREADLINE_AUTH=none: one local user, whatever is sent."""

    async def authenticate(self, credential: str | None) -> Principal:
        return Principal(LOCAL_USER)


class ApiKeyAuth:
    """THREADLINE_AUTH=api_key: keys from `threadline users key`, checked in the database
    on every request, so a revoked key stops working at once."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def authenticate(self, credential: str | None) -> Principal:
        if not credential:
            raise Unauthorized("Missing API key: send it as x-api-key or Authorization: Bearer.")
        prefix, secret = _split_key(credential)
        async with self.db.read() as session:
            key = await session.scalar(
                select(ApiKeyRow).where(ApiKeyRow.prefix == prefix, ApiKeyRow.revoked_at.is_(None))
            )
        if key is None or not hmac.compare_digest(key.digest, _digest(key.salt, secret)):
            raise Unauthorized("Invalid API key.")
        return Principal(key.user_id)


class JwtAuth:
    """THREADLINE_AUTH=jwt: tokens signed with the one configured algorithm."""

    def __init__(self, settings: Settings) -> None:
        self.algorithm = settings.jwt_algorithm
        if self.algorithm not in JWT_ALGORITHMS:
            raise AuthConfigError(
                f"THREADLINE_JWT_ALGORITHM={self.algorithm!r}: use one of {sorted(JWT_ALGORITHMS)}."
            )
        self.key = _verification_key(settings, self.algorithm)
        self.issuer = settings.jwt_issuer or None
        self.audience = settings.jwt_audience or None
        self.required = ["exp", "sub", *(["iss"] if self.issuer else [])]

    async def authenticate(self, credential: str | None) -> Principal:
        if not credential:
            raise Unauthorized("Missing token: send it as Authorization: Bearer.")
        try:
            claims: dict[str, Any] = jwt.decode(
                credential,
                self.key,
                algorithms=[self.algorithm],
                issuer=self.issuer,
                audience=self.audience,
                options={"require": self.required},
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"Invalid token: {exc}.") from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not 0 < len(subject) <= _MAX_USER_ID:
            raise Unauthorized(f"Invalid token: `sub` must be 1 to {_MAX_USER_ID} characters.")
        if UNSTORABLE.search(subject):
            raise Unauthorized("Invalid token: `sub` must not contain NUL or lone surrogates.")
        return Principal(subject)


def _verification_key(settings: Settings, algorithm: str) -> Any:
    """The HMAC secret for HS*, else the public key (PEM text or a PEM file's path)."""
    if algorithm.startswith("HS"):
        if len(settings.jwt_secret.encode()) < 32:
            raise AuthConfigError(
                f"THREADLINE_JWT_SECRET must be set, at least 32 bytes, for {algorithm}."
            )
        return settings.jwt_secret
    pem = settings.jwt_public_key
    if not pem:
        raise AuthConfigError(f"THREADLINE_JWT_PUBLIC_KEY must be set for {algorithm}.")
    if not pem.lstrip().startswith("-----BEGIN"):
        try:
            pem = Path(pem).read_text(encoding="utf-8")
        except OSError as exc:
            raise AuthConfigError(f"THREADLINE_JWT_PUBLIC_KEY: cannot read it: {exc}") from None
    try:
        return jwt.get_algorithm_by_name(algorithm).prepare_key(pem)
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        raise AuthConfigError(f"THREADLINE_JWT_PUBLIC_KEY: not a {algorithm} key: {exc}") from None


def check(settings: Settings) -> None:
    """Raise AuthConfigError, before a server starts, when the mode's settings cannot
    work (a JWT algorithm without its key)."""
    if settings.auth == "jwt":
        JwtAuth(settings)


def authenticator(settings: Settings, db: Database) -> Authenticator:
    """The authenticator of the configured mode; AuthConfigError if it cannot work."""
    if settings.auth == "none":
        return NoAuth()
    if settings.auth == "api_key":
        return ApiKeyAuth(db)
    if settings.auth == "jwt":
        return JwtAuth(settings)
    raise AuthConfigError(f"THREADLINE_AUTH={settings.auth!r}: use one of {list(MODES)}.")


# API keys.


def _digest(salt: str, secret: str) -> str:
    return hmac.new(bytes.fromhex(salt), secret.encode(), hashlib.sha256).hexdigest()


def _split_key(credential: str) -> tuple[str, str]:
    """`tl_<prefix>_<secret>` -> (prefix, secret); 401 for anything else."""
    scheme, _, rest = credential.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != KEY_SCHEME or not prefix or not secret:
        raise Unauthorized("Invalid API key.")
    return prefix, secret


async def add_user(db: Database, name: str) -> None:
    """A new user of `api_key` mode; UserError if the name is bad or taken."""
    if not _USER_NAME.fullmatch(name):
        raise UserError(
            f"User name {name!r}: 1 to 200 letters, digits or . _ @ + -, starting with a "
            "letter or digit."
        )
    async with db.write() as session:
        if await session.get(UserRow, name) is not None:
            raise UserError(f"User {name!r} already exists.")
        session.add(UserRow(user_id=name, created_at=now()))


async def issue_key(db: Database, name: str) -> str:
    """A new API key for the user: returned once, stored only as a salted hash."""
    prefix, secret, salt = secrets.token_hex(6), secrets.token_urlsafe(32), secrets.token_hex(16)
    async with db.write() as session:
        if await session.get(UserRow, name) is None:
            raise UserError(f"No user {name!r}: add it with `threadline users add {name}`.")
        session.add(
            ApiKeyRow(
                key_id=new_id(),
                prefix=prefix,
                user_id=name,
                salt=salt,
                digest=_digest(salt, secret),
                created_at=now(),
                revoked_at=None,
            )
        )
    return f"{KEY_SCHEME}_{prefix}_{secret}"


async def revoke_key(db: Database, which: str) -> str:
    """Revoke a key named by its id, its prefix or the whole key; the owner's name."""
    prefix = which.split("_")[1] if which.startswith(f"{KEY_SCHEME}_") else which
    async with db.write() as session:
        key = await session.scalar(
            select(ApiKeyRow).where(
                or_(ApiKeyRow.key_id == which, ApiKeyRow.prefix == prefix),
                ApiKeyRow.revoked_at.is_(None),
            )
        )
        if key is None:
            raise UserError(f"No active API key {which!r}.")
        key.revoked_at = now()
        return key.user_id
