"""Authentication modes: API keys (hashed, revocable, made by the CLI) and JWTs (expiry,
issuer, audience, signature and algorithm checked; `alg: none` refused)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from langgraph_sdk import get_client
from sqlalchemy import select

from app import auth, cli
from app.config import Settings
from app.db.database import Database
from app.db.models import ApiKeyRow
from tests.security.conftest import (
    JWT_AUDIENCE,
    JWT_SECRET,
    USERS,
    SecureServer,
    StartSecure,
    add_users,
    token,
)

# Authentication does not depend on the dialect: SQLite is enough here.
on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


async def status(server: SecureServer, headers: dict[str, str]) -> int:
    """The status of a request that needs a user."""
    async with httpx.AsyncClient(base_url=server.url, headers=headers) as http:
        return (await http.post("/threads/count", json={})).status_code


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


@on_sqlite
async def test_api_keys(start_secure: StartSecure) -> None:
    server = await start_secure("api_key")
    [key] = (await add_users(server.database_url, ("carol",))).values()
    assert await status(server, {"x-api-key": key}) == 200
    assert await status(server, bearer(key)) == 200
    prefix, secret = key.split("_", 2)[1:]
    for bad in ("", "nonsense", f"tl_{prefix}_", f"tl_{prefix}_{secret}x", f"tl_ffff_{secret}"):
        assert await status(server, {"x-api-key": bad}) == 401, bad
    assert await status(server, {}) == 401

    # Stored as a salted hash only: the secret is nowhere in the table.
    db = Database(server.database_url)
    try:
        async with db.read() as session:
            rows = list(await session.scalars(select(ApiKeyRow)))
        assert len(rows) == len(USERS) + 1
        for row in rows:
            assert secret not in (row.key_id, row.prefix, row.salt, row.digest)
        second = await auth.issue_key(db, "carol")
        assert await auth.revoke_key(db, key) == "carol"
        with pytest.raises(auth.UserError):
            await auth.revoke_key(db, prefix)
    finally:
        await db.close()
    # Revoked at once; the user's other key still works.
    assert await status(server, {"x-api-key": key}) == 401
    assert await status(server, {"x-api-key": second}) == 200


@on_sqlite
async def test_the_sdk_sends_its_api_key(start_secure: StartSecure) -> None:
    server = await start_secure("api_key")
    key = server.headers["alice"]["x-api-key"]
    client = get_client(url=server.url, api_key=key)
    thread = await client.threads.create()
    values = await client.runs.wait(
        thread["thread_id"], "echo", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert values["messages"][-1]["content"] == "You said: hi"
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await get_client(url=server.url, api_key=None).threads.get(thread["thread_id"])
    assert refused.value.response.status_code == 401


def test_users_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADLINE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")
    # The process-wide log handler would outlive the captured stderr of this test.
    monkeypatch.setattr(cli.logs, "configure", lambda settings: None)
    assert cli.main(["users", "add", "dave"]) == 0
    assert cli.main(["users", "add", "dave"]) == 1
    assert cli.main(["users", "add", "no spaces"]) == 1
    assert cli.main(["users", "key", "erin"]) == 1
    capsys.readouterr()
    assert cli.main(["users", "key", "dave"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("tl_")
    assert cli.main(["users", "revoke", key.split("_")[1]]) == 0
    assert "dave" in capsys.readouterr().out
    assert cli.main(["users", "revoke", key]) == 1
    assert "No active API key" in capsys.readouterr().err


def expired() -> dict[str, Any]:
    return {"exp": int(time.time()) - 60}


JWT_REFUSED = {
    "expired": lambda: token("alice", **expired()),
    "not yet valid": lambda: token("alice", nbf=int(time.time()) + 600),
    "wrong audience": lambda: token("alice", aud="someone-else"),
    "no audience": lambda: token("alice", aud=None),
    "wrong issuer": lambda: token("alice", iss="https://evil.test"),
    "no issuer": lambda: token("alice", iss=None),
    "no expiry": lambda: token("alice", exp=None),
    "no subject": lambda: token(None),
    "empty subject": lambda: token(""),
    "subject too long": lambda: token("x" * 201),
    "subject with NUL": lambda: token("a\x00b"),
    "subject with a lone surrogate": lambda: token("a\ud800b"),
    "wrong signature": lambda: token("alice", key=JWT_SECRET[::-1]),
    "another algorithm": lambda: token("alice", algorithm="HS512"),
    "alg none": lambda: token("alice", key=None, algorithm="none"),
    "not a token": lambda: "not.a.token",
    "tampered": lambda: token("alice")[:-4] + "AAAA",
}


@on_sqlite
async def test_jwt(start_secure: StartSecure) -> None:
    server = await start_secure("jwt")
    assert await status(server, bearer(token("alice"))) == 200
    assert await status(server, {"x-api-key": token("alice")}) == 200
    assert await status(server, {}) == 401
    for name, make in JWT_REFUSED.items():
        assert await status(server, bearer(make())) == 401, name
    async with httpx.AsyncClient(base_url=server.url, headers=bearer(token("alice"))) as http:
        answer = await http.post("/threads/count", json={}, headers=bearer(token("a", **expired())))
    assert answer.status_code == 401 and "expired" in answer.json()["detail"]


def hmac_signed(claims: dict[str, Any], secret: bytes) -> str:
    """An HS256 token signed by hand: PyJWT rightly refuses to sign with a PEM key."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = {"alg": "HS256", "typ": "JWT"}
    signed = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signed.encode(), hashlib.sha256).digest()
    return f"{signed}.{b64(signature)}"


def rsa_keys() -> tuple[Any, str]:
    """A private key, and its public key as PEM."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public.decode()


@on_sqlite
async def test_jwt_rs256(start_secure: StartSecure, tmp_path: Path) -> None:
    private, public = rsa_keys()
    key_file = tmp_path / "public.pem"
    key_file.write_text(public)
    server = await start_secure("jwt", jwt_algorithm="RS256", jwt_public_key=str(key_file))
    assert await status(server, bearer(token("alice", key=private, algorithm="RS256"))) == 200
    other, _ = rsa_keys()
    assert await status(server, bearer(token("alice", key=other, algorithm="RS256"))) == 401
    # The public key used as an HMAC secret (the algorithm confusion attack) is refused.
    claims = {"sub": "alice", "exp": int(time.time()) + 60, "aud": JWT_AUDIENCE}
    assert await status(server, bearer(hmac_signed(claims, public.encode()))) == 401
    assert await status(server, bearer(token("alice"))) == 401


@pytest.mark.parametrize(
    "settings",
    [
        Settings.model_construct(auth="passwords"),  # Settings() refuses it
        Settings(auth="jwt", jwt_secret="too short"),
        Settings(auth="jwt", jwt_algorithm="none", jwt_secret=JWT_SECRET),
        Settings(auth="jwt", jwt_algorithm="RS256"),
        Settings(auth="jwt", jwt_algorithm="RS256", jwt_public_key="/no/such/key.pem"),
        Settings(auth="jwt", jwt_algorithm="RS256", jwt_public_key="-----BEGIN nonsense"),
    ],
    ids=["unknown mode", "short secret", "alg none", "no key", "missing file", "bad pem"],
)
def test_auth_settings_that_cannot_work_stop_the_server(settings: Settings) -> None:
    with pytest.raises(auth.AuthConfigError):
        auth.authenticator(settings, Database("sqlite+aiosqlite://"))
